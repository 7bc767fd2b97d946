package importer

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
)

// inCluster is how an Application names the cluster Argo CD runs in.
const inCluster = "https://kubernetes.default.svc"

// cascadeFinalizer is the finalizer that makes Argo CD delete an
// Application's resources with it.
const cascadeFinalizer = "resources-finalizer.argocd.argoproj.io"

// application converts an Argo CD Application; nil when its source cannot
// be carried.
func (c *converter) application(o *unstructured.Unstructured) *v1alpha1.Sync {
	s := newSync(o)
	sp := &s.Spec
	ok := false
	automated := false
	c.fields(o, "spec", spec(o), map[string]func(any){
		"source":      func(v any) { ok = c.appSource(o, s, object(v)) },
		"destination": func(v any) { c.destination(o, s, object(v)) },
		"project": func(v any) {
			if str(v) != "default" {
				c.lose(o, "spec.project", "Tether has no projects: a Sync's namespace and spec.serviceAccountName bound what it may do (docs/multi-tenancy.md)")
			}
		},
		"syncPolicy":        func(v any) { automated = c.syncPolicy(o, s, object(v)) },
		"ignoreDifferences": func(v any) { sp.IgnoreDifferences = c.ignoreDifferences(o, v) },
		"sources": func(any) {
			c.lose(o, "spec.sources", "a Sync has one source: write one Sync per source")
		},
	}, noCounterpart)
	if !automated {
		c.lose(o, "spec.syncPolicy.automated", "not set: Argo CD waits for a manual sync, Tether applies every revision (spec.suspend: true stops it)")
	}
	if !hasFinalizer(o, cascadeFinalizer) {
		// Without Argo CD's finalizer, deleting the Application leaves its resources.
		sp.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	}
	if !ok {
		return nil
	}
	return s
}

// appSource folds spec.source into s.
func (c *converter) appSource(o *unstructured.Unstructured, s *v1alpha1.Sync, src map[string]any) bool {
	sp := &s.Spec
	url, rev := str(src["repoURL"]), str(src["targetRevision"])
	if chart := str(src["chart"]); chart != "" {
		if rev == "HEAD" {
			// Argo CD's default; a chart's version range follows the newest.
			rev = ""
		}
		sp.Source.Chart = &v1alpha1.ChartSource{Repository: url, Name: chart, Version: rev}
		if src["path"] != nil {
			c.lose(o, "spec.source.path", "ignored with spec.source.chart, as Argo CD ignores it")
		}
	} else {
		sp.Source.URL = url
		sp.Source.Path = cleanPath(str(src["path"]))
		sp.Source.Ref = c.gitRevision(o, rev)
	}
	c.fields(o, "spec.source", src, map[string]func(any){
		"repoURL": nil, "targetRevision": nil, "chart": nil, "path": nil,
		"helm":      func(v any) { c.appHelm(o, s, object(v)) },
		"directory": func(v any) { c.directory(o, s, object(v)) },
		"kustomize": func(v any) { c.appKustomize(o, s, object(v)) },
	}, noCounterpart)
	if sp.Source.Chart == nil && sp.Source.Directory == nil {
		// Argo CD reads a plain directory's top level alone unless told
		// to recurse; Tether recurses unless told not to.
		sp.Source.Directory = &v1alpha1.DirectorySpec{Recurse: ptr(false)}
	}
	return url != ""
}

