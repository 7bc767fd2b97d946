package sync_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v4/pkg/chart/common"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/ociregistry"
	"tether.dev/tether/test/rig"
)

// newChartSync creates a Sync of chart webapp (version range version) from
// repo, released under the Sync's name with greeting as its value.
func (a *agent) newChartSync(t *testing.T, ns, name, repo, version, greeting string) *v1alpha1.Sync {
	t.Helper()
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				Chart: &v1alpha1.ChartSource{Repository: repo, Name: "webapp", Version: version},
				// Long enough that only the test (or a watch) triggers reconciles.
				Interval: &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
			Helm:        &v1alpha1.HelmSpec{Values: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"greeting":%q}`, greeting))}},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), s))
	removeWhenDone(t, a, s)
	return s
}

// chartApplied waits until s is Ready at version of webapp, its revision
// naming the package and values' digest.
func (a *agent) chartApplied(t *testing.T, s *v1alpha1.Sync, version string) *v1alpha1.Sync {
	t.Helper()
	want := regexp.MustCompile(`^webapp@` + regexp.QuoteMeta(version) + `\+sha256:[0-9a-f]{64}$`)
	return a.WaitFor(t, s, "Ready at webapp "+version, func(s *v1alpha1.Sync) bool {
		return rig.IsReady(s) && want.MatchString(s.Status.LastAppliedRevision)
	})
}

// webappConfig reads what the chart's ConfigMap of release name says.
func webappConfig(t *testing.T, a *agent, ns, name string) map[string]string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name + "-config"}, cm))
	return cm.Data
}

func TestAPackagedChartIsAppliedFollowedAndItsIndexSharedBetweenSyncs(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := chartrepo.Start(t, chartrepo.Options{})
	webapp := chartrepo.Chart(t, "webapp")
	repo.Publish(t, webapp, "1.0.0")
	repo.Publish(t, webapp, "2.0.0")
	first := a.newChartSync(t, ns, "first", repo.URL, "1.x", "hello")
	second := a.newChartSync(t, ns, "second", repo.URL, "~1.0", "bonjour")

	var firstRev string
	t.Run("both Syncs reach Ready at name@version+sha256:<digest>", func(t *testing.T) {
		firstRev = a.chartApplied(t, first, "1.0.0").Status.LastAppliedRevision
		secondRev := a.chartApplied(t, second, "1.0.0").Status.LastAppliedRevision
		if firstRev == secondRev {
			t.Errorf("both at %s; want other values to make another digest", firstRev)
		}
		for name, greeting := range map[string]string{"first": "hello", "second": "bonjour"} {
			if got := webappConfig(t, a, ns, name); got["greeting"] != greeting || got["chartVersion"] != "1.0.0" {
				t.Errorf("%s's ConfigMap says %v; want greeting %s, chart 1.0.0", name, got, greeting)
			}
		}
	})

	t.Run("a new version in range is followed, the index read once for both", func(t *testing.T) {
		a.Reconcile(t, first)
		a.Reconcile(t, second)
		before := repo.Requests("/index.yaml")
		repo.Publish(t, webapp, "1.0.1")
		// A request for a reconcile reads the index again; the other Sync's
		// next reconcile shares that read.
		requestReconcile(t, a, first)
		a.chartApplied(t, first, "1.0.1")
		a.Reconcile(t, second)
		a.chartApplied(t, second, "1.0.1")
		if got := repo.Requests("/index.yaml") - before; got != 1 {
			t.Errorf("the index was read %d times for two Syncs following 1.0.1; want once", got)
		}
		if got := repo.Requests("/webapp-1.0.1.tgz"); got != 1 {
			t.Errorf("the package of 1.0.1 was read %d times; want once", got)
		}
		if got := webappConfig(t, a, ns, "second")["chartVersion"]; got != "1.0.1" {
			t.Errorf("second's ConfigMap is of chart %s; want 1.0.1", got)
		}
	})
}

func TestAHostileChartRepositoryFailsNamingTheChartAndKeepsTheLastGoodState(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := chartrepo.Start(t, chartrepo.Options{})
	webapp := chartrepo.Chart(t, "webapp")
	repo.Publish(t, webapp, "1.0.0")
	s := a.newChartSync(t, ns, "web", repo.URL, "1.x", "hello")
	good := a.chartApplied(t, s, "1.0.0").Status.LastAppliedRevision

	withFiles := func(version string, n int, content []byte) {
		c := chartrepo.Chart(t, "webapp")
		for i := range n {
			c.Templates = append(c.Templates, &common.File{Name: fmt.Sprintf("templates/extra-%04d.txt", i), Data: content})
		}
		repo.Publish(t, c, version)
	}
	random := make([]byte, 9<<20)
	_, _ = rand.Read(random)
	cases := []struct {
		name    string
		hostile func()
		reason  string
		says    string
	}{
		{"a package over the agent's 8 MiB bound", func() { withFiles("1.1.0", 1, random) }, v1alpha1.ReasonRenderLimitExceeded, "over the limit of 8388608"},
		{"a package of more than 5000 files", func() { withFiles("1.2.0", 5001, []byte("x")) }, v1alpha1.ReasonRenderLimitExceeded, "more than 5000 files"},
		{"an index over the agent's 32 MiB bound", func() {
			repo.SetIndex(append([]byte("apiVersion: v1\nentries: {}\n#"), bytes.Repeat([]byte("#"), 33<<20)...))
		}, v1alpha1.ReasonRenderLimitExceeded, "index.yaml is over the limit"},
		{"a repository refusing the agent, saying why", func() {
			repo.SetIndex(nil)
			repo.RequireBasicAuth("reader", "s3cret")
		}, v1alpha1.ReasonAuthenticationFailed, "HTTP 401 Unauthorized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.hostile()
			requestReconcile(t, a, s)
			got := a.WaitFor(t, s, tc.reason, func(s *v1alpha1.Sync) bool {
				c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == tc.reason && strings.Contains(c.Message, tc.says)
			})
			c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
			if !strings.Contains(c.Message, "webapp") || strings.Contains(c.Message, "secret-refusal") {
				t.Errorf("Ready message %q; want it to name the chart webapp and never quote the repository", c.Message)
			}
			if got.Status.LastAppliedRevision != good {
				t.Errorf("lastAppliedRevision %s; want the last good %s", got.Status.LastAppliedRevision, good)
			}
			// Drift while the repository is hostile is corrected from the
			// last good package, which the agent keeps.
			harness.Must(t, a.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}))
			harness.Eventually(t, waitTimeout, "the deleted ConfigMap applied again from the last good package", func(ctx context.Context) (bool, error) {
				cm := &corev1.ConfigMap{}
				if err := a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil {
					return false, err
				}
				if cm.Data["chartVersion"] != "1.0.0" || cm.Data["greeting"] != "hello" {
					return false, fmt.Errorf("the ConfigMap says %v; want chart 1.0.0", cm.Data)
				}
				return true, nil
			})
		})
	}
}

// A Sync of a range follows a new release at its interval, with no request
// for a reconcile.
func TestAPackagedChartFollowsItsRangeAtItsInterval(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := chartrepo.Start(t, chartrepo.Options{})
	webapp := chartrepo.Chart(t, "webapp")
	repo.Publish(t, webapp, "1.0.0")
	s := a.newChartSync(t, ns, "polling", repo.URL, ">=1.0.0 <2", "hello")
	patch := []byte(`{"spec":{"source":{"interval":"2s"}}}`)
	harness.Must(t, a.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", patch)))
	a.chartApplied(t, s, "1.0.0")
	repo.Publish(t, webapp, "1.3.0")
	repo.Publish(t, webapp, "2.0.0")
	a.chartApplied(t, s, "1.3.0")
	if got := webappConfig(t, a, ns, "polling")["chartVersion"]; got != "1.3.0" {
		t.Errorf("the ConfigMap is of chart %s; want 1.3.0 (2.0.0 is out of range)", got)
	}
}

func TestAChartFromAnOCIRegistryIsAppliedFollowedAndItsTagsSharedBetweenSyncs(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	for _, v := range []string{"1.0.0", "2.0.0"} {
		reg.Push(t, "webapp", v, chartrepo.Package(t, webapp, v))
	}
	first := a.newChartSync(t, ns, "first", reg.Repository, "1.x", "hello")
	second := a.newChartSync(t, ns, "second", reg.Repository, "~1.0", "bonjour")
	t.Run("both Syncs reach Ready at name@version+sha256:<digest>", func(t *testing.T) {
		a.chartApplied(t, first, "1.0.0")
		a.chartApplied(t, second, "1.0.0")
		if got := webappConfig(t, a, ns, "second"); got["greeting"] != "bonjour" || got["chartVersion"] != "1.0.0" {
			t.Errorf("second's ConfigMap says %v; want greeting bonjour, chart 1.0.0", got)
		}
	})
	t.Run("a new version in range is followed, the tags listed once for both", func(t *testing.T) {
		a.Reconcile(t, first)
		a.Reconcile(t, second)
		tags, blobs := reg.Requests("tags"), reg.Requests("blobs")
		reg.Push(t, "webapp", "1.0.1", chartrepo.Package(t, webapp, "1.0.1"))
		requestReconcile(t, a, first)
		a.chartApplied(t, first, "1.0.1")
		a.Reconcile(t, second)
		a.chartApplied(t, second, "1.0.1")
		if got := reg.Requests("tags") - tags; got != 1 {
			t.Errorf("the tags were listed %d times for two Syncs following 1.0.1; want once", got)
		}
		if got := reg.Requests("blobs") - blobs; got != 1 {
			t.Errorf("the layer of 1.0.1 was downloaded %d times; want once", got)
		}
	})
}

func TestAnOCIRegistryTakesTheSecretsCredentialsAndAFailureKeepsTheLastGoodChart(t *testing.T) {
	const password, wrong = "s3cret-pass", "wr0ng-pass"
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	reg.Push(t, "webapp", "1.0.0", chartrepo.Package(t, webapp, "1.0.0"))
	reg.RequireToken("reader", password)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "registry-credentials", Namespace: ns},
		Data:       map[string][]byte{"username": []byte("reader"), "password": []byte(password)},
	}
	harness.Must(t, a.Client.Create(t.Context(), secret))
	s := a.newChartSync(t, ns, "web", reg.Repository, "1.x", "hello")
	refused := func(t *testing.T) *v1alpha1.Sync {
		t.Helper()
		got := a.WaitFor(t, s, "Ready False AuthenticationFailed", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonAuthenticationFailed && strings.Contains(c.Message, "HTTP 401 Unauthorized")
		})
		text := harness.Describe(got) + strings.Join(a.events(), "\n")
		for _, secret := range []string{ociregistry.RefusalBody, password, wrong} {
			if strings.Contains(text, secret) {
				t.Errorf("status or events quote %q: %s", secret, text)
			}
		}
		return got
	}
	t.Run("without credentials the registry's refusal is reported by its status", func(t *testing.T) { refused(t) })

	var good string
	t.Run("the Secret's credentials get a token and the chart", func(t *testing.T) {
		patch := []byte(`{"spec":{"source":{"secretRef":{"name":"registry-credentials"}}}}`)
		harness.Must(t, a.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", patch)))
		good = a.chartApplied(t, s, "1.0.0").Status.LastAppliedRevision
	})

	t.Run("wrong credentials keep the last good chart applied, drift corrected", func(t *testing.T) {
		setPassword(t, a, secret, wrong)
		reg.Push(t, "webapp", "1.1.0", chartrepo.Package(t, webapp, "1.1.0"))
		requestReconcile(t, a, s)
		if got := refused(t).Status.LastAppliedRevision; got != good {
			t.Errorf("lastAppliedRevision %s; want the last good %s", got, good)
		}
		harness.Must(t, a.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}))
		harness.Eventually(t, waitTimeout, "the deleted ConfigMap applied again from the last good package", func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil {
				return false, err
			}
			return cm.Data["chartVersion"] == "1.0.0", nil
		})
	})

	t.Run("fixing the Secret follows the new version", func(t *testing.T) {
		setPassword(t, a, secret, password)
		a.chartApplied(t, s, "1.1.0")
	})
}
