package rollout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// argoStep is one step of the order Argo CD applies an application in (phase,
// wave, kind, name): the objects of a step are created only once those of the
// step before are Healthy.
type argoStep struct {
	name    string
	objects []argoObject
}

// argoObject is a Job, ReplicaSet or Service of a fixture; a Job named with
// generateName is found by its prefix.
type argoObject struct{ kind, name string }

// TestAnArgoCDRepositorySyncsInArgoCDsOrder syncs, unchanged, two applications
// written for Argo CD in the shapes of Argo CD's own examples (testdata/argocd:
// waves, Sync hooks with fixed names, PreSync and PostSync hooks with
// generateName, Argo CD's and Helm's annotations and delete policies), and checks
// from the API server's timestamps that each step was created only after the step
// before it completed (Jobs) or became Ready (ReplicaSets), in Argo CD's order.
func TestAnArgoCDRepositorySyncsInArgoCDsOrder(t *testing.T) {
	a := startAgent(t, agentOptions{})

	t.Run("sync-waves", func(t *testing.T) {
		steps := []argoStep{
			{"PreSync", []argoObject{{"Job", "db-migrate-"}}},
			{"Sync wave 0", []argoObject{{"Service", "api"}, {"ReplicaSet", "api"}}},
			{"Sync wave 1", []argoObject{{"Job", "cache-warm"}}},
			{"Sync wave 2", []argoObject{{"Service", "web"}, {"ReplicaSet", "web"}}},
			{"Sync wave 3", []argoObject{{"Job", "announce"}}},
			{"PostSync", []argoObject{{"Job", "smoke-"}}},
		}
		env := a.syncArgoApp(t, "sync-waves")
		first := env.waitOrdered(t, steps)
		jobs := a.hookJobs(t, env.ns)
		if post := jobs[revisionOf(env.commit)+"/PostSync"]; len(post) != 0 {
			t.Errorf("PostSync Jobs left: %v, want none (smoke- is HookSucceeded)", names(post))
		}
		if n := a.counter(t, "tether_hook_runs_total", env.ns, "PostSync"); n != 1 {
			t.Errorf("tether_hook_runs_total{phase=PostSync} = %v, want 1", n)
		}

		// A new revision runs the hooks again: the Sync hooks of fixed names
		// (BeforeHookCreation) are deleted and created anew, in the same order.
		manifests := strings.Replace(env.manifests, "image: nginx:1.27", "image: nginx:1.28", 1)
		env.commit = env.repo.Commit(t, prefixed(map[string]string{"manifests.yaml": manifests}), "api 1.28")
		second := env.waitOrdered(t, steps)
		for _, name := range []string{"cache-warm", "announce"} {
			if first[name].UID == second[name].UID {
				t.Errorf("Job %s of the second revision is the first's (%s), want it created again", name, first[name].UID)
			}
		}
	})

	t.Run("helm-hooks", func(t *testing.T) {
		env := a.syncArgoApp(t, "helm-hooks")
		env.waitOrdered(t, []argoStep{
			{"PreSync wave -2", []argoObject{{"Job", "seed-"}}},
			{"PreSync wave -1", []argoObject{{"Job", "lock"}}},
			{"Sync wave 0", []argoObject{{"ReplicaSet", "worker"}}},
			{"Sync wave 2", []argoObject{{"Service", "worker"}}},
			{"PostSync", []argoObject{{"Job", "unlock"}}},
		})
		// helm.sh/hook-weight on an object that is no hook is its wave, as in Argo
		// CD: the Service waits for its wave while wave 0 waits for the ReplicaSet.
		st, ok := env.log.at(revisionOf(env.commit), "Sync wave 0")
		if r, _ := resource(st, "Service", "worker"); !ok || !strings.Contains(r.Message, "waits for its wave") {
			t.Errorf("while wave 0 waited (found: %v), Service worker of wave 2 = %+v, want it waiting for its wave", ok, r)
		}
	})
}

// argoApp is a Sync of one application of testdata/argocd.
type argoApp struct {
	a         *agent
	ns        string
	repo      *gitserver.Repo
	manifests string
	commit    string
	sync      *v1alpha1.Sync
	log       *statusLog
	jobs      *jobLog
}

// syncArgoApp commits testdata/argocd/<app>/manifests.yaml as it is and syncs it
// into a new namespace, polling git every two seconds.
func (a *agent) syncArgoApp(t *testing.T, app string) *argoApp {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "argocd", app, "manifests.yaml"))
	harness.Must(t, err)
	env := &argoApp{a: a, ns: controlplane.NewNamespace(t, controlplane.Shared(t).Config()), manifests: string(data)}
	env.jobs = a.recordJobs(t, env.ns)
	repo, commit := startRepo(t, map[string]string{"manifests.yaml": env.manifests})
	env.repo, env.commit = repo, commit
	env.sync = a.newSync(t, env.ns, repo, pollEvery2s)
	env.log = a.recordStatuses(t, env.sync)
	return env
}

