// Renders every element with data-figure="<id of a json_script block>" as a Plotly chart.
// Called again after live refreshes replace a fragment (window.portalFigures.render(root)).
(function () {
  function render(root) {
    if (typeof Plotly === "undefined") return;
    (root || document).querySelectorAll("[data-figure]").forEach(function (el) {
      const source = document.getElementById(el.dataset.figure);
      if (!source) return;
      const fig = JSON.parse(source.textContent);
      const layout = window.portalUnits ? window.portalUnits.liftTitle(el, fig.layout) : fig.layout;
      Plotly.react(el, fig.data, layout, { responsive: true, displaylogo: false });
    });
  }
  window.portalFigures = { render: render };
  document.addEventListener("DOMContentLoaded", function () { render(document); });
})();
