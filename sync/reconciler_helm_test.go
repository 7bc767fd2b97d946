package sync_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// paletteChart is a chart whose one ConfigMap shows the values it rendered with.
var paletteChart = map[string]string{
	"apps/Chart.yaml":  "apiVersion: v2\nname: palette\nversion: 0.1.0\n",
	"apps/values.yaml": "color: red\nsize: small\nowner: chart\nextra: none\n",
	"apps/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}}
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  owner: {{ .Values.owner | quote }}
  extra: {{ .Values.extra | quote }}
  namespace: {{ .Release.Namespace | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  syncs: {{ .Capabilities.APIVersions.Has "tether.dev/v1alpha1/Sync" | quote }}
`,
}

// palette reads the ConfigMap the chart rendered.
func palette(t *testing.T, a *agent, ns, name string) map[string]string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, cm))
	return cm.Data
}

func TestAChartsValuesFromAreReadAsTheSyncAndLayered(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "palette")
	first := repo.Commit(t, paletteChart, "a chart")
	harness.Must(t, a.Client.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "palette-values", Namespace: ns},
		Data:       map[string]string{"values.yaml": "size: large\nowner: configmap\n"},
	}))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "palette-secret", Namespace: ns},
		Data:       map[string][]byte{"custom": []byte("owner: secret\n")},
	}
	harness.Must(t, a.Client.Create(t.Context(), secret))
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
		s.Name = "shop"
		s.Spec.Helm = &v1alpha1.HelmSpec{
			ValuesFrom: []v1alpha1.ValuesReference{
				{Kind: "ConfigMap", Name: "palette-values"},
				{Kind: "Secret", Name: "palette-secret", Key: "custom"},
			},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"extra": "inline"}`)},
		}
	})
	removeWhenDone(t, a, s)

	t.Run("the chart's values, then valuesFrom in order, then the inline values; the cluster's capabilities", func(t *testing.T) {
		a.WaitApplied(t, s, first)
		dc, err := discovery.NewDiscoveryClientForConfig(controlplane.Shared(t).Config())
		harness.Must(t, err)
		version, err := dc.ServerVersion()
		harness.Must(t, err)
		want := map[string]string{"color": "red", "size": "large", "owner": "secret", "extra": "inline", "namespace": ns,
			"kube": version.GitVersion, "syncs": "true"}
		if got := palette(t, a, ns, "shop"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rendered with %v, want %v", got, want)
		}
	})

	t.Run("a change of a ConfigMap's values renders the same commit again", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "palette-values"}, cm))
		cm.Data["values.yaml"] = "size: huge\n"
		harness.Must(t, a.Client.Update(t.Context(), cm))
		harness.Eventually(t, waitTimeout, "the new values applied", func(ctx context.Context) (bool, error) {
			a.reconcileQuietly(ctx, s)
			if got := palette(t, a, ns, "shop")["size"]; got != "huge" {
				return false, fmt.Errorf("size %q", got)
			}
			return true, nil
		})
	})

	t.Run("a Secret gone: ValuesNotFound naming it, the objects kept", func(t *testing.T) {
		harness.Must(t, a.Client.Delete(t.Context(), secret))
		a.reconcileQuietly(t.Context(), s)
		got := a.WaitFor(t, s, "ValuesNotFound", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			return c != nil && c.Reason == v1alpha1.ReasonValuesNotFound
		})
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.SourceReadyCondition)
		if !strings.Contains(c.Message, "Secret "+ns+"/palette-secret key custom") {
			t.Errorf("SourceReady message %q, want it to name the Secret and key", c.Message)
		}
		if palette(t, a, ns, "shop")["size"] != "huge" {
			t.Errorf("the applied objects changed")
		}
	})
}

