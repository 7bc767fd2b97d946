package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tether.dev/tether/api/v1alpha1"
)

// File is one file a files generator matched, as read from git.
type File struct {
	Path string
	Data []byte
}

// Listing is what the controller read from git for one git generator at one
// commit: the directories its include globs match, or the files and their bytes.
// Under ClustersListing, it is what the clusters generators choose from instead.
type Listing struct {
	// Revision is the commit read, as status reports it.
	Revision string
	Dirs     []string
	Files    []File
	// Clusters are the registered clusters that allow the SyncSet's namespace.
	Clusters []Cluster
}

// ClustersListing is the key, among the listings Generate is given, of the
// registered clusters: the controller reads them when a clusters generator
// needs them (UsesClusters).
const ClustersListing = "clusters"

// Cluster is a registered cluster (a Secret labelled tether.dev/cluster=true in
// the agent's namespace) that allows the SyncSet's namespace.
type Cluster struct {
	// Name is the Secret's name: what spec.destination.cluster names.
	Name string
	// Server is its kubeconfig's API server URL, "" when it cannot be read.
	Server string
	// Labels are the Secret's labels, which a generator's selector matches.
	Labels map[string]string
}

// UsesClusters reports whether a generator of spec, nested ones included, is a
// clusters generator.
func UsesClusters(spec *v1alpha1.SyncSetSpec) bool {
	for i := range spec.Generators {
		g := &spec.Generators[i]
		if g.Clusters != nil {
			return true
		}
		for _, c := range children(g) {
			if c.Clusters != nil {
				return true
			}
		}
	}
	return false
}

// GitAt is a git generator and the path that names it ("generators[2].matrix.generators[0]"),
// the key of its Listing.
type GitAt struct {
	Path string
	Git  *v1alpha1.GitGenerator
}

// GitGenerators returns every git generator of spec, nested ones included, in
// order: what the controller must read from git before Generate.
func GitGenerators(spec *v1alpha1.SyncSetSpec) []GitAt {
	var out []GitAt
	for i := range spec.Generators {
		g := &spec.Generators[i]
		at := fmt.Sprintf("generators[%d]", i)
		if g.Git != nil {
			out = append(out, GitAt{Path: at, Git: g.Git})
		}
		for j, c := range children(g) {
			if c.Git != nil {
				out = append(out, GitAt{Path: fmt.Sprintf("%s.%s.generators[%d]", at, kindOf(g), j), Git: c.Git})
			}
		}
	}
	return out
}

func children(g *v1alpha1.SyncSetGenerator) []v1alpha1.SyncSetChildGenerator {
	switch {
	case g.Matrix != nil:
		return g.Matrix.Generators
	case g.Merge != nil:
		return g.Merge.Generators
	}
	return nil
}

func kindOf(g *v1alpha1.SyncSetGenerator) string {
	switch {
	case g.List != nil:
		return "list"
	case g.Git != nil:
		return "git"
	case g.Matrix != nil:
		return "matrix"
	case g.Merge != nil:
		return "merge"
	}
	return "clusters"
}

// Generate returns the parameter sets of every generator of spec, given what the
// controller read for each git generator (by GitAt.Path). A generator whose
// listing is missing is an error, never an empty set: an empty set may delete.
func Generate(spec *v1alpha1.SyncSetSpec, listings map[string]Listing) ([]Set, error) {
	var all []Set
	for i := range spec.Generators {
		at := fmt.Sprintf("generators[%d]", i)
		sets, err := generateOne(at, &spec.Generators[i], listings)
		if err != nil {
			return nil, err
		}
		all = append(all, sets...)
		if len(all) > MaxSets {
			return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("the generators yield more than %d Syncs", MaxSets)}
		}
	}
	return all, nil
}

func generateOne(at string, g *v1alpha1.SyncSetGenerator, listings map[string]Listing) ([]Set, error) {
	switch {
	case g.Matrix != nil:
		return matrix(at+".matrix", g.Matrix, listings)
	case g.Merge != nil:
		return merge(at+".merge", g.Merge, listings)
	}
	return leaf(at, v1alpha1.SyncSetChildGenerator{List: g.List, Git: g.Git, Clusters: g.Clusters}, listings)
}

