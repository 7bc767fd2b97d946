// Package health judges whether applied objects work, as pure functions of the
// objects themselves: no cluster access, no logging.
//
// Compute reads one live object and returns a Result: a health code and a message
// that names why. Built-in readers (one file per family: pod.go, workloads.go,
// batch.go, storage.go, network.go, autoscaling.go, apiextensions.go) judge the
// kinds where kstatus is coarse: a container in
// CrashLoopBackOff or ImagePullBackOff, a paused or partitioned rollout, a Deployment
// past its progress deadline, a suspended Job or CronJob, an unbound claim, a load
// balancer with no address, an autoscaler without metrics, an unavailable
// APIService, a CRD whose names conflict. Any other object is judged by its
// conditions (conditions.go: Ready, Stalled, Reconciling), and kstatus
// (sigs.k8s.io/cli-utils) decides the rest.
//
// A workload's pods, when the caller passes them (HasPods says for which kinds),
// sharpen its verdict: a pod that cannot start makes the workload Degraded at once,
// naming pod and container. The caller (sync) lists them; health never reads the
// cluster.
//
// Checker adds a Sync's CEL expressions (spec.healthChecks, cel.go) for the kinds
// they name, compiled once per reconcile and bounded by CostLimit per evaluation.
//
// Aggregate folds many verdicts into the one a Sync reports: the worst wins.
package health
