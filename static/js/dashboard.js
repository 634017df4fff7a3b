// Dashboard pages: fetch the page's data endpoint, render every chart with Plotly.react,
// fill the KPI tiles and tables, refresh every 15 s without a reload, and re-fetch when the
// time range changes (the range stays in the URL query). No inline script, for the CSP.
(function () {
  "use strict";
  const root = document.querySelector("[data-dashboard]");
  if (!root) return;
  const REFRESH_MS = 15000;
  const RANGE_KEYS = ["range", "start", "end", "cluster", "kind"];
  const errorBox = root.querySelector("[data-error]");
  // Numbers in tables follow the page's language, not the browser's default locale.
  const PAGE_LANG = document.documentElement.lang || undefined;
  let timer = null;
  let generation = 0;

  function pageQuery() {
    const here = new URLSearchParams(window.location.search);
    const out = new URLSearchParams();
    RANGE_KEYS.forEach((key) => { if (here.get(key)) out.set(key, here.get(key)); });
    return out;
  }

  function dataUrl(extra) {
    const query = pageQuery();
    Object.entries(extra || {}).forEach(([k, v]) => query.set(k, v));
    const text = query.toString();
    return root.dataset.url + (text ? "?" + text : "");
  }

  function setCsvLinks() {
    root.querySelectorAll("[data-csv-table]").forEach((link) => {
      link.href = dataUrl({ format: "csv", table: link.dataset.csvTable });
      link.setAttribute("download", "");
    });
    root.querySelectorAll("a[data-csv-static]").forEach((link) => link.setAttribute("download", ""));
  }

  function renderKpis(kpis) {
    const box = root.querySelector("[data-kpis]");
    if (!box || !kpis) return;
    box.replaceChildren(...kpis.map((item) => {
      const tile = document.createElement("div");
      tile.className = "tile";
      tile.dataset.kpi = item.key;
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = item.label;
      const value = document.createElement("span");
      value.className = "value";
      if (item.href) {
        // A count that has a list (e.g. "Unhealthy" → the cards not reporting healthy).
        const a = document.createElement("a");
        a.className = "tile-link";
        a.href = item.href;
        a.textContent = item.display;
        value.append(a);
      } else {
        value.textContent = item.display;
      }
      tile.append(label, value);
      if (item.hint) {
        const hint = document.createElement("span");
        hint.className = "hint";
        hint.textContent = " " + item.hint;
        tile.append(hint);
      }
      return tile;
    }));
  }

  function cellText(value, unit) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "number") return window.portalUnits.format(value, unit);
    return String(value);
  }

  // Sortable tables (data-sortable): a click on a header sorts by that column, a second click
  // reverses; the choice survives the 15-second refresh. Missing values sort last.
  const sortState = {};
  let lastPayload = null;

  function sortedRows(name, rows) {
    const state = sortState[name];
    if (!state) return rows;
    const sign = state.dir === "ascending" ? 1 : -1;
    return rows.slice().sort((a, b) => {
      const x = a[state.col], y = b[state.col];
      const xm = x === null || x === undefined, ym = y === null || y === undefined;
      if (xm || ym) return xm === ym ? 0 : (xm ? 1 : -1);
      if (typeof x === "number" && typeof y === "number") return sign * (x - y);
      return sign * String(x).localeCompare(String(y), PAGE_LANG, { numeric: true });
    });
  }

  function renderTables(payload) {
    lastPayload = payload;
    root.querySelectorAll("table[data-table]").forEach((el) => {
      const name = el.dataset.table;
      const data = (payload.tables || {})[name];
      if (!data) return;
      const links = data.links || payload.links;
      const sortable = el.hasAttribute("data-sortable");
      const linkCol = data.columns.indexOf(el.dataset.linkColumn || "");
      const textCol = data.columns.indexOf(el.dataset.linkTextColumn || "");
      const head = document.createElement("thead");
      const headRow = head.insertRow();
      const first = data.rows[0] || [];
      data.labels.forEach((label, i) => {
        const th = document.createElement("th");
        th.scope = "col";
        if (typeof first[i] === "number") th.className = "num";
        if (sortable) {
          const button = document.createElement("button");
          button.type = "button";
          button.textContent = label;
          const state = sortState[name];
          if (state && state.col === i) th.setAttribute("aria-sort", state.dir);
          button.addEventListener("click", () => {
            const now = sortState[name];
            const numeric = data.rows.some((r) => typeof r[i] === "number");
            // Numbers start largest first (the hottest, the busiest); text A to Z.
            const start = numeric ? "descending" : "ascending";
            const flip = { ascending: "descending", descending: "ascending" };
            sortState[name] = { col: i, dir: now && now.col === i ? flip[now.dir] : start };
            if (lastPayload) renderTables(lastPayload);
          });
          th.append(button);
        } else {
          th.textContent = label;
        }
        headRow.append(th);
      });
      const units = data.units || [];
      const body = document.createElement("tbody");
      sortedRows(name, data.rows).forEach((row) => {
        const tr = body.insertRow();
        row.forEach((value, i) => {
          const td = tr.insertCell();
          if (typeof value === "number") td.className = "num";
          const href = linkCol >= 0 && i === textCol && links ? links[String(row[linkCol])] : null;
          if (href) {
            const a = document.createElement("a");
            a.href = href;
            a.textContent = cellText(value, units[i]);
            td.append(a);
          } else {
            td.textContent = cellText(value, units[i]);
          }
        });
      });
      if (!data.rows.length && el.dataset.emptyText) {
        const cell = body.insertRow().insertCell();
        cell.colSpan = data.labels.length;
        cell.textContent = el.dataset.emptyText;
      }
      const caption = el.querySelector("caption");
      el.replaceChildren(...(caption ? [caption] : []), head, body);
    });
  }

  function hasData(figure) {
    return (figure.data || []).some((trace) => {
      const values = trace.z || trace.y || [];
      return values.flat().some((v) => v !== null && v !== undefined);
    });
  }

  // The twin's simulated clock as the time axis's labels (wall time stays the position, so
  // shaded simulated nights and the data line up): tick text comes from each point's
  // customdata, the simulated time of day the payload attached.
  const axisToggle = root.querySelector("[data-time-axis]");
  let simulatedTicks = sessionStorage.getItem("portal.timeAxis") === "simulated";

  function simulatedAxis(layout, figure) {
    const trace = (figure.data || []).find((t) => Array.isArray(t.customdata) && t.customdata.length);
    if (!simulatedTicks || !trace || !layout.xaxis || layout.xaxis.type !== "date") return layout;
    const n = trace.x.length;
    const every = Math.max(1, Math.ceil(n / 8));
    const vals = [];
    const text = [];
    for (let i = 0; i < n; i += every) { vals.push(trace.x[i]); text.push(trace.customdata[i]); }
    const out = Object.assign({}, layout);
    out.xaxis = Object.assign({}, layout.xaxis, {
      tickvals: vals, ticktext: text, title: { text: axisToggle ? axisToggle.dataset.simTitle : "" },
    });
    // Room for the axis title between the ticks and the legend below.
    out.legend = Object.assign({}, layout.legend || {}, { y: -0.35 });
    return out;
  }

  function renderCharts(payload) {
    if (axisToggle) {
      axisToggle.hidden = !payload.simulated_clock;
      axisToggle.setAttribute("aria-pressed", String(simulatedTicks));
      axisToggle.textContent = simulatedTicks ? axisToggle.dataset.wallLabel : axisToggle.dataset.simLabel;
    }
    root.querySelectorAll("[data-chart-key]").forEach((el) => {
      const figure = (payload.figures || {})[el.dataset.chartKey];
      if (!figure || typeof Plotly === "undefined") return;
      const layout = simulatedAxis(window.portalUnits.liftTitle(el, Object.assign({ autosize: true }, figure.layout)), figure);
      Plotly.react(el, figure.data, layout, { responsive: true, displaylogo: false });
      el.dataset.empty = hasData(figure) ? "false" : "true";
      let note = el.parentElement.querySelector(".chart-empty");
      if (!hasData(figure)) {
        if (!note) {
          note = document.createElement("p");
          note.className = "chart-empty hint";
          note.textContent = root.dataset.emptyText;
          el.after(note);
        }
      } else if (note) {
        note.remove();
      }
      if (!el.dataset.clickBound) {
        el.dataset.clickBound = "1";
        // Heatmap cells carry their drill-down URL as customdata.
        el.on("plotly_click", (event) => {
          const point = event && event.points && event.points[0];
          if (point && typeof point.customdata === "string" && point.customdata) {
            window.location.href = point.customdata;
          }
        });
      }
    });
  }

  // A long range on a young cluster: say where the data begins instead of a lone point.
  function renderDataStart(payload) {
    const box = root.querySelector("[data-data-start]");
    if (!box) return;
    const note = payload.data_start && payload.data_start.note;
    box.textContent = note || "";
    box.hidden = !note;
  }

  async function refresh() {
    const mine = ++generation;
    try {
      const response = await fetch(dataUrl(), { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (mine !== generation) return; // a newer range was chosen meanwhile
      if (!response.ok) throw new Error(String(response.status));
      const payload = await response.json();
      if (mine !== generation) return;
      renderKpis(payload.kpis);
      renderTables(payload);
      renderCharts(payload);
      renderDataStart(payload);
      const stamp = root.querySelector("[data-updated]");
      if (stamp) {
        stamp.dateTime = payload.updated;
        // Formatted by the server in the page's language (Django's DATETIME_FORMAT).
        stamp.textContent = payload.updated_display || payload.updated;
      }
      errorBox.hidden = true;
      root.dataset.loaded = String(Number(root.dataset.loaded || 0) + 1);
    } catch (err) {
      errorBox.textContent = root.dataset.errorText;
      errorBox.hidden = false;
    }
  }

  function schedule() {
    if (timer) clearInterval(timer);
    timer = setInterval(refresh, REFRESH_MS);
  }

  function navigate(query) {
    history.pushState(null, "", window.location.pathname + "?" + query.toString());
    root.querySelectorAll("a[data-range]").forEach((a) => {
      if (a.dataset.range === query.get("range")) a.setAttribute("aria-current", "true");
      else a.removeAttribute("aria-current");
    });
    setCsvLinks();
    refresh();
    schedule();
  }

  root.querySelectorAll("a[data-range]").forEach((link) => {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      const query = pageQuery();
      query.delete("start");
      query.delete("end");
      query.set("range", link.dataset.range);
      navigate(query);
    });
  });

  const custom = root.querySelector("form[data-custom-range]");
  if (custom) {
    custom.addEventListener("submit", (event) => {
      event.preventDefault();
      const form = new FormData(custom);
      const query = pageQuery();
      query.delete("range");
      ["start", "end"].forEach((key) => {
        const value = form.get(key);
        if (value) query.set(key, value); else query.delete(key);
      });
      navigate(query);
    });
  }

  if (axisToggle) {
    axisToggle.addEventListener("click", () => {
      simulatedTicks = !simulatedTicks;
      sessionStorage.setItem("portal.timeAxis", simulatedTicks ? "simulated" : "wall");
      refresh();
    });
  }

  window.addEventListener("popstate", () => { setCsvLinks(); refresh(); });
  setCsvLinks();
  refresh();
  schedule();
})();
