// Draws the plan page's migration timeline (rollout/selectors_timeline.py builds the figure,
// the page carries it in a json_script element: no inline script under the CSP). The figure's
// title is lifted into a heading above the chart so the mode bar never covers it.
(function () {
  "use strict";

  function draw() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("[data-timeline-figure]").forEach(function (el) {
      const source = document.getElementById(el.dataset.timelineFigure);
      if (!source) return;
      const fig = JSON.parse(source.textContent);
      let layout = window.portalUnits ? window.portalUnits.liftTitle(el, fig.layout) : fig.layout;
      // A phone-width chart keeps its plot area: narrower margins and a smaller legend.
      if (el.clientWidth < 600) {
        layout = Object.assign({}, layout, {
          margin: Object.assign({}, layout.margin, { l: 44, r: 8 }),
          legend: Object.assign({}, layout.legend, { font: { size: 10 } }),
        });
      }
      Plotly.react(el, fig.data, layout, { responsive: true, displaylogo: false });
    });
  }

  document.addEventListener("DOMContentLoaded", draw);
})();
