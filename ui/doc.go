// Package ui is Tether's web UI: the server `tether ui` runs, its pages, and the
// assets embedded in it.
//
// It has no identity and no rights of its own (in a cluster, see cluster.go:
// each user signs in with their own bearer token and has their own viewer). Every read and every action is
// made with the rest.Config it is given, which is the caller's kubeconfig: what the
// user may not list, the UI does not show, and an action the user may not take is
// refused by the API server and shown as refused.
//
// Data flows one way. One shared informer on Syncs (scope.go decides whether it
// watches every namespace or only the user's own, by what the API server lets the
// user list) feeds the fleet page and, through a broker (live.go), every open
// browser over server-sent events (each changed Sync's row, and the fleet's
// counts at most once a second); no browser polls but an open graph while
// a rollout is under way (below). The Sync page reads the Sync,
// the objects its workloads own (owned.go) and its Events when asked. How a Sync
// reads (its short revision, Ready, why it fails, its tree, its Events) comes from
// package plan, the same code the CLI prints with.
//
// The graph page (graph.go) draws the same objects and what they own left to
// right, grouped by namespace and kind, large fan-outs folded under a count, with
// filters; it is nested lists laid out by the browser (no script), each box laid
// out only when in view, so that 1,000 objects cost what is on screen. The fleet
// is likewise one section per namespace, each laid out only when in view. An open
// graph follows its Sync: on the Sync's live event, and every 2 s while a box is
// Progressing, its script fetches the page again and swaps the graph in (the one
// page that polls, bounded: visible pages only, one fetch at a time).
//
// The diff page (diff.go) shows, on demand, how the Sync's OutOfSync objects (as
// its status says) differ from git: the source rendered by the Renderer the
// command gives (`tether diff`'s: ui may not import sync), the apply the agent
// would make (plan.ForApply: ignore rules, fields given up) dry-run with the
// user's client, and each change written by plan.ObjectDiff, which `tether diff`
// prints with, Secret values masked. It is bounded: 50 objects, 64 KiB of diff
// each, two minutes, two diffs computed at once. The object panel (object.go)
// shows an object live, and on demand what git declares for it and its diff, by
// the same render, bounds and comparison; gitlink.go maps the repository's URL to
// the web page of the Sync's path at the applied commit on hosts whose layout is
// known.
//
// The logs page (logs.go) of a Pod the object panel opens links its containers;
// its script follows one's log from a stream of server-sent events
// (logs_stream.go) that client-go's GetLogs (pods/log, followed) feeds, opened
// with the user's config, each line made one line of plain text. It is bounded:
// the last 500 lines, 4 MiB and 30 minutes a stream, 4 KiB a line, 4 streams a
// session and 32 a server.
//
// The compare page (compare.go) shows how two revisions of the Sync's history
// differ: the same Renderer is given a copy of the Sync whose ref names each
// commit (what a rollback to it applies), and each object the renders hold
// otherwise is written by plan.RevisionDiff, Secret values masked on both
// sides. Nothing is dry-run; it shares the diff page's bounds and slots.
//
// Security (session.go): the URL `tether ui` prints carries a one-time token that
// is exchanged for an HttpOnly, SameSite=Strict session cookie; every POST carries
// the session's CSRF token; requests naming another Host are refused (DNS
// rebinding); every response carries a strict Content-Security-Policy (no inline
// script or style); every value from the cluster and from git goes through
// html/template's contextual escaping.
package ui
