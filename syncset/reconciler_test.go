package syncset_test

import (
	"context"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"

func TestAMonorepoDrivesSyncsInAndOut(t *testing.T) {
	c, ns := startController(t)
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "mono")
	repo.Commit(t, map[string]string{"apps/a/cm.yaml": cm, "apps/b/cm.yaml": cm, "apps/Legacy_One/cm.yaml": cm, "apps/README.md": "x"}, "three apps")
	ss := newSyncSet(t, ns, "services", repo.URL(), "{{path.basenameNormalized}}", "{{path}}",
		dirs(repo.URL(), v1alpha1.GitDirectory{Path: "apps/*"}, v1alpha1.GitDirectory{Path: "apps/legacy*", Exclude: true}))
	harness.Must(t, c.Create(t.Context(), ss))

	t.Run("a Sync per directory, owned by the SyncSet, in its namespace", func(t *testing.T) {
		got := waitSyncs(t, c, ns, "services", "a", "b", "legacy-one")
		s := got["legacy-one"]
		if s.Spec.Source.Path != "apps/Legacy_One" || s.Namespace != ns {
			t.Errorf("Sync legacy-one: path %q in %s; want apps/Legacy_One in %s", s.Spec.Source.Path, s.Namespace, ns)
		}
		if owner := metav1.GetControllerOf(&s); owner == nil || owner.Kind != "SyncSet" || owner.Name != "services" {
			t.Errorf("Sync legacy-one is owned by %+v; want the SyncSet", owner)
		}
		ss := waitCondition(t, c, ns, "services", v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		if ss.Status.Syncs != 3 || len(ss.Status.Revisions) != 1 {
			t.Errorf("status: %d Syncs, revisions %v; want 3 and one revision", ss.Status.Syncs, ss.Status.Revisions)
		}
	})
	t.Run("an exclude glob is case-sensitive, as path.Match is", func(t *testing.T) {
		// apps/legacy* does not match apps/Legacy_One: it stays, as above.
		before := ss.DeepCopy()
		ss.Spec.Generators[0].Git.Directories[1].Path = "apps/Legacy*"
		harness.Must(t, c.Patch(t.Context(), ss, client.MergeFrom(before)))
		waitSyncs(t, c, ns, "services", "a", "b")
	})
	t.Run("a directory added makes a Sync", func(t *testing.T) {
		repo.Commit(t, map[string]string{"apps/c/cm.yaml": cm}, "add c")
		waitSyncs(t, c, ns, "services", "a", "b", "c")
	})
	t.Run("a directory removed deletes its Sync", func(t *testing.T) {
		repo.Commit(t, map[string]string{"apps/b/cm.yaml": ""}, "remove b")
		waitSyncs(t, c, ns, "services", "a", "c")
	})
	t.Run("a hand edit of a generated Sync is reverted", func(t *testing.T) {
		s := &v1alpha1.Sync{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "a"}, s))
		s.Spec.Source.Path = "elsewhere"
		harness.Must(t, c.Update(t.Context(), s))
		harness.Eventually(t, waitTimeout, "Sync a's path to be apps/a again", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, s)
			return err == nil && s.Spec.Source.Path == "apps/a", err
		})
	})
	t.Run("an emptied listing deletes nothing and says why", func(t *testing.T) {
		before, err := syncsOf(t.Context(), c, ns, "services")
		harness.Must(t, err)
		head := repo.Commit(t, map[string]string{"apps/a/cm.yaml": "", "apps/c/cm.yaml": "", "apps/Legacy_One/cm.yaml": ""}, "empty apps/")
		ss := waitCondition(t, c, ns, "services", v1alpha1.DeletionsHeldCondition, metav1.ConditionTrue, v1alpha1.ReasonDeletionsHeld)
		if !strings.Contains(strings.Join(ss.Status.Revisions, " "), head) {
			t.Fatalf("held at revisions %v, not at the emptied commit %s", ss.Status.Revisions, head)
		}
		after, err := syncsOf(t.Context(), c, ns, "services")
		harness.Must(t, err)
		if joined(names(after)) != joined(names(before)) || ss.Status.Syncs != len(before) {
			t.Errorf("Syncs %v (status %d) after the emptied listing; want %v kept", names(after), ss.Status.Syncs, names(before))
		}
	})
}

