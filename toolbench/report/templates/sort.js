// Sorting is an enhancement: without JavaScript every table reads as rendered.
(function () {
  "use strict";
  function key(group, index) {
    var row = group.rows ? group.rows[0] : group;
    var cell = row && row.cells[index];
    if (!cell) { return null; }
    var sort = cell.getAttribute("data-sort");
    if (sort !== null) { return sort === "" ? null : parseFloat(sort); }
    var text = cell.textContent.trim();
    return text === "" || text === "\u2014" ? null : text.toLowerCase();
  }
  function compare(a, b) {
    if (a === null) { return b === null ? 0 : 1; }  // absent values stay last
    if (b === null) { return -1; }
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function sortBy(table, th, index) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var many = table.tBodies.length > 1;
    var parent = many ? table : table.tBodies[0];
    var groups = Array.prototype.slice.call(many ? table.tBodies : parent.rows);
    var keyed = groups.map(function (g, i) { return { g: g, k: key(g, index), i: i }; });
    keyed.sort(function (x, y) {
      var c = compare(x.k, y.k);
      if (x.k !== null && y.k !== null && !ascending) { c = -c; }
      return c || x.i - y.i;
    });
    keyed.forEach(function (x) { parent.appendChild(x.g); });
    Array.prototype.forEach.call(th.parentNode.cells, function (other) { other.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () { sortBy(table, th, index); });
    });
    table.classList.add("js-sortable");
  });
}());