// waitOrdered waits until the Sync is Healthy at the app's commit and checks the
// order of steps from the API server's timestamps; it returns the Jobs of the
// run by name (or generateName prefix).
func (e *argoApp) waitOrdered(t *testing.T, steps []argoStep) map[string]*batchv1.Job {
	t.Helper()
	got := e.a.waitHealth(t, e.sync, e.commit, v1alpha1.HealthHealthy)
	if r := got.Status.Run; r == nil || r.Revision != revisionOf(e.commit) || r.State != v1alpha1.RunSucceeded {
		t.Fatalf("status.run = %+v, want the run of %.12s Succeeded", r, e.commit)
	}
	runs := map[string]*batchv1.Job{}
	var prevName string
	var prevDone, start time.Time
	for i, s := range steps {
		var done []time.Time
		var line []string
		waits := false
		for _, o := range s.objects {
			w, d, job := e.times(t, o)
			if job != nil {
				runs[o.name] = job
			}
			if i == 0 {
				start = w
			}
			if w.Before(start) {
				// Not written by this run: the revision does not change it.
				line = append(line, fmt.Sprintf("%s %s unchanged", o.kind, o.name))
				continue
			}
			waits = waits || o.kind != "Service"
			done = append(done, d)
			line = append(line, fmt.Sprintf("%s %s written %s, done %s", o.kind, o.name, clock(w), clock(d)))
			if w.Before(prevDone) {
				t.Errorf("%s %s (%s) written at %s, before %s was done at %s", o.kind, o.name, s.name, clock(w), prevName, clock(prevDone))
			}
		}
		t.Logf("API server timestamps, %.12s %s: %s", e.commit, s.name, strings.Join(line, "; "))
		if len(done) > 0 {
			prevName, prevDone = s.name, latest(done)
		}
		// A step whose objects are not Healthy the moment they are written (a Job,
		// a ReplicaSet changed) is waited for, and the status says so.
		if _, ok := e.log.at(revisionOf(e.commit), s.name); waits && !ok {
			t.Errorf("no status showed %s of %.12s in progress", s.name, e.commit)
		}
	}
	return runs
}

// times is when the API server saw o written by Tether (created, or last
// changed by Tether's apply) and when it was done: a Job's completionTime, the time
// a ReplicaSet's pods became Ready, a Service's write. A Job is the one of the
// current commit's run.
func (e *argoApp) times(t *testing.T, o argoObject) (written, done time.Time, job *batchv1.Job) {
	t.Helper()
	ctx, key := t.Context(), client.ObjectKey{Namespace: e.ns, Name: o.name}
	switch o.kind {
	case "Job":
		job = e.jobs.ofRun(revisionOf(e.commit), o.name)
		if job == nil || job.Status.CompletionTime == nil {
			t.Fatalf("no completed Job %s of the run of %.12s among %v", o.name, e.commit, e.jobs.names())
		}
		return job.CreationTimestamp.Time, job.Status.CompletionTime.Time, job
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		harness.Must(t, e.a.Client.Get(ctx, key, rs))
		pods := &corev1.PodList{}
		harness.Must(t, e.a.Client.List(ctx, pods, client.InNamespace(e.ns), client.MatchingLabels(rs.Spec.Selector.MatchLabels)))
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(done) {
					done = c.LastTransitionTime.Time
				}
			}
		}
		written = appliedAt(t, rs)
		return written, latest([]time.Time{written, done}), nil
	}
	svc := &corev1.Service{}
	harness.Must(t, e.a.Client.Get(ctx, key, svc))
	return appliedAt(t, svc), appliedAt(t, svc), nil
}

// at returns the first status that showed the run of revision in progress at step
// ("PreSync", "Sync wave 2", "PreSync wave -1").
func (l *statusLog) at(revision, step string) (v1alpha1.SyncStatus, bool) {
	return l.find(func(st v1alpha1.SyncStatus) bool {
		r := st.Run
		if r == nil || r.Revision != revision || r.State != v1alpha1.RunRunning {
			return false
		}
		return fmt.Sprintf("%s wave %d", r.Phase, r.Wave) == step || string(r.Phase) == step
	})
}

// jobLog keeps the last state the API server showed of every Job of a
// namespace, deleted ones included (a HookSucceeded hook is gone by the end).
type jobLog struct {
	mu   gosync.Mutex
	jobs map[string]*batchv1.Job // by uid
}

func (a *agent) recordJobs(t *testing.T, ns string) *jobLog {
	t.Helper()
	scheme := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(scheme))
	wc, err := client.NewWithWatch(controlplane.Shared(t).Config(), client.Options{Scheme: scheme})
	harness.Must(t, err)
	w, err := wc.Watch(t.Context(), &batchv1.JobList{}, client.InNamespace(ns))
	harness.Must(t, err)
	log := &jobLog{jobs: map[string]*batchv1.Job{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if j, ok := e.Object.(*batchv1.Job); ok {
				log.mu.Lock()
				log.jobs[string(j.UID)] = j
				log.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return log
}

// ofRun is the Job of the hook run revision named name, or whose generateName was
// name, as last seen.
func (l *jobLog) ofRun(revision, name string) *batchv1.Job {
	var found *batchv1.Job
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range l.jobs {
		if !strings.HasPrefix(j.Annotations[plan.HookRunAnnotation], revision+"/") {
			continue
		}
		if j.Name == name || strings.HasSuffix(name, "-") && strings.HasPrefix(j.Name, name) {
			found = j
		}
	}
	return found
}

func (l *jobLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, j := range l.jobs {
		out = append(out, j.Name+" ("+j.Annotations[plan.HookRunAnnotation]+")")
	}
	return out
}

func latest(ts []time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) }
