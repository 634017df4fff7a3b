// Portal-wide Plotly settings, loaded right after plotly.min.js (templates/_plotly.html) so
// every chart on every page gets them, whoever calls Plotly.react:
// - no Plotly logo and no "Share chart..." cloud button: that uploads to Plotly Cloud, which
//   the CSP (connect-src 'self') forbids and the portal never offers — a button going nowhere;
// - "Download plot as a PNG" exports *this* chart: the file is named after the page and the
//   chart ("dashboards-utilization.png", not "overview.png" for every chart of the page), and
//   the image carries the chart's title. Why: the portal lifts each title into an HTML heading
//   above the chart (units.js liftTitle) so the mode bar never covers it, which left exported
//   images untitled. The export draws the title back in; the page's chart is not touched.
//   img-src allows blob:/data:, which the export uses.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") return;
  const script = document.currentScript;
  const label = (script && script.dataset.pngLabel) || "Download plot as a PNG";

  function slug(text) {
    return (text || "").trim().toLowerCase()
      .replace(/[^a-z0-9\u4e00-\u9fff]+/g, "-").replace(/^-+|-+$/g, "");
  }

  const page = slug(document.title.split("·")[0]) || "chart";

  // The chart's own name: the heading liftTitle put above it, else its accessible label,
  // else the title still in its layout, else its data key.
  function chartTitle(gd) {
    const heading = gd.previousElementSibling;
    if (heading && heading.classList.contains("chart-title") && heading.textContent.trim()) {
      return heading.textContent.trim();
    }
    const layoutTitle = gd.layout && gd.layout.title;
    const text = layoutTitle && (layoutTitle.text || (typeof layoutTitle === "string" ? layoutTitle : ""));
    return (gd.getAttribute("aria-label") || text || gd.dataset.chartKey || "").trim();
  }

  function exportName(gd) {
    const own = slug(chartTitle(gd));
    return own ? page + "-" + own : page;
  }

  function exportPng(gd) {
    const title = chartTitle(gd);
    const margin = Object.assign({}, gd.layout.margin || {});
    margin.t = Math.max(margin.t || 0, 60);
    const layout = Object.assign({}, gd.layout, {
      title: { text: title, x: 0.02, xanchor: "left" },
      margin: margin,
    });
    const size = gd._fullLayout || {};
    return Plotly.toImage(
      { data: gd.data, layout: layout },
      { format: "png", width: size.width || 900, height: size.height || 450 },
    ).then(function (url) {
      const link = document.createElement("a");
      link.href = url;
      link.download = exportName(gd) + ".png";
      link.hidden = true;
      document.body.appendChild(link);
      link.click();
      link.remove();
      return link.download;
    });
  }

  Plotly.setPlotConfig({
    displaylogo: false,
    showSendToCloud: false,
    modeBarButtonsToRemove: ["sendChartToCloud", "toImage"],
    modeBarButtonsToAdd: [
      { name: "portalPng", title: label, icon: Plotly.Icons.camera, click: exportPng },
    ],
  });
  window.portalPlotly = { exportName: exportName, exportPng: exportPng, chartTitle: chartTitle };
})();
