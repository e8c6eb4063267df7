/* ReconBench site behaviour: sortable boards, taxonomy filters, Plotly charts.
 *
 * Material's navigation.instant swaps page content without reloading the document, so nothing
 * here runs once on load: `init` runs on every emission of material's `document$` (each page,
 * first load included) and only touches elements it has not set up yet (data-rb-ready).
 */
(function () {
  "use strict";

  function cellValue(row, index) {
    var cell = row.cells[index];
    return cell ? (cell.getAttribute("data-value") || "") : "";
  }

  function compare(kind, a, b) {
    // Empty values (a metric that was not computed) always go last, whatever the direction.
    if (a === "" || b === "") return a === b ? 0 : (a === "" ? 1 : -1);
    if (kind === "number") return parseFloat(a) - parseFloat(b);
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function sortTable(table, th) {
    var headers = Array.prototype.slice.call(th.parentNode.children);
    var index = headers.indexOf(th);
    var kind = th.getAttribute("data-sort") || "text";
    var current = th.getAttribute("aria-sort");
    // First click sorts the better values first (data-better), then it toggles.
    var ascending;
    if (current === "ascending") ascending = false;
    else if (current === "descending") ascending = true;
    else ascending = th.getAttribute("data-better") !== "higher";
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (r, i) { r._rbIndex = i; });
    rows.sort(function (r1, r2) {
      var a = cellValue(r1, index), b = cellValue(r2, index);
      var c = compare(kind, a, b);
      if (a !== "" && b !== "" && !ascending) c = -c;
      return c || r1._rbIndex - r2._rbIndex;  // stable
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function setupTable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th) {
      if (!th.hasAttribute("data-sort")) return;
      th.classList.add("rb-sortable");
      th.setAttribute("tabindex", "0");
      th.setAttribute("role", "button");
      th.addEventListener("click", function () { sortTable(table, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortTable(table, th); }
      });
    });
  }

  function setupFilter(box) {
    var table = document.getElementById(box.getAttribute("data-rb-filter-for"));
    if (!table) return;
    var selects = box.querySelectorAll("select[data-axis]");
    var count = box.querySelector(".rb-filter-count");
    function apply() {
      var shown = 0, rows = table.tBodies[0].rows;
      Array.prototype.forEach.call(rows, function (row) {
        var keep = Array.prototype.every.call(selects, function (s) {
          return !s.value || row.getAttribute("data-" + s.getAttribute("data-axis")) === s.value;
        });
        row.hidden = !keep;
        if (keep) shown += 1;
      });
      if (count) count.textContent = shown + " of " + rows.length + " entries";
    }
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", apply); });
    apply();
  }

  var NARROW = 700;  // px: below this, no toolbar (it would cover the title) and the legend goes below

  function cssVar(name, fallback) {
    var v = getComputedStyle(document.body).getPropertyValue(name).trim();
    return v || fallback;
  }

  // The figure's layout adapted to the page: colours of the current palette (light or dark),
  // transparent backgrounds, and on a narrow screen a legend below the plot instead of beside it.
  function pageLayout(base, data) {
    var fg = cssVar("--md-default-fg-color", "#222"), grid = cssVar("--md-default-fg-color--lightest", "#e5e5e5");
    var layout = JSON.parse(JSON.stringify(base));
    layout.paper_bgcolor = "rgba(0,0,0,0)";
    layout.plot_bgcolor = "rgba(0,0,0,0)";
    layout.font = Object.assign({}, layout.font, { color: fg });
    Object.keys(layout).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k)) layout[k] = Object.assign({}, layout[k], { gridcolor: grid, zerolinecolor: grid, linecolor: grid });
    });
    layout.autosize = true;
    delete layout.width;
    if (window.innerWidth < NARROW) {
      // the legend goes below the plot, one item a line at this width (reference lines included):
      // the figure grows by a line per item, so that the legend stays inside it
      var items = (data || []).filter(function (t) { return t.showlegend !== false; }).length;
      var extra = 22 * Math.max(0, items - 2);
      layout.legend = Object.assign({}, layout.legend, { orientation: "h", x: 0, xanchor: "left", y: -0.25, yanchor: "top" });
      layout.margin = Object.assign({}, layout.margin, { l: 50, r: 10, b: 120 + extra });
      layout.height = (base.height || 420) + extra;
      Object.keys(layout).forEach(function (k) {  // axis titles wider than the plot wrap too
        var t = /^[xy]axis\d*$/.test(k) && layout[k].title;
        if (t && typeof t.text === "string") t.text = wrapName(t.text, k[0] === "x" ? 45 : 35);
      });
    }
    return layout;
  }

  function drawChart(box) {
    var data = box.getAttribute("data-figure");
    if (!data || typeof window.Plotly === "undefined") return;
    var fig = JSON.parse(data);
    var plot = document.createElement("div");
    plot.className = "rb-plot";
    plot._rbLayout = fig.layout;
    box.appendChild(plot);
    var config = { responsive: true, displaylogo: false, displayModeBar: window.innerWidth < NARROW ? false : "hover" };
    if (window.innerWidth < NARROW) fig.data.forEach(function (t) { if (t.name) t.name = wrapName(t.name, 40); });
    window.Plotly.newPlot(plot, fig.data, pageLayout(fig.layout, fig.data), config).then(function () { fitLegend(plot); });
  }

  // Plotly never wraps a legend name: on a phone a long one would stick out of the figure.
  function wrapName(name, width) {
    if (name.length <= width || name.indexOf("<br>") >= 0) return name;
    var lines = [], line = "";
    name.split(" ").forEach(function (word) {
      if (line && (line + " " + word).length > width) { lines.push(line); line = word; } else { line = line ? line + " " + word : word; }
    });
    lines.push(line);
    return lines.join("<br>");
  }

  // On a narrow screen the legend's height depends on how its names wrap: once drawn, the figure
  // grows by whatever the legend still sticks out below it.
  function fitLegend(plot) {
    if (window.innerWidth >= NARROW) return;
    var svg = plot.querySelector(".main-svg"), legend = plot.querySelector(".legend");
    if (!svg || !legend) return;
    var over = Math.ceil(legend.getBoundingClientRect().bottom - svg.getBoundingClientRect().bottom) + 8;
    if (over <= 8) return;
    var layout = plot.layout;
    window.Plotly.relayout(plot, { height: layout.height + over, "margin.b": (layout.margin.b || 0) + over });
  }

  // Material switches the palette by setting data-md-color-scheme on <body>: recolour the charts.
  function followPalette() {
    if (document.body.hasAttribute("data-rb-palette")) return;
    document.body.setAttribute("data-rb-palette", "");
    new MutationObserver(function () {
      Array.prototype.forEach.call(document.querySelectorAll(".rb-plot"), function (plot) {
        if (plot._rbLayout && window.Plotly) window.Plotly.relayout(plot, pageLayout(plot._rbLayout, plot.data));
      });
    }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  function once(selector, fn) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), function (el) {
      if (el.hasAttribute("data-rb-ready")) return;
      el.setAttribute("data-rb-ready", "");
      fn(el);
    });
  }

  function init() {
    once("table[data-rb-sortable]", setupTable);
    once(".rb-filters[data-rb-filter-for]", setupFilter);
    once(".rb-chart", drawChart);
    followPalette();
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
