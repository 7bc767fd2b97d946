package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// A chart's tpl runs here, not in Helm's engine. Helm's own tpl starts a fresh
// execution of the template text it is given, with a fresh tpl inside it, so a
// value that passes itself to tpl ({{ tpl .Values.x . }}) recurses with no
// count until the process's memory or stack gives out, and the message then
// names nothing. Tether gives the engine its own tpl (the engine lets a
// caller's functions replace its own): the same text executed over the same
// templates with the same functions, and a count of how deeply tpl and the
// includes inside it nest, refused past a bound with a message that names the
// template being rendered.
//
// The templates tpl sees are the chart's, parsed a second time (on the first
// tpl only) in the order Helm parses them: deeper paths first, then by name,
// descending, so that a parent chart's define wins over a subchart's of the
// same name, as in Helm.
const (
	// maxTplDepth bounds how deeply tpl calls nest. Charts nest a few levels
	// (a value rendered by a helper that renders a value); each level copies
	// the chart's templates.
	maxTplDepth = 64
	// maxIncludeDepth bounds how often one named template may be included
	// within itself inside tpl, as Helm bounds include outside it.
	maxIncludeDepth = 1000
	// helmWarnStart and helmWarnEnd mark the message of required and fail, by
	// which Helm's engine reports it alone, without the template's trace.
	helmWarnStart, helmWarnEnd = "HELM_ERR_START", "HELM_ERR_END"
)

// tplScope is one render's tpl: the templates it executes over, parsed once,
// and how deeply it is nested.
type tplScope struct {
	chart *chart.Chart
	guard *templateGuard
	funcs template.FuncMap
	// base holds the chart's templates, parsed on the first tpl.
	base     *template.Template
	depth    int
	included map[string]int
}

// newTplScope is the tpl of one render of c, whose templates call funcs (the
// guard's decorated functions).
func newTplScope(c *chart.Chart, g *templateGuard, funcs template.FuncMap) *tplScope {
	s := &tplScope{chart: c, guard: g, funcs: template.FuncMap{}, included: map[string]int{}}
	for name, fn := range funcs {
		s.funcs[name] = fn
	}
	for name, fn := range helmTemplateFuncs() {
		s.funcs[name] = fn
	}
	return s
}

// rootTpl is the tpl the chart's own templates call.
func (s *tplScope) rootTpl() func(string, any) (string, error) {
	return s.tpl(nil)
}

// tpl executes text over parent's templates (the chart's, for nil) and the
// defines of the tpl texts it is nested in.
func (s *tplScope) tpl(parent *template.Template) func(string, any) (string, error) {
	return func(text string, vals any) (string, error) {
		if s.depth >= maxTplDepth {
			return "", overBudgetf("tpl nests more than %d deep in %s", maxTplDepth, templateName(vals))
		}
		if parent == nil {
			base, err := s.templates()
			if err != nil {
				return "", err
			}
			parent = base
		}
		t, err := parent.Clone()
		if err != nil {
			return "", fmt.Errorf("tpl: %w", err)
		}
		t.Funcs(template.FuncMap{"include": s.include(t), "tpl": s.tpl(t)})
		t, err = t.New(parent.Name()).Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl cannot parse %q: %w", quoteable(text), err)
		}
		s.depth++
		defer func() { s.depth-- }()
		var out strings.Builder
		if err := t.Execute(&out, vals); err != nil {
			return "", fmt.Errorf("tpl of %q: %w", quoteable(text), err)
		}
		if err := s.guard.charge("tpl", int64(out.Len())); err != nil {
			return "", err
		}
		// As Helm does: a missing value prints as nothing, not "<no value>".
		return strings.ReplaceAll(out.String(), "<no value>", ""), nil
	}
}

// include executes the named template of t, refusing one included within
// itself more than maxIncludeDepth deep.
func (s *tplScope) include(t *template.Template) func(string, any) (string, error) {
	return func(name string, data any) (string, error) {
		if s.included[name] >= maxIncludeDepth {
			return "", overBudgetf("template %q includes itself more than %d deep inside tpl", name, maxIncludeDepth)
		}
		s.included[name]++
		defer func() { s.included[name]-- }()
		var out strings.Builder
		err := t.ExecuteTemplate(&out, name, data)
		return out.String(), err
	}
}

