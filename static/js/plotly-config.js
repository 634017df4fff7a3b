// Portal-wide Plotly settings, loaded right after plotly.min.js (templates/_plotly.html) so
// every chart on every page gets them, whoever calls Plotly.react:
// - no Plotly logo and no "Share chart..." cloud button: that uploads to Plotly Cloud, which
//   the CSP (connect-src 'self') forbids and the portal never offers — a button going nowhere;
// - "Download plot as a png" stays (img-src allows blob:, which its export uses), named after
//   the page so downloads are told apart.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") return;
  const slug = (document.title.split("·")[0] || "chart").trim().toLowerCase()
    .replace(/[^a-z0-9\u4e00-\u9fff]+/g, "-").replace(/^-+|-+$/g, "") || "chart";
  Plotly.setPlotConfig({
    displaylogo: false,
    showSendToCloud: false,
    modeBarButtonsToRemove: ["sendChartToCloud"],
    toImageButtonOptions: { format: "png", filename: slug },
  });
})();
