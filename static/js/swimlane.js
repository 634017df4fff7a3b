// Draws the card page's holder swimlane: the element with data-swimlane="<id of a json_script
// block>" gets the figure built by dashboards/payloads/card_swimlane.py (bars on a date axis,
// one lane per attribution source). Drawn once when the page loads.
(function () {
  function start() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("[data-swimlane]").forEach(function (el) {
      const source = document.getElementById(el.dataset.swimlane);
      if (!source) return;
      const fig = JSON.parse(source.textContent);
      Plotly.react(el, fig.data, fig.layout, { responsive: true, displaylogo: false });
    });
  }
  document.addEventListener("DOMContentLoaded", start);
})();