func TestAGitFileGeneratorMakesASyncPerFile(t *testing.T) {
	c, ns := startController(t)
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "fleet")
	repo.Commit(t, map[string]string{
		"clusters/eu/config.yaml": "cluster: {name: eu-1, region: europe}\nserviceAccountName: cluster-admin\nnamespace: kube-system\n",
		"clusters/us/config.json": `{"cluster": {"name": "us-1", "region": "america"}}`,
		"app/cm.yaml":             cm,
	}, "two clusters")
	ss := newSyncSet(t, ns, "clusters", repo.URL(), "app-{{cluster.name}}", "app",
		v1alpha1.SyncSetGenerator{Git: &v1alpha1.GitGenerator{URL: repo.URL(), Interval: fast,
			Files: []v1alpha1.GitFile{{Path: "clusters/*/config.yaml"}, {Path: "clusters/*/config.json"}}}})
	ss.Spec.Template.Metadata.Labels = map[string]string{"region": "{{cluster.region}}", "dir": "{{path.basename}}"}
	ss.Spec.Template.Spec.Raw = []byte(`{"source": {"url": "` + repo.URL() + `", "path": "app"}, "serviceAccountName": "deployer"}`)
	harness.Must(t, c.Create(t.Context(), ss))

	got := waitSyncs(t, c, ns, "clusters", "app-eu-1", "app-us-1")
	for name, want := range map[string]map[string]string{
		"app-eu-1": {"region": "europe", "dir": "eu"}, "app-us-1": {"region": "america", "dir": "us"},
	} {
		s := got[name]
		if s.Labels["region"] != want["region"] || s.Labels["dir"] != want["dir"] {
			t.Errorf("Sync %s labels %v; want %v", name, s.Labels, want)
		}
		// The file's serviceAccountName and namespace fields are parameters nobody
		// placed: they change nothing of what the Sync may do.
		if s.Spec.ServiceAccountName != "deployer" || s.Namespace != ns {
			t.Errorf("Sync %s acts as %q in %s; want deployer in %s", name, s.Spec.ServiceAccountName, s.Namespace, ns)
		}
	}
}

func TestAMatrixOfDirectoriesAndAList(t *testing.T) {
	c, ns := startController(t)
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "matrix")
	repo.Commit(t, map[string]string{"apps/web/cm.yaml": cm, "apps/api/cm.yaml": cm}, "two apps")
	ss := newSyncSet(t, ns, "envs", repo.URL(), "{{path.basename}}-{{env}}", "{{path}}",
		v1alpha1.SyncSetGenerator{Matrix: &v1alpha1.MatrixGenerator{Generators: []v1alpha1.SyncSetChildGenerator{
			{Git: &v1alpha1.GitGenerator{URL: repo.URL(), Interval: fast, Directories: []v1alpha1.GitDirectory{{Path: "apps/*"}}}},
			{List: list(`{"env": "staging"}`, `{"env": "prod"}`)},
		}}})
	ss.Spec.Template.Metadata.Labels = map[string]string{"env": "{{env}}"}
	harness.Must(t, c.Create(t.Context(), ss))
	got := waitSyncs(t, c, ns, "envs", "api-prod", "api-staging", "web-prod", "web-staging")
	if s := got["web-prod"]; s.Spec.Source.Path != "apps/web" || s.Labels["env"] != "prod" {
		t.Errorf("web-prod: path %q, env %q", s.Spec.Source.Path, s.Labels["env"])
	}
}

func TestAParameterInAFieldOfPowerIsRefused(t *testing.T) {
	c, ns := startController(t)
	for _, tc := range []struct{ name, spec, field string }{
		{"service-account", `{"source": {"url": "https://git.example.com/x.git"}, "serviceAccountName": "{{sa}}"}`, "spec.serviceAccountName"},
		{"dependency-namespace", `{"source": {"url": "https://git.example.com/x.git"}, "dependsOn": [{"name": "db", "namespace": "{{ns}}"}]}`, "spec.dependsOn[].namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := newSyncSet(t, ns, tc.name, "https://git.example.com/x.git", "{{name}}", ".",
				v1alpha1.SyncSetGenerator{List: list(`{"name": "a", "sa": "cluster-admin", "ns": "kube-system"}`)})
			ss.Spec.Template.Spec.Raw = []byte(tc.spec)
			harness.Must(t, c.Create(t.Context(), ss))
			got := waitCondition(t, c, ns, tc.name, v1alpha1.StalledCondition, metav1.ConditionTrue, v1alpha1.ReasonParameterRefused)
			msg := ""
			for _, cond := range got.Status.Conditions {
				if cond.Type == v1alpha1.StalledCondition {
					msg = cond.Message
				}
			}
			if !strings.Contains(msg, "generators[0] list element 0") || !strings.Contains(msg, tc.field) {
				t.Errorf("message %q; want it to name the generator entry and %s", msg, tc.field)
			}
			if syncs, err := syncsOf(t.Context(), c, ns, tc.name); err != nil || len(syncs) != 0 {
				t.Errorf("Syncs %v (%v); want none made", names(syncs), err)
			}
		})
	}
}

