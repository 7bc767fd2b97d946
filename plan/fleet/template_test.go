package fleet_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
)

func syncSet(name, spec string, labels map[string]string) *v1alpha1.SyncSet {
	return &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Name: "services", Namespace: "platform", UID: "uid-1"},
		Spec: v1alpha1.SyncSetSpec{Template: v1alpha1.SyncTemplate{
			Metadata: v1alpha1.SyncTemplateMeta{Name: name, Labels: labels},
			Spec:     apiextensionsv1.JSON{Raw: []byte(spec)},
		}},
	}
}

var webSet = fleet.Set{Entry: "generators[0] git directory apps/Web", Params: fleet.Params{
	"path": "apps/Web", "path.basename": "Web", "path.basenameNormalized": "web", "env": "staging", "sa": "cluster-admin", "ns": "kube-system"}}

func TestTheTemplateMakesASyncInTheSyncSetsNamespace(t *testing.T) {
	ss := syncSet("{{path.basenameNormalized}}-{{ env | upper | }}", `{}`, nil)
	ss.Spec.Template.Metadata.Name = "{{path.basename | lower}}-{{ env }}"
	ss.Spec.Template.Metadata.Labels = map[string]string{"env": "{{env}}"}
	ss.Spec.Template.Spec.Raw = []byte(`{"source": {"url": "https://git.example.com/mono.git", "path": "{{path}}"},
		"destination": {"namespace": "{{path.basenameNormalized}}"}, "serviceAccountName": "deployer"}`)
	got, err := fleet.Make(ss, webSet)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "web-staging" || got.Namespace != "platform" {
		t.Errorf("made %s/%s, want platform/web-staging", got.Namespace, got.Name)
	}
	want := v1alpha1.SyncSpec{
		Source:             v1alpha1.SourceSpec{URL: "https://git.example.com/mono.git", Path: "apps/Web"},
		Destination:        v1alpha1.DestinationSpec{Namespace: "web"},
		ServiceAccountName: "deployer",
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"env": "staging", v1alpha1.SyncSetLabel: "services"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid-1" || !*got.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v, want the SyncSet as controller", got.OwnerReferences)
	}
}

func TestATemplateThatWouldMakeABadSyncNamesTheEntry(t *testing.T) {
	const url = `"source": {"url": "https://git.example.com/mono.git"}`
	for _, tc := range []struct {
		name, meta, spec, reason, want string
	}{
		{"a parameter in serviceAccountName is refused", "{{path.basenameNormalized}}", `{` + url + `, "serviceAccountName": "{{sa}}"}`,
			v1alpha1.ReasonParameterRefused, "spec.serviceAccountName takes a placeholder"},
		{"a parameter in a dependency's namespace is refused", "{{path.basenameNormalized}}", `{` + url + `, "dependsOn": [{"name": "a", "namespace": "{{ns}}"}]}`,
			v1alpha1.ReasonParameterRefused, "spec.dependsOn[].namespace takes a placeholder"},
		{"a placeholder with no parameter", "{{path.basenameNormalized}}", `{"source": {"url": "https://git.example.com/mono.git", "path": "{{nope}}"}}`,
			v1alpha1.ReasonGenerateFailed, "{{nope}} names no parameter"},
		{"an unknown function", "{{path.basename | shell}}", `{` + url + `}`, v1alpha1.ReasonGenerateFailed, "no such function"},
		{"a name that is no Kubernetes name", "{{path.basename}}", `{` + url + `}`, v1alpha1.ReasonGenerateFailed, `metadata.name "Web"`},
		{"a destination namespace that is no namespace", "{{path.basenameNormalized}}", `{` + url + `, "destination": {"namespace": "{{path.basename}}"}}`,
			v1alpha1.ReasonGenerateFailed, `spec.destination.namespace "Web"`},
		{"a field a Sync does not have", "{{path.basenameNormalized}}", `{` + url + `, "namespace": "{{ns}}"}`,
			v1alpha1.ReasonGenerateFailed, `unknown field "namespace"`},
		{"the cluster placeholder in a set no clusters generator made is refused", "{{path.basenameNormalized}}", `{` + url + `, "destination": {"cluster": "{{cluster}}"}}`,
			v1alpha1.ReasonParameterRefused, "spec.destination.cluster takes a placeholder"},
		{"a cluster from another parameter is refused", "{{path.basenameNormalized}}", `{` + url + `, "destination": {"cluster": "{{env}}"}}`,
			v1alpha1.ReasonParameterRefused, "spec.destination.cluster takes a placeholder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fleet.Make(syncSet(tc.meta, tc.spec, nil), webSet)
			var fe *fleet.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *fleet.Error", err)
			}
			if fe.Reason != tc.reason || fe.Entry != webSet.Entry || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %s (%s), want %s naming %q and %q", err, fe.Reason, tc.reason, webSet.Entry, tc.want)
			}
		})
	}
}