// templates parses the chart's templates, once.
func (s *tplScope) templates() (*template.Template, error) {
	if s.base != nil {
		return s.base, nil
	}
	files := map[string]string{}
	collectTemplates(s.chart, files)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.SortFunc(names, helmParseOrder)
	t := template.New("gotpl").Option("missingkey=zero")
	t.Funcs(s.funcs).Funcs(template.FuncMap{"include": s.include(t), "tpl": s.tpl(t)})
	for _, name := range names {
		if _, err := t.New(name).Parse(files[name]); err != nil {
			return nil, fmt.Errorf("tpl cannot parse the chart's template %s: %w", name, err)
		}
	}
	s.base = t
	return t, nil
}

// collectTemplates gathers c's templates and its subcharts', by the names
// Helm gives them (the chart's path among its parents, then the file's), a
// library chart's partials only.
func collectTemplates(c *chart.Chart, files map[string]string) {
	for _, dep := range c.Dependencies() {
		collectTemplates(dep, files)
	}
	library := c.Metadata != nil && c.Metadata.Type == "library"
	for _, f := range c.Templates {
		if f == nil || (library && !strings.HasPrefix(path.Base(f.Name), "_")) {
			continue
		}
		files[path.Join(c.ChartFullPath(), f.Name)] = string(f.Data)
	}
}

// helmParseOrder orders template names as Helm's engine parses them: more
// path segments first, then by name, descending.
func helmParseOrder(a, b string) int {
	if ca, cb := strings.Count(a, "/"), strings.Count(b, "/"); ca != cb {
		return cb - ca
	}
	return strings.Compare(b, a)
}

// maxQuotedText bounds how much of a tpl text its errors quote: each level of
// a nested tpl wraps the errors of those inside it.
const maxQuotedText = 80

func quoteable(text string) string {
	if len(text) <= maxQuotedText {
		return text
	}
	return text[:maxQuotedText] + "…"
}

// templateName is the name of the template being rendered, which Helm puts
// into the values a template is given (.Template.Name), when tpl was given
// them.
func templateName(vals any) string {
	top, ok := asMap(vals)
	if !ok {
		return "a chart's template"
	}
	tmpl, ok := asMap(top["Template"])
	if !ok {
		return "a chart's template"
	}
	if name, ok := tmpl["Name"].(string); ok && name != "" {
		return name
	}
	return "a chart's template"
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case common.Values:
		return m, true
	}
	return nil, false
}

// helmTemplateFuncs are Helm's own functions other than include and tpl, as
// they behave in `helm template`: the parsers, which put a parse error into
// what they return; required and fail, whose message Helm's engine reports
// alone; lookup and getHostByName, which answer nothing without a cluster.
// Each is a few lines, written here because Helm does not export its map.
func helmTemplateFuncs() template.FuncMap {
	return template.FuncMap{
		"fromYaml": func(s string) map[string]any {
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(s), &m); err != nil {
				m["Error"] = err.Error()
			}
			return m
		},
		"fromYamlArray": func(s string) []any {
			a := []any{}
			if err := yaml.Unmarshal([]byte(s), &a); err != nil {
				a = []any{err.Error()}
			}
			return a
		},
		"fromJson": func(s string) map[string]any {
			m := map[string]any{}
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				m["Error"] = err.Error()
			}
			return m
		},
		"fromJsonArray": func(s string) []any {
			a := []any{}
			if err := json.Unmarshal([]byte(s), &a); err != nil {
				a = []any{err.Error()}
			}
			return a
		},
		"fromToml": func(s string) map[string]any {
			m := map[string]any{}
			if err := toml.Unmarshal([]byte(s), &m); err != nil {
				m["Error"] = err.Error()
			}
			return m
		},
		"required": func(msg string, v any) (any, error) {
			if s, ok := v.(string); v == nil || (ok && s == "") {
				return v, errors.New(helmWarnStart + msg + helmWarnEnd)
			}
			return v, nil
		},
		"fail": func(msg string) (string, error) {
			return "", errors.New(helmWarnStart + msg + helmWarnEnd)
		},
		"lookup": func(string, string, string, string) (map[string]any, error) {
			return map[string]any{}, nil
		},
		"getHostByName": func(string) string { return "" },
	}
}