func TestARollingSyncHaltsOnADegradedStep(t *testing.T) {
	c, ns := startController(t)
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "rolling")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": cm}, "one app")
	ss := newSyncSet(t, ns, "rollout", repo.URL(), "app-{{env}}", "app",
		v1alpha1.SyncSetGenerator{List: list(`{"env": "staging"}`, `{"env": "eu"}`, `{"env": "us"}`)})
	ss.Spec.Template.Metadata.Labels = map[string]string{"env": "{{env}}"}
	one := intstr.FromInt32(1)
	ss.Spec.Strategy = &v1alpha1.SyncSetStrategy{RollingSync: &v1alpha1.RollingSyncStrategy{Steps: []v1alpha1.RollingSyncStep{
		{MatchLabels: map[string]string{"env": "staging"}},
		{MatchLabels: map[string]string{"env": "eu"}, MaxUpdate: &one},
		{MatchLabels: map[string]string{"env": "us"}},
	}}}
	harness.Must(t, c.Create(t.Context(), ss))

	// The Sync reconciler is not running here: the test writes what it would
	// report, so that what is under test is the SyncSet's decision alone.
	report := func(t *testing.T, name string, health v1alpha1.HealthStatusCode) {
		t.Helper()
		reportSync(t, c, ns, name, head, health, false)
	}
	held := func(t *testing.T, name string) {
		t.Helper()
		s := &v1alpha1.Sync{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s))
		if !s.Spec.Suspend || s.Annotations[v1alpha1.PinRevisionAnnotation] != "" {
			t.Errorf("Sync %s: suspend %v, pin %q; want it suspended, unpinned, until its step", name, s.Spec.Suspend, s.Annotations[v1alpha1.PinRevisionAnnotation])
		}
	}
	pinned := func(t *testing.T, name string) {
		t.Helper()
		waitPinned(t, c, ns, name, head, nil)
	}

	t.Run("the first step moves, the later ones wait", func(t *testing.T) {
		waitSyncs(t, c, ns, "rollout", "app-eu", "app-staging", "app-us")
		pinned(t, "app-staging")
		got := waitCondition(t, c, ns, "rollout", v1alpha1.RolloutCondition, metav1.ConditionUnknown, v1alpha1.ReasonRolloutProgressing)
		if got.Status.Rollout == nil || got.Status.Rollout.Step != 1 || got.Status.Rollout.Steps != 3 {
			t.Errorf("rollout status %+v; want step 1 of 3", got.Status.Rollout)
		}
		held(t, "app-eu")
		held(t, "app-us")
	})
	t.Run("a step Healthy at the revision lets the next begin", func(t *testing.T) {
		report(t, "app-staging", v1alpha1.HealthHealthy)
		pinned(t, "app-eu")
		held(t, "app-us")
	})
	t.Run("a Degraded step halts the rest with a condition", func(t *testing.T) {
		report(t, "app-eu", v1alpha1.HealthDegraded)
		got := waitCondition(t, c, ns, "rollout", v1alpha1.RolloutCondition, metav1.ConditionFalse, v1alpha1.ReasonRolloutHalted)
		for _, cond := range got.Status.Conditions {
			if cond.Type == v1alpha1.RolloutCondition && !strings.Contains(cond.Message, "app-eu") {
				t.Errorf("Rollout condition %q does not name app-eu", cond.Message)
			}
		}
		held(t, "app-us")
		if got.Status.Rollout == nil || got.Status.Rollout.Step != 2 {
			t.Errorf("rollout status %+v; want step 2", got.Status.Rollout)
		}
	})
}

