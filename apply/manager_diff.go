package apply

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxDiffPaths bounds Change.Diff; a message naming a few fields is as useful as one
// naming hundreds, and status must stay small.
const maxDiffPaths = 20

// Compare returns the fields in which desired (a server-side apply dry-run) differs
// from live, as sorted dotted paths, ignoring metadata noise and status. Because
// desired went through the API server, its defaults are filled in exactly as live's
// are, so defaulting never shows up as a difference. Labels and annotations are
// compared key by key ("metadata.labels.app"); a list is reported as a whole.
func Compare(desired, live *unstructured.Unstructured) []string {
	var paths []string
	diffValues(Normalize(desired).Object, Normalize(live).Object, "", &paths)
	sort.Strings(paths)
	if len(paths) > maxDiffPaths {
		paths = append(paths[:maxDiffPaths], fmt.Sprintf("(and %d more)", len(paths)-maxDiffPaths))
	}
	return paths
}

func diffValues(a, b any, path string, paths *[]string) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if !aIsMap || !bIsMap {
		if !equality.Semantic.DeepEqual(a, b) {
			*paths = append(*paths, strings.TrimPrefix(path, "."))
		}
		return
	}
	for k, av := range am {
		diffValues(av, bm[k], path+"."+k, paths)
	}
	for k, bv := range bm {
		if _, ok := am[k]; !ok {
			diffValues(nil, bv, path+"."+k, paths)
		}
	}
}
