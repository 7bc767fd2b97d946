package ui

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// Secret values of the diff test: neither may appear in a page, raw or
// base64-encoded.
const (
	liveSecretValue = "live-password-4711"
	gitSecretValue  = "git-password-0815"
)

// diffFixture is a Sync whose status says three objects are OutOfSync (a
// Secret and two ConfigMaps) and one Synced, the live objects, and a renderer
// standing in for git (the real one, `tether diff`'s, is tested through
// `tether ui` in cmd/tether): git changes the Secret's value, a ConfigMap's
// colour, and the colour of the other ConfigMap, which an ignore rule leaves
// alone.
func diffFixture(t *testing.T, c client.Client) (ns string, render Renderer) {
	t.Helper()
	ns = controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	harness.Must(t, c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"password": []byte(liveSecretValue)}}))
	// The ignored one carries the Sync's marks already, as if the agent had
	// applied it: only its colour differs, and the rule ignores it.
	marks := metav1.ObjectMeta{Namespace: ns, Name: "ignored",
		Annotations: map[string]string{v1alpha1.OwnedByAnnotation: ns + "/app"}, Labels: map[string]string{v1alpha1.SyncLabel: v1alpha1.SyncLabelValue(ns, "app")}}
	for _, meta := range []metav1.ObjectMeta{{Namespace: ns, Name: "web"}, marks} {
		harness.Must(t, c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"colour": "blue"}}))
	}
	st := readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Paint it green")
	plan.SetInventory(&st, []v1alpha1.ObjectRef{
		{Version: "v1", Kind: "Secret", Namespace: ns, Name: "creds"},
		{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web"},
		{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "ignored"},
		{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "same"},
	})
	for _, name := range []string{"creds", "web", "ignored"} {
		kind := "ConfigMap"
		if name == "creds" {
			kind = "Secret"
		}
		st.Resources = append(st.Resources, v1alpha1.ResourceStatus{
			ObjectRef: v1alpha1.ObjectRef{Version: "v1", Kind: kind, Namespace: ns, Name: name}, Sync: v1alpha1.SyncStatusOutOfSync, Health: v1alpha1.HealthHealthy,
		})
	}
	newSync(t, c, ns, "app", func(s *v1alpha1.Sync) {
		s.Spec.Destination.Namespace = ns
		s.Spec.IgnoreDifferences = []v1alpha1.IgnoreRule{{Kind: "ConfigMap", Name: "ignored", JSONPointers: []string{"/data/colour"}}}
	}, st)
	render = func(_ context.Context, _ client.Client, _ *rest.Config, sy *v1alpha1.Sync) ([]*unstructured.Unstructured, error) {
		if sy.Name != "app" {
			t.Errorf("rendering Sync %s, want app", sy.Name)
		}
		secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"},
			"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(gitSecretValue))}}
		objs := []*unstructured.Unstructured{{Object: secret}}
		for _, name := range []string{"web", "ignored", "same"} {
			objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name}, "data": map[string]any{"colour": "green"}}})
		}
		return objs, nil
	}
	return ns, render
}

func TestTheDiffOfTheOutOfSyncObjectsMasksSecrets(t *testing.T) {
	c := admin(t)
	ns, render := diffFixture(t, c)
	b := startUIWith(t, Options{Config: controlplane.Shared(t).Config(), Namespace: "default", AllNamespaces: true, Render: render})

	page := b.get("/syncs/" + ns + "/app")
	webKey := v1alpha1.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: "web"}.Key()
	for _, want := range []string{
		`id="diff-all" href="/syncs/` + ns + `/app/diff"`,
		`class="diff-link" href="/syncs/` + ns + `/app/diff?object=` + url.QueryEscape(webKey) + `"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the Sync page lacks %q:\n%s", want, page)
		}
	}

	diff := b.get("/syncs/" + ns + "/app/diff")
	for _, want := range []string{
		`data-object="Secret/` + ns + `/creds"`, `data-value="differs">differs</span>`,
		`<span class="line del">-  password: &#39;***&#39;</span>`, `<span class="line add">&#43;  password: &#39;*** (changed)&#39;</span>`,
		`data-object="ConfigMap/` + ns + `/web"`, `<span class="line del">-  colour: blue</span>`, `<span class="line add">&#43;  colour: green</span>`,
		`data-object="ConfigMap/` + ns + `/ignored"`, `data-value="no difference">no difference</span>`,
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff page lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, `/same"`) {
		t.Errorf("the diff page compares a Synced object:\n%s", diff)
	}
	for _, secret := range []string{liveSecretValue, gitSecretValue} {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(page+diff, form) {
				t.Errorf("a page holds the Secret's value %q", form)
			}
		}
	}

	one := b.get(diffPath(client.ObjectKey{Namespace: ns, Name: "app"}, webKey))
	if strings.Count(one, `class="diff"`) != 1 || !strings.Contains(one, `data-object="ConfigMap/`+ns+`/web"`) {
		t.Errorf("?object= of the ConfigMap shows other than its diff alone:\n%s", one)
	}
	if code, _ := b.do(t.Context(), "GET", "/syncs/"+ns+"/app/diff?object=/ConfigMap/"+ns+"/unknown", nil); code != 404 {
		t.Errorf("an object the Sync does not list: %d, want 404", code)
	}
}

// The diff is a dry-run made with the user's rights: a user who may read the
// Sync but not patch ConfigMaps and Secrets is shown the refusal, not a diff.
func TestTheDiffIsDryRunAsTheUser(t *testing.T) {
	c := admin(t)
	ns, render := diffFixture(t, c)
	grantSyncReading(t, c, "diff-viewer", ns)
	b := startUIWith(t, Options{Config: as(t, "diff-viewer"), Namespace: ns, Render: render})

	diff := b.get("/syncs/" + ns + "/app/diff")
	for _, want := range []string{`data-object="ConfigMap/` + ns + `/web"`, `data-value="failed">failed</span>`, `User &#34;diff-viewer&#34; cannot`} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff page lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, `class="line`) {
		t.Errorf("a user without rights is shown a diff:\n%s", diff)
	}
}

func TestDiffLinesAreClassedAndBounded(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "data": map[string]any{"a": "1"}}}
	desired := live.DeepCopy()
	desired.Object["data"] = map[string]any{"a": "2", "b": strings.Repeat("x\n", maxDiffBytes)}
	kept, err := apply.NewObject(live)
	if err != nil {
		t.Fatal(err)
	}
	lines, truncated, note := diffLinesOf(apply.Change{Object: apply.RefOf(live), Action: apply.ActionConfigured, Live: kept, Desired: desired})
	if !truncated || !strings.Contains(note, "64 KiB") {
		t.Errorf("truncated = %v, note %q; want a cut diff and a note saying so", truncated, note)
	}
	size, classes := 0, map[string]int{}
	for _, l := range lines {
		size += len(l.Text) + 1
		classes[l.Class]++
	}
	if size > maxDiffBytes {
		t.Errorf("%d bytes of diff shown, want at most %d", size, maxDiffBytes)
	}
	if classes["head"] != 2 || classes["hunk"] < 1 || classes["del"] < 1 || classes["add"] < 1 {
		t.Errorf("line classes %v; want two heads, a hunk, deletions and additions", classes)
	}
}