func TestSubstitutionIsSmall(t *testing.T) {
	p := fleet.Params{"a": "{{b}}", "b": "x", "c": "Hello World_1"}
	for in, want := range map[string]string{
		"{{a}}":               "{{b}}", // a value is never expanded again
		"{{ c | normalize }}": "hello-world-1",
		"{{c|upper}}-{{b}}":   "HELLO WORLD_1-x",
		"no placeholders":     "no placeholders",
		"{{ not a name }}":    "{{ not a name }}",
		"{{b}}{{b}}{{b}}":     "xxx",
	} {
		got, err := fleet.Substitute(in, p)
		if err != nil || got != want {
			t.Errorf("Substitute(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzSubstitute(f *testing.F) {
	f.Add("{{a}}-{{ b | lower }}", "A", "b")
	f.Add("{{{{a}}}}", "{{", "}}")
	f.Fuzz(func(t *testing.T, s, a, b string) {
		out, err := fleet.Substitute(s, fleet.Params{"a": a, "b": b})
		if err == nil && len(out) > len(s)*(1+len(a)+len(b))+len(s) {
			t.Errorf("%q grew to %d bytes", s, len(out))
		}
	})
}

func FuzzFlatten(f *testing.F) {
	f.Add([]byte("a: {b: [1, 2, {c: d}]}\n"))
	f.Add([]byte("- {name: a}\n- {name: b}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gen := &v1alpha1.GitGenerator{Files: []v1alpha1.GitFile{{Path: "*"}}}
		sets, err := fleet.Generate(&v1alpha1.SyncSetSpec{Generators: []v1alpha1.SyncSetGenerator{{Git: gen}}},
			map[string]fleet.Listing{"generators[0]": {Files: []fleet.File{{Path: "f", Data: data}}}})
		if err != nil {
			return
		}
		for _, s := range sets {
			if len(s.Params) > fleet.MaxParams+8 {
				t.Errorf("%d parameters", len(s.Params))
			}
		}
	})
}

func TestTheClusterPlaceholderNamesTheClusterOfTheSet(t *testing.T) {
	set := fleet.Set{Entry: "generators[0] clusters prod-eu", Cluster: "prod-eu",
		// A parameter of the same name (a git file's, in a merge) does not decide.
		Params: fleet.Params{"cluster": "elsewhere", "cluster.labels.region": "eu"}}
	ss := syncSet("web-{{cluster.labels.region}}", `{"source": {"url": "https://git.example.com/mono.git"},
		"destination": {"namespace": "web", "cluster": "{{cluster}}"}}`, nil)
	got, err := fleet.Make(ss, set)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "web-eu" || got.Spec.Destination.Cluster != "prod-eu" {
		t.Errorf("made %s applying to cluster %q, want web-eu applying to prod-eu", got.Name, got.Spec.Destination.Cluster)
	}
}
