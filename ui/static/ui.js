// Tether UI: live updates. One EventSource per page reads the server's stream
// of Sync changes (one shared watch on the server; no polling) and rewrites the
// text of the fields of the Sync it names, and the fleet's counts. Text only: nothing from the server is
// ever parsed as HTML.
"use strict";
(function () {
  if (!window.EventSource) { return; }
  var live = document.getElementById("live");
  function say(text) { if (live) { live.hidden = false; live.textContent = text; } }
  // rowsOf finds the elements of one Sync by an attribute selector (the key
  // escaped), not by reading every row's key: a change costs the same on a
  // fleet of a thousand as of ten.
  function rowsOf(key) {
    return Array.prototype.slice.call(document.querySelectorAll("[data-key=\"" + CSS.escape(key) + "\"]"));
  }
  function update(row) {
    var found = rowsOf(row.key);
    found.forEach(function (el) {
      el.querySelectorAll("[data-field]").forEach(function (f) {
        var name = f.getAttribute("data-field");
        if (!Object.prototype.hasOwnProperty.call(row, name)) { return; }
        var value = String(row[name]);
        f.textContent = value;
        if (f.hasAttribute("data-value")) { f.setAttribute("data-value", value); }
      });
    });
    return found.length > 0;
  }
  // changed shows the page's note that it no longer shows everything: on the
  // fleet, a Sync it has no row for; on a Sync's page (data-for-key), that Sync.
  function changed(key, found) {
    var note = document.getElementById("changed");
    if (!note) { return; }
    var forKey = note.getAttribute("data-for-key");
    if (forKey === null ? !found : forKey === key) { note.hidden = false; }
  }
  var source = new EventSource("/live");
  var lost = false;
  source.addEventListener("open", function () {
    say(lost ? "live again: reload to see what changed meanwhile" : "live");
  });
  source.addEventListener("error", function () { lost = true; say("reconnecting…"); });
  source.addEventListener("sync", function (e) {
    var row = JSON.parse(e.data);
    changed(row.key, update(row));
  });
  // counts rewrites the fleet's head: [{label, n}], each into its
  // [data-count] element.
  source.addEventListener("counts", function (e) {
    JSON.parse(e.data).forEach(function (c) {
      document.querySelectorAll("[data-count]").forEach(function (el) {
        if (el.getAttribute("data-count") === c.label) { el.textContent = String(c.n); }
      });
    });
  });
  // namespaceCounts rewrites each namespace's counts on the fleet:
  // {namespace: [{label, n}]}, each into the [data-ns-count] element of its
  // section[data-ns] (the number and the word; data-n hides a zero).
  source.addEventListener("namespaceCounts", function (e) {
    var byNamespace = JSON.parse(e.data);
    document.querySelectorAll("section[data-ns]").forEach(function (section) {
      var counts = byNamespace[section.getAttribute("data-ns")];
      if (!Array.isArray(counts)) { return; }
      counts.forEach(function (c) {
        section.querySelectorAll("[data-ns-count]").forEach(function (el) {
          if (el.getAttribute("data-ns-count") !== c.label) { return; }
          el.textContent = String(c.n) + " " + c.label;
          el.setAttribute("data-n", String(c.n));
        });
      });
    });
  });
  source.addEventListener("gone", function (e) {
    var row = JSON.parse(e.data);
    rowsOf(row.key).forEach(function (el) { if (el.tagName === "TR") { el.remove(); } });
    changed(row.key, false);
  });
})();
