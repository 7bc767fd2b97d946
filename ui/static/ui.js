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
// Tether UI: a container's log (the logs page). One EventSource reads the
// server's stream of the log: each "line" event is appended as text (never
// HTML), the page keeps the last data-max-lines lines, and it follows the end
// while the reader is at the bottom. An "end" or "refused" event says why the
// stream stopped; the page then closes it rather than reconnect (which would
// start again from the log's tail).
(function () {
  var pre = document.getElementById("log-lines");
  var state = document.getElementById("log-state");
  if (!pre || !state) { return; }
  if (!window.EventSource) { state.textContent = "This browser cannot follow a log (no EventSource)."; return; }
  var max = parseInt(pre.getAttribute("data-max-lines"), 10) || 2000;
  var source = new EventSource(pre.getAttribute("data-src"));
  var shown = 0;
  function stop(text, kind) {
    source.close();
    state.textContent = text;
    state.setAttribute("data-state", kind);
    if (shown === 0) { pre.hidden = true; }
  }
  state.textContent = "Connecting…";
  source.addEventListener("open", function () {
    state.textContent = "Following the log.";
    state.setAttribute("data-state", "following");
  });
  source.addEventListener("line", function (e) {
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    var line = document.createElement("span");
    line.className = "log-line";
    line.textContent = e.data + "\n";
    pre.appendChild(line);
    shown++;
    while (shown > max && pre.firstChild) { pre.removeChild(pre.firstChild); shown--; }
    if (atEnd) { pre.scrollTop = pre.scrollHeight; }
  });
  source.addEventListener("end", function (e) { stop(e.data, "ended"); });
  source.addEventListener("refused", function (e) { stop(e.data, "refused"); });
  source.addEventListener("error", function () {
    if (state.getAttribute("data-state") === "ended" || state.getAttribute("data-state") === "refused") { return; }
    stop("The log stream was lost: reload the page to follow the log again.", "lost");
  });
})();
