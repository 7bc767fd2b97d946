package fleet

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
)

// Bounds of what git can put into parameters: a repository is hostile, and a
// parameter set is held for every Sync of the fleet.
const (
	// MaxParams is the most parameters one set may hold.
	MaxParams = 256
	// MaxValueBytes is the longest parameter value.
	MaxValueBytes = 4096
	// MaxDepth is the deepest nesting of a file's or an element's fields.
	MaxDepth = 8
	// MaxSets is the most parameter sets (Syncs) one SyncSet may yield.
	MaxSets = 5000
)

// Params is one parameter set: name → value.
type Params map[string]string

// Set is one parameter set and the generator entry it came from, which every
// error about the Sync made of it names.
type Set struct {
	Entry  string
	Params Params
	// Cluster is the registered cluster a clusters generator made the set for
	// ("" for none): what a template's spec.destination.cluster "{{cluster}}"
	// becomes, the one placeholder a power field takes.
	Cluster string
}

// pathParams are the parameters of a path: path, path.basename,
// path.basenameNormalized and path[N], one per part.
func pathParams(p string) Params {
	params := Params{
		"path":                    p,
		"path.basename":           path.Base(p),
		"path.basenameNormalized": Normalize(path.Base(p)),
	}
	for i, part := range strings.Split(p, "/") {
		params["path["+strconv.Itoa(i)+"]"] = part
	}
	return params
}

// directorySets yields one set per directory of dirs (those the include globs
// matched) that no exclude glob matches.
func directorySets(entry string, g *v1alpha1.GitGenerator, dirs []string) ([]Set, error) {
	var sets []Set
	for _, d := range sortedUnique(dirs) {
		excluded, err := excludedBy(d, g.Directories)
		if err != nil {
			return nil, &Error{Entry: entry, Reason: v1alpha1.ReasonGenerateFailed, Err: err}
		}
		if !excluded {
			sets = append(sets, Set{Entry: entry + " directory " + d, Params: pathParams(d)})
		}
	}
	return sets, nil
}

func excludedBy(p string, dirs []v1alpha1.GitDirectory) (bool, error) {
	for _, d := range dirs {
		if !d.Exclude {
			continue
		}
		ok, err := path.Match(d.Path, p)
		if err != nil {
			return false, fmt.Errorf("exclude glob %q: %w", d.Path, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// fileSets yields the sets of the files a files generator matched: the file's
// fields flattened, and path (its directory), path.basename,
// path.basenameNormalized, path[N], path.filename and path.filenameNormalized.
// A file holding a list yields a set per element.
func fileSets(entry string, g *v1alpha1.GitGenerator, files []File) ([]Set, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var sets []Set
	for i, f := range files {
		if i > 0 && files[i-1].Path == f.Path {
			continue
		}
		excluded, err := excludedByFile(f.Path, g.Files)
		if err != nil {
			return nil, &Error{Entry: entry, Reason: v1alpha1.ReasonGenerateFailed, Err: err}
		}
		if excluded {
			continue
		}
		at := entry + " file " + f.Path
		elements, err := parseFile(f.Data)
		if err != nil {
			return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: err}
		}
		for n, el := range elements {
			params, err := Flatten(el)
			if err != nil {
				return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: err}
			}
			for k, v := range pathParams(path.Dir(f.Path)) {
				params[k] = v
			}
			params["path.filename"] = path.Base(f.Path)
			params["path.filenameNormalized"] = Normalize(path.Base(f.Path))
			name := at
			if len(elements) > 1 {
				name = fmt.Sprintf("%s element %d", at, n)
			}
			sets = append(sets, Set{Entry: name, Params: params})
		}
	}
	return sets, nil
}

func excludedByFile(p string, files []v1alpha1.GitFile) (bool, error) {
	dirs := make([]v1alpha1.GitDirectory, 0, len(files))
	for _, f := range files {
		dirs = append(dirs, v1alpha1.GitDirectory{Path: f.Path, Exclude: f.Exclude})
	}
	return excludedBy(p, dirs)
}

// parseFile reads a YAML or JSON file: an object, or a list of objects.
func parseFile(data []byte) ([]map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	switch d := doc.(type) {
	case map[string]any:
		return []map[string]any{d}, nil
	case []any:
		out := make([]map[string]any, 0, len(d))
		for i, el := range d {
			m, ok := el.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("element %d is not an object", i)
			}
			out = append(out, m)
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("the file is empty")
	}
	return nil, fmt.Errorf("the file holds neither an object nor a list of objects")
}

// listSets yields a set per element of a list generator.
func listSets(entry string, g *v1alpha1.ListGenerator) ([]Set, error) {
	sets := make([]Set, 0, len(g.Elements))
	for i, raw := range g.Elements {
		at := fmt.Sprintf("%s element %d", entry, i)
		var el map[string]any
		if err := json.Unmarshal(raw.Raw, &el); err != nil || el == nil {
			return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("an element is an object of parameters")}
		}
		params, err := Flatten(el)
		if err != nil {
			return nil, &Error{Entry: at, Reason: v1alpha1.ReasonGenerateFailed, Err: err}
		}
		sets = append(sets, Set{Entry: at, Params: params})
	}
	return sets, nil
}

// Flatten turns an object's fields into parameters, naming nested fields with
// dots ({cluster: {region: eu}} → cluster.region=eu) and list items with their
// index (zones.0), within MaxParams, MaxValueBytes and MaxDepth.
func Flatten(obj map[string]any) (Params, error) {
	params := Params{}
	if err := flatten(params, "", obj, 0); err != nil {
		return nil, err
	}
	return params, nil
}

func flatten(params Params, prefix string, v any, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%s: nested deeper than %d", prefix, MaxDepth)
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, el := range x {
			if err := flatten(params, join(k), el, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for i, el := range x {
			if err := flatten(params, join(strconv.Itoa(i)), el, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if len(params) >= MaxParams {
		return fmt.Errorf("more than %d parameters", MaxParams)
	}
	s := scalar(v)
	if len(s) > MaxValueBytes {
		return fmt.Errorf("%s: a value longer than %d bytes", prefix, MaxValueBytes)
	}
	params[prefix] = s
	return nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// Normalize makes s fit a Kubernetes name as Argo CD's basenameNormalized does:
// lower case, every character other than a-z, 0-9, '-' and '.' replaced by '-',
// no '-' or '.' at either end, at most 253 bytes.
func Normalize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-.")
	if len(out) > 253 {
		out = strings.TrimRight(out[:253], "-.")
	}
	return out
}

func sortedUnique(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
