// The report's Print button (no inline handlers: the CSP forbids them).
(function () {
  document.querySelectorAll("[data-print]").forEach(function (button) {
    button.addEventListener("click", function () { window.print(); });
  });
})();
