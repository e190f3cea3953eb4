// Sorting, filtering and jumping to a linked row are enhancements: without JavaScript every
// table reads as rendered and a #row link still lands on its row (the stylesheet's :target).
(function () {
  "use strict";
  var FILTER_FROM = 9;  // a table of eight rows or fewer is read at a glance; a filter would be clutter
  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };

  // A table with notes keeps each row and its notes together in their own <tbody>: that group
  // is what sorts, filters and hides.
  function groups(table) {
    return Array.prototype.slice.call(table.tBodies.length > 1 ? table.tBodies : table.tBodies[0].rows);
  }

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
    var keyed = groups(table).map(function (g, i) { return { g: g, k: key(g, index), i: i }; });
    keyed.sort(function (x, y) {
      var c = compare(x.k, y.k);
      if (x.k !== null && y.k !== null && !ascending) { c = -c; }
      return c || x.i - y.i;
    });
    keyed.forEach(function (x) { parent.appendChild(x.g); });
    each(th.parentNode.cells, function (other) { other.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  function sortable(table) {
    each(table.tHead.rows[0].cells, function (th, index) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () { sortBy(table, th, index); });
    });
    table.classList.add("js-sortable");
  }

  // Shows the groups whose text holds every term of the query, in any case and order.
  function applyFilter(table, query, count) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    var all = groups(table);
    var shown = 0;
    all.forEach(function (g) {
      if (g.filterText === undefined) { g.filterText = g.textContent.toLowerCase(); }
      var keep = terms.every(function (t) { return g.filterText.indexOf(t) !== -1; });
      g.hidden = !keep;
      if (keep) { shown += 1; }
    });
    count.textContent = shown + " of " + all.length + " rows";
  }
  function filterable(table) {
    var total = groups(table).length;
    if (total < FILTER_FROM) { return; }
    var box = document.createElement("div");
    box.className = "filter";
    var label = document.createElement("label");
    var input = document.createElement("input");
    input.type = "search";
    input.autocomplete = "off";
    input.spellcheck = false;
    label.appendChild(document.createTextNode("Filter rows "));
    label.appendChild(input);
    var count = document.createElement("output");
    count.setAttribute("aria-live", "polite");
    count.textContent = total + " of " + total + " rows";
    box.appendChild(label);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(count);
    var wrapper = table.parentNode.classList.contains("scroll") ? table.parentNode : table;
    wrapper.parentNode.insertBefore(box, wrapper);
    input.addEventListener("input", function () { applyFilter(table, input.value, count); });
    table.tableFilter = { input: input, count: count };
  }

  // A linked row must be seen: open the <details> it sits in and clear a filter hiding it.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) { return; }
    var moved = false;
    for (var el = target.parentNode; el && el !== document.body; el = el.parentNode) {
      if (el.tagName === "DETAILS" && !el.open) { el.open = true; moved = true; }
    }
    var table = target.closest("table");
    if (table && table.tableFilter && target.closest("tbody[hidden], tr[hidden]")) {
      table.tableFilter.input.value = "";
      applyFilter(table, "", table.tableFilter.count);
      moved = true;
    }
    if (moved) { target.scrollIntoView({ block: "center" }); }  // else the browser has already scrolled to it
  }

  each(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    sortable(table);
    filterable(table);
  });
  window.addEventListener("hashchange", reveal);
  if (location.hash.length > 1) { reveal(); }
  // On paper nothing can be clicked open: print every closed part of the verdict, then close it again.
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.filter.call(document.querySelectorAll("details:not([open])"), function (d) {
      d.open = true; return true; });
  });
  window.addEventListener("afterprint", function () { opened.forEach(function (d) { d.open = false; }); });
}());