var (
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
	tagPattern    = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)*([-+].*)?$`)
)

// gitRevision reads Argo CD's targetRevision, which may be a branch, a tag,
// a commit or HEAD, as one of Tether's refs.
func (c *converter) gitRevision(o *unstructured.Unstructured, rev string) v1alpha1.GitRef {
	switch {
	case rev == "" || rev == "HEAD":
		c.lose(o, "spec.source.targetRevision", "HEAD: a Sync follows a named branch; main is assumed, change it if the default branch is another")
		return v1alpha1.GitRef{Branch: "main"}
	case commitPattern.MatchString(rev):
		return v1alpha1.GitRef{Commit: rev}
	case tagPattern.MatchString(rev):
		return v1alpha1.GitRef{Tag: rev}
	case strings.ContainsAny(rev, "*<>=~^"):
		return v1alpha1.GitRef{SemVer: rev}
	}
	return v1alpha1.GitRef{Branch: rev}
}

// appHelm folds spec.source.helm into s.
func (c *converter) appHelm(o *unstructured.Unstructured, s *v1alpha1.Sync, h map[string]any) {
	hs := &v1alpha1.HelmSpec{}
	s.Spec.Helm = hs
	var params []any
	c.fields(o, "spec.source.helm", h, map[string]func(any){
		"releaseName": func(v any) { hs.ReleaseName = str(v) },
		"valueFiles":  func(v any) { hs.ValuesFiles = stringList(v) },
		"skipCrds":    func(v any) { hs.SkipCRDs = boolean(v) },
		"valuesObject": func(v any) {
			hs.Values = rawJSON(v)
		},
		"values": func(v any) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(str(v)), &m); err != nil {
				c.lose(o, "spec.source.helm.values", "does not parse as YAML: "+err.Error())
				return
			}
			if hs.Values == nil {
				hs.Values = rawJSON(m)
			}
		},
		"parameters": func(v any) { params = list(v) },
	}, noCounterpart)
	if len(params) > 0 {
		hs.Values = c.parameters(o, hs.Values, params)
	}
}

// parameters sets Argo CD's helm.parameters (Helm's --set: dotted names, \.
// for a dot in a key) into values, over them, as Argo CD gives them
// precedence. A name with a list index is reported, not carried.
func (c *converter) parameters(o *unstructured.Unstructured, values *apiextensionsv1.JSON, params []any) *apiextensionsv1.JSON {
	root := map[string]any{}
	if values != nil {
		_ = json.Unmarshal(values.Raw, &root)
	}
	for i, p := range params {
		m := object(p)
		name, field := str(m["name"]), "spec.source.helm.parameters["+strconv.Itoa(i)+"]"
		if name == "" || strings.ContainsAny(name, "[]") {
			c.lose(o, field, name+": a list index is not carried: write it into spec.helm.values")
			continue
		}
		set(root, splitKey(name), parameterValue(str(m["value"]), boolean(m["forceString"])))
	}
	return rawJSON(root)
}

// splitKey splits a --set name at its dots, \. being a dot of a key.
func splitKey(name string) []string {
	const dot = "\x00"
	parts := strings.Split(strings.ReplaceAll(name, `\.`, dot), ".")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], dot, ".")
	}
	return parts
}

// parameterValue reads a --set value as Helm does: true, false and integers
// are typed, unless forced to a string.
func parameterValue(v string, forceString bool) any {
	if forceString {
		return v
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	return v
}

// set sets value at path in m, making maps on the way.
func set(m map[string]any, path []string, value any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

// directory folds spec.source.directory into s's spec.source.directory,
// recurse false unless set (Argo CD's default).
func (c *converter) directory(o *unstructured.Unstructured, s *v1alpha1.Sync, d map[string]any) {
	dir := &v1alpha1.DirectorySpec{Recurse: ptr(false)}
	c.fields(o, "spec.source.directory", d, map[string]func(any){
		"recurse": func(v any) { dir.Recurse = ptr(boolean(v)) },
		"include": func(v any) { dir.Include = str(v) },
		"exclude": func(v any) { dir.Exclude = str(v) },
	}, noCounterpart)
	if s.Spec.Source.Chart == nil {
		s.Spec.Source.Directory = dir
	}
}

// destination folds spec.destination into s; another cluster is a loss.
func (c *converter) destination(o *unstructured.Unstructured, s *v1alpha1.Sync, d map[string]any) {
	c.fields(o, "spec.destination", d, map[string]func(any){
		"namespace": func(v any) { s.Spec.Destination.Namespace = str(v) },
		"server": func(v any) {
			if str(v) != inCluster {
				c.lose(o, "spec.destination.server", str(v)+": register the cluster with Tether (docs/multi-cluster.md) and name it in spec.destination.cluster")
			}
		},
		// Argo CD's cluster Secrets and Tether's registered clusters are both
		// named: the name carries, the registration is the operator's to copy.
		"name": func(v any) {
			if str(v) != v1alpha1.InCluster {
				s.Spec.Destination.Cluster = str(v)
			}
		},
	}, noCounterpart)
}

// syncPolicy folds spec.syncPolicy into s and reports whether it is automated.
func (c *converter) syncPolicy(o *unstructured.Unstructured, s *v1alpha1.Sync, p map[string]any) bool {
	automated := false
	c.fields(o, "spec.syncPolicy", p, map[string]func(any){
		"automated": func(v any) {
			a := object(v)
			automated = a != nil
			s.Spec.Prune = ptr(boolean(a["prune"]))
			s.Spec.SelfHeal = ptr(boolean(a["selfHeal"]))
			s.Spec.AllowEmpty = boolean(a["allowEmpty"])
			c.fields(o, "spec.syncPolicy.automated", a, map[string]func(any){"prune": nil, "selfHeal": nil, "allowEmpty": nil}, noCounterpart)
		},
		"syncOptions": func(v any) {
			for _, opt := range stringList(v) {
				c.lose(o, "spec.syncPolicy.syncOptions", opt+": "+noCounterpart)
			}
		},
		"retry": func(any) {
			c.lose(o, "spec.syncPolicy.retry", "Tether retries with its own backoff, without limit")
		},
	}, noCounterpart)
	return automated
}

func (c *converter) ignoreDifferences(o *unstructured.Unstructured, v any) []v1alpha1.IgnoreRule {
	var out []v1alpha1.IgnoreRule
	for _, e := range list(v) {
		m := object(e)
		r := v1alpha1.IgnoreRule{Group: str(m["group"]), Kind: str(m["kind"]), Name: str(m["name"]), Namespace: str(m["namespace"]),
			JSONPointers: stringList(m["jsonPointers"]), Managers: stringList(m["managedFieldsManagers"])}
		if r.Group == "*" {
			r.Group = ""
			if r.Kind != "*" {
				c.lose(o, "spec.ignoreDifferences", `group "*" with kind `+r.Kind+": carried as the core group")
			}
		}
		c.fields(o, "spec.ignoreDifferences", m, map[string]func(any){
			"group": nil, "kind": nil, "name": nil, "namespace": nil, "jsonPointers": nil, "managedFieldsManagers": nil,
		}, "Tether ignores JSON pointers and managers, not jq expressions")
		out = append(out, r)
	}
	return out
}

func hasFinalizer(o *unstructured.Unstructured, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