func leaf(at string, g v1alpha1.SyncSetChildGenerator, listings map[string]Listing) ([]Set, error) {
	switch {
	case g.List != nil:
		return listSets(at+" list", g.List)
	case g.Git != nil:
		l, ok := listings[at]
		if !ok {
			return nil, &Error{Entry: at + " git", Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("%s was not read", g.Git.URL)}
		}
		if len(g.Git.Files) > 0 {
			return fileSets(at+" git", g.Git, l.Files)
		}
		return directorySets(at+" git", g.Git, l.Dirs)
	case g.Clusters != nil:
		l, ok := listings[ClustersListing]
		if !ok {
			return nil, &Error{Entry: at + " clusters", Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("the registered clusters were not read")}
		}
		return clusterSets(at+" clusters", g.Clusters, l.Clusters)
	}
	return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("a generator sets none of list, git, matrix or merge")}
}

// matrix yields every pair of a set of the first generator and one of the
// second; a parameter both give with different values is an error.
func matrix(at string, m *v1alpha1.MatrixGenerator, listings map[string]Listing) ([]Set, error) {
	if len(m.Generators) != 2 {
		return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("a matrix combines exactly two generators")}
	}
	a, err := leaf(fmt.Sprintf("%s.generators[0]", at), m.Generators[0], listings)
	if err != nil {
		return nil, err
	}
	b, err := leaf(fmt.Sprintf("%s.generators[1]", at), m.Generators[1], listings)
	if err != nil {
		return nil, err
	}
	if len(a)*len(b) > MaxSets {
		return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("%d × %d sets is more than %d Syncs", len(a), len(b), MaxSets)}
	}
	out := make([]Set, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			entry := x.Entry + " × " + strings.TrimPrefix(y.Entry, at+".")
			params := make(Params, len(x.Params)+len(y.Params))
			for k, v := range x.Params {
				params[k] = v
			}
			for k, v := range y.Params {
				if old, ok := params[k]; ok && old != v {
					return nil, &Error{Entry: entry, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("both generators set parameter %q, to %q and %q", k, old, v)}
				}
				params[k] = v
			}
			out = append(out, Set{Entry: entry, Params: params, Cluster: cmp.Or(x.Cluster, y.Cluster)})
		}
	}
	return out, nil
}

// clusterSets yields a set per cluster the selector matches, in name order:
// the parameters cluster (its name), cluster.server and cluster.labels.<key>.
func clusterSets(at string, g *v1alpha1.ClustersGenerator, clusters []Cluster) ([]Set, error) {
	sel := labels.Everything()
	if g.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(g.Selector); err != nil {
			return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("selector: %w", err)}
		}
	}
	var out []Set
	for _, c := range slices.SortedFunc(slices.Values(clusters), func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) }) {
		if !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		params := Params{"cluster": c.Name, "cluster.server": c.Server}
		for k, v := range c.Labels {
			params["cluster.labels."+k] = v
		}
		out = append(out, Set{Entry: at + " " + c.Name, Params: params, Cluster: c.Name})
	}
	return out, nil
}

// merge yields the first generator's sets, each overlaid with the set of every
// later generator that has the same values of the merge keys (the last one
// wins where they differ). A later set that matches no set of the first adds
// nothing, as in Argo CD.
func merge(at string, m *v1alpha1.MergeGenerator, listings map[string]Listing) ([]Set, error) {
	var base []Set
	for i, child := range m.Generators {
		sets, err := leaf(fmt.Sprintf("%s.generators[%d]", at, i), child, listings)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			base = sets
			continue
		}
		byKey := map[string]Params{}
		for _, s := range sets {
			k, ok := joinKey(s.Params, m.MergeKeys)
			if !ok {
				continue
			}
			if _, dup := byKey[k]; dup {
				return nil, &Error{Entry: s.Entry, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("another set has the same merge keys %v", m.MergeKeys)}
			}
			byKey[k] = s.Params
		}
		for j := range base {
			k, ok := joinKey(base[j].Params, m.MergeKeys)
			if !ok {
				continue
			}
			if over, found := byKey[k]; found {
				base[j].Params = overlay(base[j].Params, over)
			}
		}
	}
	return base, nil
}

func joinKey(p Params, keys []string) (string, bool) {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := p[k]
		if !ok {
			return "", false
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, "\x00"), true
}

func overlay(base, over Params) Params {
	out := make(Params, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// Keys lists a set's parameter names, sorted; for messages.
func (p Params) Keys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
