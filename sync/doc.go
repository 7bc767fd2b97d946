// Package sync is Tether's level-triggered reconciler: for each Sync it reads the
// desired state from git, applies it, judges its health and writes what it saw.
//
// Every reconcile starts from current reality and is a straight line of steps,
// in two halves: Reconcile's desire reads what the Sync should hold (fetch,
// render, the checks, its order) and reach makes the cluster hold it (apply,
// prune, assess); the status is reported whatever happened:
//
//	fetch   source.Fetch: resolve the ref to a commit         → SourceReady
//	render  source.Render: the path at that commit to objects → SourceReady / Stalled
//	        Overlay: spec.kustomize put on top of the objects   / Stalled
//	        (reconciler_kustomize.go, behind the render wall)
//	        postBuild: spec.postBuild's variables substituted  / Stalled
//	        (reconciler_substitute.go, source/substitute)
//	        plan.CheckEmpty, plan.CheckSize: may it proceed?  / Stalled
//	apply   plan.ForApply, then apply.ApplyAll: dry-run each  → sync, inventory
//	        object, record them ahead (write-ahead), write     / Stalled
//	prune   plan.CheckPruneLimit, then apply.Prune: what left → inventory
//	        the inventory's git side                           / Stalled
//	assess  health.Checker on what the cluster now holds     → health, Healthy
//	report  one status patch, events, metrics                → Ready, Reconciling
//
// The decisions that need no cluster (what a Sync means for an apply and a prune,
// the inventory's guards, the failure metric's label) are the plan package's; this
// package does the I/O around them. Which reasons stall and which are retried is
// declared once, in api/v1alpha1.Reasons.
//
// This package is the one place that maps errors to behaviour: a transient error
// of the API server is returned so the work queue backs off and retries; git that
// cannot be reached is asked again at the Sync's interval, so recovery never waits
// out a long backoff; bad input in git (a broken manifest, an object the API server rejects)
// sets Stalled and waits for the next interval or a new commit, with the last good
// state left in the cluster; a git host busy with other Syncs' fetches
// (source.ReasonHostBusy) is waited on, requeued after a few seconds without an
// error or a condition. It is also the only package that logs, records events
// and exports metrics: counters and histograms of the work as it is done
// (metrics.go, on the leader), and the state of every Sync read from the cache at
// scrape time (metrics_state.go, on every replica, so that alerts neither gap nor
// go quiet when the leader changes). Each new cause of failure is one Warning
// Event with the Ready condition's reason. It consumes source and apply through the small interfaces
// declared in reconciler.go.
//
// Which commit is applied (reconciler_rollback.go): the ref's newest, unless the
// Sync is pinned (tether.dev/pin-revision) or rolled back after a failure
// (spec.rollback, plan.CheckRollback); then that commit is fetched by commit as
// the Sync's identity and goes through the same render, checks and dry-run, while
// the ref's newest is still fetched and reported. Every full apply adds to
// status.history with the commit's subject (reconciler_history.go). A rollback is
// an Event, a condition and a metric; it is remembered in memory until the cached
// status shows it, so that a stale cache cannot roll back twice.
//
// The inventory (status.objects, built by plan.Status) is written ahead of every
// create, merged rather than overwritten on a conflict, written within a grace after
// SIGTERM, and rebuilt from the tether.dev/sync label when it is empty; see
// docs/apply-transaction.md.
//
// The pods that explain a workload that is not Healthy are read as the Sync's
// identity from a PodWatch (podwatch.go): one informer per identity and
// namespace, started when a workload there needs it and stopped once idle, so
// that a stuck workload costs no LIST per reconcile; an identity that may not
// watch pods lists them (reconciler_health.go).
//
// What starts a reconcile: a change of the Sync's spec; its interval (no shorter
// than Options.MinInterval, on the Stalled path too), jittered by ±10% so that
// Syncs do not poll in lockstep (Syncs sharing a repository and
// credentials still share one ref listing per interval); a change of a managed
// object (Watcher), or a status change of one the Sync last judged not Healthy,
// so that health follows a rollout (reconciler_health.go); and a push
// notification (Trigger), which refreshes the
// repository and queues the Syncs that follow the pushed ref at once. A request
// for a reconcile (the tether.dev/reconcile-requested-at annotation) asks git
// afresh, but forces at most one ref listing per repository per MinInterval
// (reconciler_request.go): a request that comes sooner is answered by a listing
// forced since it was seen, or waits for the interval and is answered then. Credentials
// named by spec.source.secretRef are read per fetch straight from the API server
// (reconciler_source.go) and handed to source; Secrets are never cached or watched.
//
// Order (reconciler_waves.go, reconciler_depends.go, docs/ordering.md): a Sync with
// spec.dependsOn waits, before it fetches, until the Syncs it names are Ready
// (plan.CheckDependencies); a watch of Syncs queues the dependents of one whose
// readiness changed. A new revision with hooks or waves (plan.Order) is applied as
// a run across reconciles: the whole revision dry-run first, then each phase and
// wave applied and waited for until Healthy, the run's progress in status.run and,
// in memory, for reconciles whose cache lags the last status write. Drift
// correction applies the inventory's objects as one set and runs no hook.
//
// Who a Sync acts as (tenancy.go): before anything else, the reconciler resolves the
// Sync's Identity. A Sync that names a ServiceAccount (spec.serviceAccountName, or
// the agent's default) gets an Applier and a Secrets reader whose every request
// impersonates that account, one per account, built by an IdentityFunc that cmd
// supplies and kept for the agent's lifetime; a Sync that names none uses the
// agent's own Applier and Secrets. Each account's Applier has its own cache of
// verified objects, so one identity never skips a dry-run on another's word. A
// missing account, or (with cross-namespace objects not allowed) a revision that
// reaches outside the Sync's namespace, is a RefusedError: Stalled, nothing
// requested. What the account may not do comes back Forbidden from the API server
// and stalls the Sync with reason Forbidden. The drift watches stay the agent's own:
// they only list and watch.
package sync
