// Package agent builds the agent that `tether controller` runs, once, for the
// command and for every test that runs an agent in process: the Source over the
// git cache, the apply client and its apply.Manager, the Watcher and the Trigger,
// the metrics and the Sync state collector, the Tenancy that impersonates a Sync's
// account, the sync Reconciler with its controller options (the last-good
// directory beside the git cache), and the SyncSet controller. A rig that wired
// these by hand left some out (the cache's transform, the last-good directory,
// the Trigger) and tested an agent nobody ran; here what a test may change is
// named (Options.Overrides), and the rest is what ships.
//
// It sits above sync and syncset, which it wires, and below cmd: only cmd/tether
// and the test rigs import it. It owns no behaviour of its own: what a result
// means is sync's, what the flags are is cmd's. The flow:
//
//	ManagerOptions   the manager's scheme and cache (confined to the served
//	                 namespaces and shard, trimmed by sync.CacheTransform); the
//	                 caller adds its listeners and leader election and makes it
//	New              builds the parts over the manager and a rest.Config, and
//	                 registers the controllers and the state collector with it;
//	                 the caller starts the manager
package agent
