// Refreshes the status page body in place every 5 s (no full reload, no inline script for CSP).
(function () {
  const body = document.getElementById("status-body");
  if (!body) return;
  const url = body.dataset.refreshUrl;
  setInterval(async () => {
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (response.ok) body.innerHTML = await response.text();
    } catch (err) {
      // Keep the last good view; the next tick retries.
    }
  }, 5000);
})();
