// Readable numbers in the browser, the same rules as cluster_portal/web/units.py:
// durations in ms / s / min / h, bytes with IEC prefixes, bytes/s and watts with SI prefixes,
// whole numbers whole, grouping per the page's language. Also lifts a Plotly figure's title
// into a heading above the chart so the mode bar never covers it.
(function () {
  "use strict";
  const lang = document.documentElement.lang || undefined;
  const SI = ["", "k", "M", "G", "T", "P", "E"];
  const IEC = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

  function number(value, digits) {
    if (typeof value !== "number" || !Number.isFinite(value)) return "—";
    if (Number.isInteger(value)) return value.toLocaleString(lang);
    const magnitude = value === 0 ? 1 : Math.floor(Math.log10(Math.abs(value))) + 1;
    const decimals = Math.max((digits || 3) - magnitude, 0);
    return value.toLocaleString(lang, { maximumFractionDigits: decimals });
  }

  function prefixed(value, symbol, base, prefixes) {
    let scaled = value;
    let i = 0;
    while (Math.abs(scaled) >= base && i < prefixes.length - 1) { scaled /= base; i += 1; }
    return number(scaled) + " " + prefixes[i] + symbol;
  }

  function duration(s) {
    const size = Math.abs(s);
    if (size === 0) return "0 s";
    if (size < 1e-3) return number(s * 1e6) + " µs";
    if (size < 1) return number(s * 1e3) + " ms";
    if (size < 120) return number(s) + " s";
    if (size < 7200) return number(s / 60, 2) + " min";
    if (size < 172800) return number(s / 3600, 2) + " h";
    return number(s / 86400, 2) + " d";
  }

  function format(value, unit) {
    if (value === null || value === undefined) return "—";
    if (typeof value !== "number") return String(value);
    if (!Number.isFinite(value)) return "—";
    switch (unit) {
      case "ratio": return number(value * 100, 3) + "%";
      case "seconds": return duration(value);
      case "milliseconds": return duration(value / 1000);
      case "bytes": return prefixed(value, "B", 1024, IEC);
      case "bytes_per_second": return prefixed(value, "B/s", 1000, SI);
      case "watts": return prefixed(value, "W", 1000, SI);
      case "celsius": return Math.round(value).toLocaleString(lang) + " °C";
      default: return number(value);
    }
  }

  function decode(text) {
    // Chart titles arrive HTML-escaped for Plotly; DOMParser reads entities without running anything.
    return new DOMParser().parseFromString(String(text), "text/html").documentElement.textContent;
  }

  // Moves layout.title into a heading before the chart; returns the layout without it.
  function liftTitle(el, layout) {
    const text = layout && layout.title && (layout.title.text || layout.title);
    if (!text) return layout;
    let heading = el.previousElementSibling;
    if (!heading || !heading.classList.contains("chart-title")) {
      heading = document.createElement("h3");
      heading.className = "chart-title";
      el.before(heading);
    }
    heading.textContent = decode(text);
    const out = Object.assign({}, layout);
    delete out.title;
    out.margin = Object.assign({}, layout.margin || {}, { t: 32 });
    return out;
  }

  window.portalUnits = { number: number, duration: duration, format: format, liftTitle: liftTitle };
})();