// TestAHostileChartStallsAndKeepsTheLastGoodState: a commit whose template
// loops without end, or calls itself until memory runs out, is refused within
// the render's bounds (a function's budget, or the render worker's deadline and
// memory), the Sync Stalled with RenderLimitExceeded naming the chart, the limit
// and, where a function's budget stopped it, the template; what the previous
// commit applied stays, and the agent with it.
func TestAHostileChartStallsAndKeepsTheLastGoodState(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "palette")
	first := repo.Commit(t, paletteChart, "a chart")
	// The Sync polls git every two seconds, to see each hostile commit.
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second} })
	removeWhenDone(t, a, s)
	a.WaitApplied(t, s, first)

	// A loop without end meets the worker's deadline or its processor time
	// (the deadline and a second more), whichever comes first: on two cores the
	// collector's threads can spend the processor time before the deadline.
	cases := map[string]struct{ tmpl, says string }{
		"a range over a huge number": {`{{ range 100000000000 }}{{ end }}`, "not finished after|more processor time than a render may"},
		"a 1 GiB repeat":             {`data: {{ repeat 1073741824 "x" }}`, "templates/evil.yaml"},
		"include recursion":          {`{{- define "x" -}}{{ include "x" . }}{{ include "x" . }}{{- end -}}{{ include "x" . }}`, ""},
		"tpl calling itself":         {`{{ tpl .Values.x . }}`, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			commit := repo.Commit(t, map[string]string{"apps/templates/evil.yaml": tc.tmpl, "apps/values.yaml": "color: red\nsize: small\nowner: chart\nextra: none\nx: \"{{ tpl .Values.x . }}\"\n"}, name)
			got := a.WaitFor(t, s, "Stalled at "+commit, func(s *v1alpha1.Sync) bool {
				return strings.HasSuffix(s.Status.SourceRevision, commit) && apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
			})
			c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)
			says := strings.Split(tc.says, "|")
			if !strings.Contains(c.Message, "apps") || !slices.ContainsFunc(says, func(w string) bool { return strings.Contains(c.Message, w) }) {
				t.Errorf("Stalled message %q, want it to name the chart and %q", c.Message, tc.says)
			}
			if name != "include recursion" && c.Reason != v1alpha1.ReasonRenderLimitExceeded {
				t.Errorf("reason %s, want %s", c.Reason, v1alpha1.ReasonRenderLimitExceeded)
			}
			if !strings.HasSuffix(got.Status.LastAppliedRevision, first) || palette(t, a, ns, "app")["color"] != "red" {
				t.Errorf("the last good state moved: %s", harness.Describe(got))
			}
		})
	}
}

// reconcileQuietly runs one reconcile of s, whatever it returns: the test reads
// the outcome from the status.
func (a *agent) reconcileQuietly(ctx context.Context, s *v1alpha1.Sync) {
	_, _ = a.Reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s)})
}

// A packaged chart is accepted by the API (exclusive with a git URL, which the
// CRD's rule checks); one from an OCI registry is refused by the agent, naming
// the field.
func TestAnOCIRepositoryThatIsNoRepositoryPathIsRefused(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	// Upper-case letters are no OCI repository path.
	chart := &v1alpha1.ChartSource{Repository: "oci://registry.example.com/Charts", Name: "podinfo", Version: "6.*"}

	both := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: ns},
		Spec:       v1alpha1.SyncSpec{Source: v1alpha1.SourceSpec{URL: "https://git.example.com/x.git", Chart: chart}},
	}
	if err := a.Client.Create(t.Context(), both); err == nil || !strings.Contains(err.Error(), "exactly one of url or chart or oci") {
		t.Errorf("a Sync with both url and chart: %v, want the CRD's rule to refuse it", err)
	}

	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "packaged", Namespace: ns},
		Spec:       v1alpha1.SyncSpec{Source: v1alpha1.SourceSpec{Chart: chart}, Destination: v1alpha1.DestinationSpec{Namespace: ns}},
	}
	harness.Must(t, a.Client.Create(t.Context(), s))
	removeWhenDone(t, a, s)
	got := a.WaitFor(t, s, "UnsupportedURL", func(s *v1alpha1.Sync) bool {
		c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		return c != nil && c.Reason == v1alpha1.ReasonUnsupportedURL
	})
	c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
	if !strings.Contains(c.Message, "spec.source.chart.repository") || !strings.Contains(c.Message, "podinfo") {
		t.Errorf("Ready message %q, want it to name spec.source.chart.repository and the chart", c.Message)
	}
}
