// Draws the network page's fabric graph: the element with data-fabric="<id of a json_script
// block>" gets the figure built by dashboards/payloads/fabric.py. The plot keeps equal x/y
// scales (the rack circle stays round), so its height follows its width, up to a cap.
(function () {
  function draw(el, fig) {
    const width = el.clientWidth || 600;
    const layout = Object.assign({}, fig.layout, {
      autosize: true,
      // The legend sits under the plot: narrow screens give it more rows.
      height: Math.round(Math.min(width, 720) + (width < 600 ? 170 : 90)),
    });
    Plotly.react(el, fig.data, layout, { responsive: true, displaylogo: false });
  }

  function start() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("[data-fabric]").forEach(function (el) {
      const source = document.getElementById(el.dataset.fabric);
      if (!source) return;
      const fig = JSON.parse(source.textContent);
      draw(el, fig);
      let pending = null;
      window.addEventListener("resize", function () {
        clearTimeout(pending);
        pending = setTimeout(function () { draw(el, fig); }, 150);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
