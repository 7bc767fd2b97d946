// Tether UI: live updates. One EventSource per page reads the server's stream
// of Sync changes (one shared watch on the server; no polling) and rewrites the
// text of the fields of the Sync it names, and the fleet's counts. Text only: nothing from the server is
// ever parsed as HTML, but the graph's own page (its follower at the end of this file).
"use strict";
(function () {
  // A page without the live line (the sign-in form: no session to stream
  // for) opens no stream.
  var live = document.getElementById("live");
  if (!window.EventSource || !live) { return; }
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
  // announce tells the page's other scripts (the graph's follower) which Sync
  // changed, as a DOM event on the document.
  function announce(key) { document.dispatchEvent(new CustomEvent("tether:sync", { detail: key })); }
  source.addEventListener("sync", function (e) {
    var row = JSON.parse(e.data);
    changed(row.key, update(row));
    announce(row.key);
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
  source.addEventListener("gone", function (e) {
    var row = JSON.parse(e.data);
    rowsOf(row.key).forEach(function (el) { if (el.tagName === "TR") { el.remove(); } });
    changed(row.key, false);
    announce(row.key);
  });
})();

// Tether UI: the graph follows the cluster. On a change of its Sync (the live
// stream's event, announced above as "tether:sync"), and every two seconds
// while an object of the graph is Progressing (a rollout's ReplicaSets and Pods
// change without the Sync's status changing), and only while the page is
// visible, it fetches the graph's own page again and puts its #graph-live in
// place of the one shown, keeping the groups the person opened or closed open
// or closed. The page is our server's, rendered by html/template with every
// value from the cluster escaped; DOMParser builds an inert document from it
// (its scripts never run, its nodes are only moved into this page), and only
// the elements of #graph-live are taken.
(function () {
  var shown = document.getElementById("graph-live");
  if (!shown || !window.fetch || !window.DOMParser) { return; }
  var key = shown.getAttribute("data-graph-for");
  var progressingEvery = 2000;
  var inFlight = false, again = false, timer = null, stopped = false;
  // foldKey names a fold by its own data-fold and those of the folds it is in
  // (a group's namespace and kind, then each owner's kind and name).
  function foldKey(d) {
    var parts = [];
    for (var el = d; el && el !== shown; el = el.parentElement) {
      if (el.tagName === "DETAILS" && el.hasAttribute("data-fold")) { parts.unshift(el.getAttribute("data-fold")); }
    }
    return parts.join(" > ");
  }
  function folds(root) {
    var out = {};
    root.querySelectorAll("details[data-fold]").forEach(function (d) { out[foldKey(d)] = d; });
    return out;
  }
  function progressing() {
    return shown.querySelector("[data-health=\"Progressing\"]") !== null;
  }
  function stale() {
    stopped = true;
    var note = document.getElementById("graph-stale");
    if (note) { note.hidden = false; }
  }
  function schedule() {
    if (timer !== null || stopped || document.visibilityState !== "visible" || !progressing()) { return; }
    timer = setTimeout(function () { timer = null; refresh(); }, progressingEvery);
  }
  // focusOf names the element of the graph that has the keyboard's focus, so
  // that the same element of the new graph gets it back: a link by its href, a
  // fold's summary by its fold. null when the focus is elsewhere.
  function focusOf() {
    var el = document.activeElement;
    if (!el || !shown.contains(el)) { return null; }
    if (el.tagName === "A" && el.hasAttribute("href")) { return { href: el.getAttribute("href") }; }
    if (el.tagName === "SUMMARY" && el.parentElement && el.parentElement.hasAttribute("data-fold")) {
      return { fold: foldKey(el.parentElement) };
    }
    return null;
  }
  function refocus(f) {
    if (!f) { return; }
    var el = null;
    if (f.href !== undefined) {
      el = shown.querySelector("a[href=\"" + CSS.escape(f.href) + "\"]");
    } else {
      var d = folds(shown)[f.fold];
      el = d ? d.querySelector("summary") : null;
    }
    if (el) { el.focus({ preventScroll: true }); }
  }
  function replace(next) {
    var open = {};
    var before = folds(shown);
    var focused = focusOf();
    Object.keys(before).forEach(function (k) { open[k] = before[k].open; });
    next = document.adoptNode(next);
    shown.replaceWith(next);
    shown = next;
    var after = folds(shown);
    Object.keys(after).forEach(function (k) {
      if (Object.prototype.hasOwnProperty.call(open, k)) { after[k].open = open[k]; }
    });
    refocus(focused);
  }
  function refresh() {
    if (stopped) { return; }
    if (document.visibilityState !== "visible") { again = true; return; }
    if (inFlight) { again = true; return; }
    inFlight = true;
    again = false;
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store", redirect: "error" })
      .then(function (res) {
        if (!res.ok) { throw new Error("status " + res.status); }
        return res.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var next = doc.getElementById("graph-live");
        if (!next || next.getAttribute("data-graph-for") !== key) { throw new Error("not this graph"); }
        replace(next);
      })
      .catch(stale)
      .then(function () {
        inFlight = false;
        if (again) { refresh(); } else { schedule(); }
      });
  }
  document.addEventListener("tether:sync", function (e) {
    if (e.detail === key) { refresh(); }
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState !== "visible") { return; }
    if (again || progressing()) { refresh(); }
  });
  schedule();
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

// Tether UI: the fleet's tiles and groups, and the dependency graph. The
// tiles and the graph's boxes carry data-key and data-field as rows do, so
// the script above rewrites them; this part writes each group's counts (a
// namespace's, a SyncSet's, a cluster's), drops the tile of a Sync deleted,
// and shows or hides "waiting for" as a dependency's Ready changes.
(function () {
  var source = window.tetherLive;
  if (source) {
    // groupCounts: {grouping: {key: [{label, n}]}}, each count into the
    // [data-ns-count] element of its section[data-grouping][data-group] (a
    // namespace's, a SyncSet's or a cluster's): the number and the word;
    // data-n hides a zero.
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
