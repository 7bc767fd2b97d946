package sync_test

import (
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

// TestASyncMeetsTheCommitPushedJustBeforeIt is what a user does every day: push
// a new app to a repository whose other apps the agent already polls, and create
// its Sync at once. The agent holds a ref listing from before the push (the
// other Sync's poll, shared for most of an hour here); the new Sync must not be
// answered from it.
func TestASyncMeetsTheCommitPushedJustBeforeIt(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	first := repo.Commit(t, map[string]string{"one/cm.yaml": configMapYAML("one", "hello"), "spare/cm.yaml": configMapYAML("spare", "hello")}, "one app")
	one := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "one", "one" })
	a.WaitApplied(t, one, first)
	statuses := watchSyncs(t, ns)

	t.Run("a Sync created right after a push applies it, without an error on the way", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"two/cm.yaml": configMapYAML("two", "hello")}, "a second app")
		two := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "two", "two" })
		statuses.untilApplied(t, two.Name, second)
	})

	t.Run("a Sync created right after a push to a path that was there applies the push first", func(t *testing.T) {
		// The path is in the cached listing's commit too: only a listing newer
		// than the Sync tells that a newer commit exists.
		third := repo.Commit(t, map[string]string{"spare/cm.yaml": configMapYAML("spare", "bonjour")}, "spare says bonjour")
		spare := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "spare", "spare" })
		if applied := statuses.untilApplied(t, spare.Name, third); len(applied) != 1 {
			t.Errorf("Sync spare applied %v; want only %s, the commit pushed before it was created", applied, third)
		}
	})

	t.Run("a Sync whose path is changed right after a push applies it, without an error on the way", func(t *testing.T) {
		// The new path holds the old one's object too: nothing leaves git, so no
		// prune limit stands in the way.
		moved := repo.Commit(t, map[string]string{"three/one.yaml": configMapYAML("one", "hello"), "three/cm.yaml": configMapYAML("three", "hello")}, "a third app")
		changed := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(one), changed))
		changed.Spec.Source.Path = "three"
		harness.Must(t, a.Client.Update(t.Context(), changed))
		statuses.untilApplied(t, one.Name, moved)
	})

	t.Run("a Sync whose path is changed right after a push to a path that was there applies the push first", func(t *testing.T) {
		// The new path is in the cached listing's commit too, so only a listing
		// newer than the change tells that a newer commit exists; and the Sync
		// was created before that listing was made, so only the time of the
		// change (in its managedFields) says the listing is too old. The new path
		// holds the old one's object too, so nothing is pruned.
		before := repo.Commit(t, map[string]string{"six/cm.yaml": configMapYAML("six", "hello"), "seven/six.yaml": configMapYAML("six", "hello"), "seven/cm.yaml": configMapYAML("seven", "hello"), "eight/cm.yaml": configMapYAML("eight", "hello")}, "three more apps")
		mover := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "mover", "six" })
		statuses.untilApplied(t, mover.Name, before)
		// The listing the agent holds must be newer than the mover's creation
		// (whole seconds, plus the second the agent adds): another new Sync,
		// created once that second has passed on the clock, makes one. What is
		// awaited is the clock itself (the API server's timestamps), and what
		// follows asserts that something does happen, not that nothing did.
		created := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(mover), created))
		select {
		case <-time.After(time.Until(created.CreationTimestamp.Add(2 * time.Second))):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
		later := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "later", "eight" })
		statuses.untilApplied(t, later.Name, before)
		after := repo.Commit(t, map[string]string{"seven/cm.yaml": configMapYAML("seven", "bonjour")}, "seven says bonjour")
		changed := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(mover), changed))
		changed.Spec.Source.Path = "seven"
		harness.Must(t, a.Client.Update(t.Context(), changed))
		statuses.untilApplied(t, mover.Name, after)
	})

	t.Run("a path missing at a cached listing is looked for in a fresh one before it is called missing", func(t *testing.T) {
		// The Sync exists before its path does: it fails (Stalled until git
		// changes), and its own listing is cached for most of an hour. Once the
		// path is pushed, its next reconcile (a resync, here run directly) must
		// find it without waiting for that listing to expire.
		early := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "early", "four" })
		a.WaitFor(t, early, "the path reported missing", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return c != nil && c.Status == "False" && strings.Contains(c.Message, "no such directory")
		})
		fourth := repo.Commit(t, map[string]string{"four/cm.yaml": configMapYAML("four", "hello")}, "the path it waits for")
		a.Reconcile(t, early)
		a.WaitApplied(t, early, fourth)
	})

	t.Run("a Sync that failed before applying anything holds no finalizer", func(t *testing.T) {
		// Without one, no reconcile after the failure searches every kind for
		// objects of an inventory that never existed.
		lost := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "lost", "nowhere" })
		got := a.WaitFor(t, lost, "the path reported missing", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return c != nil && c.Status == "False"
		})
		if controllerutil.ContainsFinalizer(got, v1alpha1.Finalizer) {
			t.Errorf("finalizers %v on a Sync that applied nothing; want none yet", got.Finalizers)
		}
	})
}

// syncStatuses is a watch on the Syncs of a namespace, read as a test goes.
type syncStatuses struct{ w watch.Interface }

func watchSyncs(t *testing.T, ns string) *syncStatuses {
	t.Helper()
	scheme := runtime.NewScheme()
	harness.Must(t, v1alpha1.AddToScheme(scheme))
	c, err := client.NewWithWatch(controlplane.Shared(t).Config(), client.Options{Scheme: scheme})
	harness.Must(t, err)
	w, err := c.Watch(t.Context(), &v1alpha1.SyncList{}, client.InNamespace(ns))
	harness.Must(t, err)
	t.Cleanup(w.Stop)
	return &syncStatuses{w: w}
}

// untilApplied reads every version of Sync name the API server stores until it
// is Ready at commit, and fails the test at any version that reports an error:
// Ready False, or Stalled. It returns the revisions the versions said were
// applied, in order, each once.
func (s *syncStatuses) untilApplied(t *testing.T, name, commit string) (applied []string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-s.w.ResultChan():
			if !ok {
				t.Fatal("the watch of Syncs ended")
			}
			got, isSync := ev.Object.(*v1alpha1.Sync)
			if !isSync || got.Name != name {
				continue
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
			if ready != nil && ready.Status == "False" || apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.StalledCondition) {
				t.Fatalf("Sync %s reported an error before it applied %s: %s", name, commit, harness.Describe(got))
			}
			if rev := got.Status.LastAppliedRevision; rev != "" && (len(applied) == 0 || applied[len(applied)-1] != rev) {
				applied = append(applied, rev)
			}
			if strings.HasSuffix(got.Status.LastAppliedRevision, commit) && rig.IsReady(got) {
				return applied
			}
		case <-deadline:
			t.Fatalf("Sync %s was not Ready at %s within %s", name, commit, waitTimeout)
		}
	}
}