func TestARollingSyncWithRollbackTakesAFailedStepBack(t *testing.T) {
	c, ns := startController(t)
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "rollback")
	first := repo.Commit(t, map[string]string{"app/cm.yaml": cm}, "one app")
	ss := newSyncSet(t, ns, "rollback", repo.URL(), "app-{{env}}", "app",
		v1alpha1.SyncSetGenerator{List: list(`{"env": "staging"}`, `{"env": "prod"}`)})
	// The Syncs' interval is how soon the SyncSet looks for a new revision.
	ss.Spec.Template.Spec.Raw = []byte(strings.Replace(string(ss.Spec.Template.Spec.Raw), `"interval":"1h"`, `"interval":"1s"`, 1))
	ss.Spec.Template.Metadata.Labels = map[string]string{"env": "{{env}}"}
	ss.Spec.Strategy = &v1alpha1.SyncSetStrategy{RollingSync: &v1alpha1.RollingSyncStrategy{Rollback: true, Steps: []v1alpha1.RollingSyncStep{
		{MatchLabels: map[string]string{"env": "staging"}},
		{MatchLabels: map[string]string{"env": "prod"}},
	}}}
	harness.Must(t, c.Create(t.Context(), ss))

	// As in TestARollingSyncHaltsOnADegradedStep, the test writes what the Sync
	// reconciler would report.
	report := func(t *testing.T, name, commit string, health v1alpha1.HealthStatusCode) {
		t.Helper()
		reportSync(t, c, ns, name, commit, health, false)
	}
	pinned := func(t *testing.T, name, commit string, annotations map[string]string) {
		t.Helper()
		waitPinned(t, c, ns, name, commit, annotations)
	}

	waitSyncs(t, c, ns, "rollback", "app-prod", "app-staging")
	pinned(t, "app-staging", first, nil)
	report(t, "app-staging", first, v1alpha1.HealthHealthy)
	pinned(t, "app-prod", first, nil)
	report(t, "app-prod", first, v1alpha1.HealthHealthy)
	waitCondition(t, c, ns, "rollback", v1alpha1.RolloutCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)

	second := repo.Commit(t, map[string]string{"app/cm.yaml": cm + "data: {b: two}\n"}, "a bad change")
	t.Run("a Sync moving to a new revision notes where it came from", func(t *testing.T) {
		pinned(t, "app-staging", second, map[string]string{v1alpha1.RolloutFromAnnotation: first})
	})
	t.Run("a Degraded Sync takes its step back to where it came from", func(t *testing.T) {
		report(t, "app-staging", second, v1alpha1.HealthDegraded)
		pinned(t, "app-staging", first, map[string]string{v1alpha1.RolledBackAnnotation: second})
		got := waitCondition(t, c, ns, "rollback", v1alpha1.RolloutCondition, metav1.ConditionFalse, v1alpha1.ReasonRolloutRolledBack)
		cond := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.RolloutCondition)
		if !strings.Contains(cond.Message, "app-staging") || !strings.Contains(cond.Message, second[:7]) {
			t.Errorf("Rollout condition %q does not name app-staging and %s", cond.Message, second[:7])
		}
		pinned(t, "app-prod", first, nil)
	})
	t.Run("the step stays back once Healthy again at the old commit", func(t *testing.T) {
		// The report is Ready as well: the SyncSet counts it in its status
		// after writing its Syncs in the same reconcile, so that readySyncs
		// turning 1 proves a reconcile saw the Sync Healthy at the old commit,
		// where it would move it on if it did not hold the step back.
		reportSync(t, c, ns, "app-staging", first, v1alpha1.HealthHealthy, true)
		harness.Eventually(t, waitTimeout, "the SyncSet to count app-staging Ready", func(ctx context.Context) (bool, error) {
			got := &v1alpha1.SyncSet{}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rollback"}, got)
			return err == nil && got.Status.ReadySyncs == 1, err
		})
		s := &v1alpha1.Sync{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-staging"}, s))
		if pin, back := s.Annotations[v1alpha1.PinRevisionAnnotation], s.Annotations[v1alpha1.RolledBackAnnotation]; pin != first || back != second {
			t.Errorf("app-staging is pinned to %s, rolled back from %q; want %s, from %s", pin, back, first, second)
		}
	})
	t.Run("a newer revision rolls out again", func(t *testing.T) {
		third := repo.Commit(t, map[string]string{"app/cm.yaml": cm + "data: {b: three}\n"}, "the fix")
		pinned(t, "app-staging", third, map[string]string{v1alpha1.RolloutFromAnnotation: first, v1alpha1.RolledBackAnnotation: ""})
		waitCondition(t, c, ns, "rollback", v1alpha1.RolloutCondition, metav1.ConditionUnknown, v1alpha1.ReasonRolloutProgressing)
		pinned(t, "app-prod", first, nil)
	})
}

// reportSync writes into Sync name of ns what the Sync reconciler would report
// of commit: applied, with health, and Ready when ready. A conflict with the
// SyncSet's own update of the Sync is tried again.
func reportSync(t *testing.T, c client.Client, ns, name, commit string, health v1alpha1.HealthStatusCode, ready bool) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "Sync "+name+"'s status written", func(ctx context.Context) (bool, error) {
		s := &v1alpha1.Sync{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err
		}
		s.Status.ObservedGeneration = s.Generation
		s.Status.LastAppliedRevision = "main@sha1:" + commit
		s.Status.Health = health
		if ready {
			apimeta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonSucceeded, ObservedGeneration: s.Generation})
		}
		err := c.Status().Update(ctx, s)
		return err == nil, err
	})
}

// waitPinned waits until Sync name of ns is pinned to commit, not suspended,
// with annotations ("" for one it must not carry).
func waitPinned(t *testing.T, c client.Client, ns, name, commit string, annotations map[string]string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "Sync "+name+" pinned to "+commit, func(ctx context.Context) (bool, error) {
		s := &v1alpha1.Sync{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err
		}
		for k, v := range annotations {
			if s.Annotations[k] != v {
				return false, nil
			}
		}
		return !s.Spec.Suspend && s.Annotations[v1alpha1.PinRevisionAnnotation] == commit, nil
	})
}
