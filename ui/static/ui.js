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
  window.tetherLive = source; // the parts below listen to the same stream
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

// Tether UI: the fleet's tiles and groups, and the dependency graph. The
// tiles and the graph's boxes carry data-key and data-field as rows do, so
// the script above rewrites them; this part counts the groups other than
// namespaces (a SyncSet's, a cluster's), drops the tile of a Sync deleted,
// and shows or hides "waiting for" as a dependency's Ready changes.
(function () {
  var source = window.tetherLive;
  if (source) {
    // groupCounts: {grouping: {key: [{label, n}]}}, each into the
    // [data-ns-count] elements of its section[data-grouping][data-group].
    source.addEventListener("groupCounts", function (e) {
      var byGrouping = JSON.parse(e.data);
      document.querySelectorAll("section[data-grouping]").forEach(function (section) {
        var groups = byGrouping[section.getAttribute("data-grouping")] || {};
        var counts = groups[section.getAttribute("data-group")];
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
      var key = JSON.parse(e.data).key;
      document.querySelectorAll(".tile[data-key=\"" + CSS.escape(key) + "\"]").forEach(function (el) {
        el.parentNode.remove();
      });
    });
  }
  // A dependency's Ready, rewritten live, shows or hides the "waiting for"
  // beside it, and its box's "Waiting" with it.
  var readies = document.querySelectorAll(".dep-links [data-field=ready]");
  if (readies.length === 0 || !window.MutationObserver) { return; }
  var observer = new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      var ready = change.target, link = ready.closest("li"), box = ready.closest(".dep-box");
      var wait = link && link.querySelector(".dep-wait");
      if (!wait || !box) { return; }
      wait.hidden = ready.getAttribute("data-value") === "True";
      var mark = box.querySelector(".dep-waiting");
      if (mark) { mark.hidden = box.querySelector(".dep-wait:not([hidden])") === null; }
    });
  });
  readies.forEach(function (el) { observer.observe(el, { attributes: true, attributeFilter: ["data-value"] }); });
})();
