package sync

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

func TestParseRevisionReadsWhatStatusWrites(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		in          string
		ref, commit string
		ok          bool
	}{
		{"main@sha1:" + sha, "main", sha, true},
		{"release/v1@sha1:" + sha, "release/v1", sha, true},
		{"v1.2.0@sha1:" + sha, "v1.2.0", sha, true},
		{"sha1:" + sha, "", sha, true},
		{"", "", "", false},
		{"main", "", "", false},
		{"main@sha1:", "", "", false},
		{"mainsha1:" + sha, "", "", false},
	} {
		ref, commit, ok := parseRevision(tc.in)
		if ref != tc.ref || commit != tc.commit || ok != tc.ok {
			t.Errorf("parseRevision(%q) = %q, %q, %v; want %q, %q, %v", tc.in, ref, commit, ok, tc.ref, tc.commit, tc.ok)
		}
	}
}

// rendersAsker records who each render is asked for (source.TenantOf).
type rendersAsker struct {
	Source
	tenants []string
}

func (r *rendersAsker) RenderSelected(ctx context.Context, _ source.Revision, _ string, _ source.Directory, _ source.Helm, _ *source.Decryption) (*source.Snapshot, error) {
	r.tenants = append(r.tenants, source.TenantOf(ctx))
	return &source.Snapshot{}, nil
}

// TestASyncsRendersCountToItsNamespace: the render cache's fair shares count a
// Sync's renders to its namespace, as the git cache counts its fetches.
func TestASyncsRendersCountToItsNamespace(t *testing.T) {
	asker := &rendersAsker{}
	r := &Reconciler{Agent: Agent{Source: asker}}
	obj := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	if _, err := r.renderAgain(t.Context(), obj, Identity{}, nil, source.Revision{}, "."); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asker.tenants, []string{"team-a"}) {
		t.Errorf("renders asked for %q; want them counted to the Sync's namespace, team-a", asker.tenants)
	}
}
