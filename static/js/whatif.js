// Polls a what-if run's fragment every 2 s while it is queued or running, swaps it in place
// (no full reload) and draws the charts once the result is there.
(function () {
  const body = document.getElementById("whatif-body");
  if (!body) return;
  const url = body.dataset.refreshUrl;
  function active() {
    const state = body.querySelector("[data-status]");
    return state && (state.dataset.status === "queued" || state.dataset.status === "running");
  }
  const timer = setInterval(async () => {
    if (!active()) { clearInterval(timer); return; }
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) return;
      body.innerHTML = await response.text();
      if (window.portalFigures) window.portalFigures.render(body);
    } catch (err) {
      // Keep the last good view; the next tick retries.
    }
  }, 2000);
})();
