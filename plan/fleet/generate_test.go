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

func elements(raw ...string) *v1alpha1.ListGenerator {
	g := &v1alpha1.ListGenerator{}
	for _, r := range raw {
		g.Elements = append(g.Elements, apiextensionsv1.JSON{Raw: []byte(r)})
	}
	return g
}

func dirsGen(globs ...string) *v1alpha1.GitGenerator {
	g := &v1alpha1.GitGenerator{URL: "https://git.example.com/mono.git"}
	for _, p := range globs {
		exclude := strings.HasPrefix(p, "!")
		g.Directories = append(g.Directories, v1alpha1.GitDirectory{Path: strings.TrimPrefix(p, "!"), Exclude: exclude})
	}
	return g
}

func TestGeneratorsYieldParameterSets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gens     []v1alpha1.SyncSetGenerator
		listings map[string]fleet.Listing
		want     []fleet.Set
		wantErr  string
	}{{
		name:     "a directory gives its path, basename, normalized basename and parts",
		gens:     []v1alpha1.SyncSetGenerator{{Git: dirsGen("apps/*", "!apps/legacy")}},
		listings: map[string]fleet.Listing{"generators[0]": {Dirs: []string{"apps/Web_UI", "apps/legacy", "apps/api", "apps/api"}}},
		want: []fleet.Set{
			{Entry: "generators[0] git directory apps/Web_UI", Params: fleet.Params{"path": "apps/Web_UI", "path.basename": "Web_UI", "path.basenameNormalized": "web-ui", "path[0]": "apps", "path[1]": "Web_UI"}},
			{Entry: "generators[0] git directory apps/api", Params: fleet.Params{"path": "apps/api", "path.basename": "api", "path.basenameNormalized": "api", "path[0]": "apps", "path[1]": "api"}},
		},
	}, {
		name:     "a file gives its fields flattened with dots, and its directory's path",
		gens:     []v1alpha1.SyncSetGenerator{{Git: &v1alpha1.GitGenerator{Files: []v1alpha1.GitFile{{Path: "clusters/*/config.yaml"}}}}},
		listings: map[string]fleet.Listing{"generators[0]": {Files: []fleet.File{{Path: "clusters/eu/config.yaml", Data: []byte("cluster: {region: eu-west, zones: [a, b]}\nreplicas: 3\ncanary: true\n")}}}},
		want: []fleet.Set{{Entry: "generators[0] git file clusters/eu/config.yaml", Params: fleet.Params{
			"cluster.region": "eu-west", "cluster.zones.0": "a", "cluster.zones.1": "b", "replicas": "3", "canary": "true",
			"path": "clusters/eu", "path.basename": "eu", "path.basenameNormalized": "eu", "path[0]": "clusters", "path[1]": "eu",
			"path.filename": "config.yaml", "path.filenameNormalized": "config.yaml"}}},
	}, {
		name:     "a file that does not parse names the file",
		gens:     []v1alpha1.SyncSetGenerator{{Git: &v1alpha1.GitGenerator{Files: []v1alpha1.GitFile{{Path: "*.yaml"}}}}},
		listings: map[string]fleet.Listing{"generators[0]": {Files: []fleet.File{{Path: "bad.yaml", Data: []byte("a: [")}}}},
		wantErr:  "generators[0] git file bad.yaml: not YAML or JSON",
	}, {
		name: "a list gives its elements",
		gens: []v1alpha1.SyncSetGenerator{{List: elements(`{"name":"a","env":"staging"}`)}},
		want: []fleet.Set{{Entry: "generators[0] list element 0", Params: fleet.Params{"name": "a", "env": "staging"}}},
	}, {
		name: "a matrix gives every pair",
		gens: []v1alpha1.SyncSetGenerator{{Matrix: &v1alpha1.MatrixGenerator{Generators: []v1alpha1.SyncSetChildGenerator{
			{Git: dirsGen("apps/*")}, {List: elements(`{"env":"staging"}`, `{"env":"prod"}`)}}}}},
		listings: map[string]fleet.Listing{"generators[0].matrix.generators[0]": {Dirs: []string{"apps/web"}}},
		want: []fleet.Set{
			{Entry: "generators[0].matrix.generators[0] git directory apps/web × generators[1] list element 0", Params: fleet.Params{"path": "apps/web", "path.basename": "web", "path.basenameNormalized": "web", "path[0]": "apps", "path[1]": "web", "env": "staging"}},
			{Entry: "generators[0].matrix.generators[0] git directory apps/web × generators[1] list element 1", Params: fleet.Params{"path": "apps/web", "path.basename": "web", "path.basenameNormalized": "web", "path[0]": "apps", "path[1]": "web", "env": "prod"}},
		},
	}, {
		name: "a matrix whose generators disagree on a parameter is refused",
		gens: []v1alpha1.SyncSetGenerator{{Matrix: &v1alpha1.MatrixGenerator{Generators: []v1alpha1.SyncSetChildGenerator{
			{List: elements(`{"env":"a"}`)}, {List: elements(`{"env":"b"}`)}}}}},
		wantErr: `both generators set parameter "env"`,
	}, {
		name: "a merge overlays the later generators' sets on the first's by key",
		gens: []v1alpha1.SyncSetGenerator{{Merge: &v1alpha1.MergeGenerator{MergeKeys: []string{"name"}, Generators: []v1alpha1.SyncSetChildGenerator{
			{List: elements(`{"name":"a","size":"s"}`, `{"name":"b","size":"s"}`)}, {List: elements(`{"name":"b","size":"xl"}`, `{"name":"z","size":"m"}`)}}}}},
		want: []fleet.Set{
			{Entry: "generators[0].merge.generators[0] list element 0", Params: fleet.Params{"name": "a", "size": "s"}},
			{Entry: "generators[0].merge.generators[0] list element 1", Params: fleet.Params{"name": "b", "size": "xl"}},
		},
	}, {
		name:    "a git generator not read is an error, never an empty set",
		gens:    []v1alpha1.SyncSetGenerator{{Git: dirsGen("apps/*")}},
		wantErr: "generators[0] git: https://git.example.com/mono.git was not read",
	}, {
		name:    "the registered clusters not read are an error, never an empty set",
		gens:    []v1alpha1.SyncSetGenerator{{Clusters: &v1alpha1.ClustersGenerator{}}},
		wantErr: "generators[0] clusters: the registered clusters were not read",
	}, {
		name: "the clusters generator gives each cluster the selector matches, by name",
		gens: []v1alpha1.SyncSetGenerator{{Clusters: &v1alpha1.ClustersGenerator{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}},
		listings: map[string]fleet.Listing{fleet.ClustersListing: {Clusters: []fleet.Cluster{
			{Name: "prod-us", Server: "https://us.example.com", Labels: map[string]string{"env": "prod", "region": "us"}},
			{Name: "staging", Server: "https://staging.example.com", Labels: map[string]string{"env": "staging"}},
			{Name: "prod-eu", Labels: map[string]string{"env": "prod", "region": "eu"}},
		}}},
		want: []fleet.Set{
			{Entry: "generators[0] clusters prod-eu", Cluster: "prod-eu",
				Params: fleet.Params{"cluster": "prod-eu", "cluster.server": "", "cluster.labels.env": "prod", "cluster.labels.region": "eu"}},
			{Entry: "generators[0] clusters prod-us", Cluster: "prod-us",
				Params: fleet.Params{"cluster": "prod-us", "cluster.server": "https://us.example.com", "cluster.labels.env": "prod", "cluster.labels.region": "us"}},
		},
	}, {
		name: "a matrix of clusters and directories keeps the cluster of each set",
		gens: []v1alpha1.SyncSetGenerator{{Matrix: &v1alpha1.MatrixGenerator{Generators: []v1alpha1.SyncSetChildGenerator{
			{Clusters: &v1alpha1.ClustersGenerator{}}, {List: elements(`{"app":"web"}`)}}}}},
		listings: map[string]fleet.Listing{fleet.ClustersListing: {Clusters: []fleet.Cluster{{Name: "prod"}}}},
		want: []fleet.Set{
			{Entry: "generators[0].matrix.generators[0] clusters prod × generators[1] list element 0", Cluster: "prod",
				Params: fleet.Params{"cluster": "prod", "cluster.server": "", "app": "web"}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fleet.Generate(&v1alpha1.SyncSetSpec{Generators: tc.gens}, tc.listings)
			if tc.wantErr != "" {
				var fe *fleet.Error
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want a *fleet.Error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGitGeneratorsAreFoundWhereverTheyNest(t *testing.T) {
	spec := &v1alpha1.SyncSetSpec{Generators: []v1alpha1.SyncSetGenerator{
		{List: elements(`{}`)},
		{Git: dirsGen("a/*")},
		{Matrix: &v1alpha1.MatrixGenerator{Generators: []v1alpha1.SyncSetChildGenerator{{List: elements(`{}`)}, {Git: dirsGen("b/*")}}}},
	}}
	var paths []string
	for _, g := range fleet.GitGenerators(spec) {
		paths = append(paths, g.Path)
	}
	if diff := cmp.Diff([]string{"generators[1]", "generators[2].matrix.generators[1]"}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

func TestHostileFilesAreBounded(t *testing.T) {
	deep := strings.Repeat("{a: ", 20) + "1" + strings.Repeat("}", 20)
	wide := &strings.Builder{}
	for i := 0; i < fleet.MaxParams+1; i++ {
		wide.WriteString("k" + strings.Repeat("x", 3) + string(rune('a'+i%26)) + strings.Repeat("y", i/26) + ": 1\n")
	}
	long := "a: " + strings.Repeat("x", fleet.MaxValueBytes+1)
	for name, data := range map[string]string{"deep": deep, "wide": wide.String(), "long": long, "scalar": "42", "empty": ""} {
		t.Run(name, func(t *testing.T) {
			gen := &v1alpha1.GitGenerator{Files: []v1alpha1.GitFile{{Path: "*.yaml"}}}
			_, err := fleet.Generate(&v1alpha1.SyncSetSpec{Generators: []v1alpha1.SyncSetGenerator{{Git: gen}}},
				map[string]fleet.Listing{"generators[0]": {Files: []fleet.File{{Path: "f.yaml", Data: []byte(data)}}}})
			if err == nil || !strings.Contains(err.Error(), "file f.yaml") {
				t.Errorf("got %v, want an error naming the file", err)
			}
		})
	}
}
