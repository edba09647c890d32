/* precision_tool HTML report: sorting, filtering and row links for the tensor table.
 *
 * The table is already in the page; this script only adds the controls. It reads the DOM and never inserts
 * markup from data (textContent only). Query parameters set the initial view, so a link can share it:
 *   report.html?filter=res_conv&failing=1&sort=CosineSimilarity&order=desc
 * When it has set everything up it writes data-status="ok" on <body>; any error writes data-status="error"
 * and data-error (the browser test checks both).
 */
(function () {
  "use strict";
  var body = document.body;

  function fail(error) {
    body.setAttribute("data-status", "error");
    body.setAttribute("data-error", String((error && error.message) || error));
  }
  window.addEventListener("error", function (event) { fail(event.error || event.message); });

  function numberKey(cell) {
    return parseFloat(cell.textContent);  // "NaN" and empty cells give NaN: sorted last
  }

  function init() {
    var table = document.getElementById("tensor-table");
    if (!table) { done(); return; }
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var searchText = rows.map(function (row) { return row.textContent.toLowerCase(); });
    rows.forEach(function (row, k) { row.setAttribute("data-order", k); });
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var controls = document.getElementById("table-controls");
    var state = { column: -1, descending: false };

    var filter = document.createElement("input");
    filter.type = "search";
    filter.id = "table-filter";
    filter.placeholder = "Filter: op name, type, tensor, reason...";
    filter.setAttribute("aria-label", "Filter the tensors");
    var failingLabel = document.createElement("label");
    var failingOnly = document.createElement("input");
    failingOnly.type = "checkbox";
    failingOnly.id = "failing-only";
    failingLabel.appendChild(failingOnly);
    failingLabel.appendChild(document.createTextNode(" failing only"));
    var counter = document.createElement("span");
    counter.id = "table-count";
    controls.appendChild(filter);
    controls.appendChild(failingLabel);
    controls.appendChild(counter);

    function applyFilter() {
      var needle = filter.value.trim().toLowerCase();
      var shown = 0;
      rows.forEach(function (row, k) {
        var bad = row.classList.contains("fail") || row.classList.contains("error");
        var visible = (!failingOnly.checked || bad) && (!needle || searchText[k].indexOf(needle) >= 0);
        row.hidden = !visible;
        if (visible) { shown += 1; }
      });
      counter.textContent = shown + " of " + rows.length + " tensors shown";
      body.setAttribute("data-rows-shown", String(shown));
    }

    function applySort() {
      headers.forEach(function (th, k) {
        if (k === state.column) { th.setAttribute("aria-sort", state.descending ? "descending" : "ascending"); }
        else { th.removeAttribute("aria-sort"); }
      });
      var column = state.column;
      var numeric = column >= 0 && headers[column].getAttribute("data-type") === "num";
      var sign = state.descending ? -1 : 1;
      var ordered = rows.slice();
      ordered.sort(function (a, b) {
        var tie = Number(a.getAttribute("data-order")) - Number(b.getAttribute("data-order"));
        if (column < 0) { return tie; }
        var x, y;
        if (numeric) {
          x = numberKey(a.cells[column]);
          y = numberKey(b.cells[column]);
          if (isNaN(x) || isNaN(y)) { return isNaN(x) === isNaN(y) ? tie : (isNaN(x) ? 1 : -1); }
          return (x - y) * sign || tie;
        }
        x = a.cells[column].textContent;
        y = b.cells[column].textContent;
        return (x < y ? -1 : x > y ? 1 : 0) * sign || tie;
      });
      ordered.forEach(function (row) { tbody.appendChild(row); });
    }

    headers.forEach(function (th, k) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = th.textContent;
      button.title = "Sort by " + th.textContent;
      button.addEventListener("click", function () {
        state.descending = state.column === k ? !state.descending : false;
        state.column = k;
        applySort();
      });
      th.textContent = "";
      th.appendChild(button);
    });
    filter.addEventListener("input", applyFilter);
    failingOnly.addEventListener("change", applyFilter);

    function showTarget() {
      var target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
      if (target && target.hidden) {
        filter.value = "";
        failingOnly.checked = false;
        applyFilter();
        target.scrollIntoView({ block: "center" });
      }
    }
    window.addEventListener("hashchange", showTarget);

    var query = new URLSearchParams(window.location.search);
    filter.value = query.get("filter") || "";
    failingOnly.checked = query.get("failing") === "1";
    var sortName = query.get("sort");
    if (sortName) {
      state.column = headers.findIndex(function (th) { return th.getAttribute("data-key") === sortName; });
      state.descending = query.get("order") === "desc";
    }
    applySort();
    applyFilter();
    showTarget();
    done();
  }

  function done() {  // "ok" unless a script before this one (the graph view) already failed
    if (body.getAttribute("data-status") !== "error") { body.setAttribute("data-status", "ok"); }
  }

  try { init(); } catch (error) { fail(error); }
})();
