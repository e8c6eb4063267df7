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

  function drawChart(box) {
    var data = box.getAttribute("data-figure");
    if (!data || typeof window.Plotly === "undefined") return;
    var fig = JSON.parse(data);
    var plot = document.createElement("div");
    plot.className = "rb-plot";
    box.appendChild(plot);
    window.Plotly.newPlot(plot, fig.data, fig.layout, { responsive: true, displaylogo: false });
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
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
