package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v3"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// Budgets of one chart's template execution, counted inside Helm's engine
// without touching a chart's templates: the templates run as Helm parses them,
// and every function they call (sprig's, Helm's serialisers, print and printf)
// is Tether's decoration of the same function. A decorated function charges
// what it returns to the render's function budget, and those that can make far
// more than they are given check first: repeat, until, indent, replace and
// printf's widths by their arguments, and every function that writes a value
// out whole (toJson, toYaml, print, join, deepCopy, …) by the size the value
// expands to, counted once per distinct map or list, so that a map that holds
// one map twice, 24 times over, is refused before anything large is built.
//
// tpl is Tether's too (helm_tpl.go), counting how deeply it nests.
// What the engine does itself (executing a range, printing a value, include,
// which Helm bounds to 1,000 levels per name) is bounded by the render worker
// around it (source/wall): its memory, its stack (ErrRenderDepth), its
// deadline.
const (
	// templateOutputFactor: the functions may make this many times
	// Options.MaxRenderedBytes in all.
	templateOutputFactor = 4
	// defaultTemplateOutput bounds what functions make when MaxRenderedBytes does not.
	defaultTemplateOutput = 64 << 20
	// maxFormatWidth bounds a width or precision in printf's format.
	maxFormatWidth = 4096
	// maxListItems bounds the lists until and untilStep make.
	maxListItems = 1_000_000
)

// templateGuard counts what one render's template functions make.
type templateGuard struct {
	made, max int64
}

func newTemplateGuard(opts Options) *templateGuard {
	g := &templateGuard{max: defaultTemplateOutput}
	if opts.MaxRenderedBytes > 0 {
		g.max = templateOutputFactor * opts.MaxRenderedBytes
	}
	return g
}

// charge counts n bytes made by name.
func (g *templateGuard) charge(name string, n int64) error {
	g.made += n
	if g.made > g.max {
		return overBudgetf("the templates' functions made more than %d bytes (at %s)", g.max, name)
	}
	return nil
}

// fits checks that a value of n bytes that name is about to make fits what is left.
func (g *templateGuard) fits(name string, n int64) error {
	if n < 0 || g.made+n > g.max {
		return overBudgetf("%s would make more than the %d bytes the templates' functions may still make", name, max(g.max-g.made, 0))
	}
	return nil
}

// expands are the functions that write out or copy whole every value they are
// given: each argument's expanded size must fit before they run.
var expands = map[string]bool{
	"toJson": true, "mustToJson": true, "toPrettyJson": true, "mustToPrettyJson": true,
	"toRawJson": true, "mustToRawJson": true, "toYaml": true, "mustToYaml": true,
	"toYamlPretty": true, "toToml": true, "toString": true, "toStrings": true,
	"cat": true, "join": true, "print": true, "printf": true, "println": true,
	"quote": true, "squote": true, "deepCopy": true, "mustDeepCopy": true,
	"merge": true, "mustMerge": true, "mergeOverwrite": true, "mustMergeOverwrite": true,
	"deepEqual": true, "uniq": true, "mustUniq": true, "sha256sum": true, "sha1sum": true,
	"adler32sum": true, "b64enc": true, "b32enc": true, "nospace": true, "trim": true,
}

// funcs are the functions a chart's templates call: sprig's as Helm offers
// them (without env and expandenv), Helm's serialisers, and print and printf,
// each decorated to count what it makes.
func (g *templateGuard) funcs() template.FuncMap {
	fm := template.FuncMap{}
	for name, fn := range sprig.TxtFuncMap() {
		if !helmOwn[name] {
			fm[name] = fn
		}
	}
	for name, fn := range helmSerialisers {
		fm[name] = fn
	}
	fm["print"], fm["println"] = fmt.Sprint, fmt.Sprintln
	fm["printf"] = func(format string, args ...any) (string, error) {
		if err := checkFormat(format); err != nil {
			return "", err
		}
		return fmt.Sprintf(format, args...), nil
	}
	for name, fn := range fm {
		fm[name] = g.decorate(name, fn)
	}
	for name, fn := range g.bounded() {
		fm[name] = fn
	}
	return fm
}

// helmOwn are the names Helm's engine defines over sprig's (or removes), whose
// own functions stay: the templates (include, tpl), the messages (required,
// fail), the cluster and DNS (lookup and getHostByName, which answer nothing),
// the parsers, and the environment (env, expandenv, which Helm leaves out).
var helmOwn = map[string]bool{
	"include": true, "tpl": true, "required": true, "fail": true, "lookup": true,
	"getHostByName": true, "fromYaml": true, "fromYamlArray": true, "fromJson": true,
	"fromJsonArray": true, "fromToml": true, "env": true, "expandenv": true,
}

// helmSerialisers are Helm's own functions that write a value out, as Helm
// writes them (helm.sh/helm/v4/pkg/engine/funcs.go): the same libraries, the
// same handling of errors.
var helmSerialisers = map[string]any{
	"toYaml": func(v any) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	},
	"mustToYaml": func(v any) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			panic(err)
		}
		return strings.TrimSuffix(string(data), "\n")
	},
	"toYamlPretty": func(v any) string {
		var data bytes.Buffer
		enc := goyaml.NewEncoder(&data)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return ""
		}
		return strings.TrimSuffix(data.String(), "\n")
	},
	"toToml": func(v any) string {
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(v); err != nil {
			return err.Error()
		}
		return b.String()
	},
	"toJson": func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(data)
	},
	"mustToJson": func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(data)
	},
}

var errorType = reflect.TypeFor[error]()

// decorate returns fn, the function name, charging what it returns, and for
// the functions that expand their arguments, checking those first. A refusal
// is the decorated function's error (text/template reports a function's
// panic as its error, for the functions that return none).
func (g *templateGuard) decorate(name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func {
		return fn
	}
	fail := func(err error) []reflect.Value {
		if t.NumOut() == 2 && t.Out(1) == errorType {
			return []reflect.Value{reflect.Zero(t.Out(0)), reflect.ValueOf(&err).Elem()}
		}
		panic(err)
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		if expands[name] {
			for _, a := range args {
				if err := g.fits(name, expandedSize(a, g.max-g.made)); err != nil {
					return fail(err)
				}
			}
		}
		var out []reflect.Value
		if t.IsVariadic() {
			out = v.CallSlice(args)
		} else {
			out = v.Call(args)
		}
		if len(out) > 0 {
			if err := g.charge(name, shallowSize(out[0])); err != nil {
				return fail(err)
			}
		}
		return out
	}).Interface()
}

// bounded are the functions whose result's size their arguments tell: they
// check it before they make it.
func (g *templateGuard) bounded() template.FuncMap {
	s := sprig.TxtFuncMap()
	return template.FuncMap{
		"repeat": func(count int, str string) (string, error) {
			if err := g.fits("repeat", int64(count)*int64(len(str))); err != nil {
				return "", err
			}
			return strings.Repeat(str, max(count, 0)), g.charge("repeat", int64(max(count, 0)*len(str)))
		},
		"until": func(count int) ([]int, error) {
			if err := fitsList("until", abs(count)); err != nil {
				return nil, err
			}
			return s["until"].(func(int) []int)(count), g.charge("until", int64(abs(count))*8)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			if step != 0 {
				if err := fitsList("untilStep", abs((stop-start)/step)); err != nil {
					return nil, err
				}
			}
			out := s["untilStep"].(func(int, int, int) []int)(start, stop, step)
			return out, g.charge("untilStep", int64(len(out))*8)
		},
		"indent":  g.indent("indent", s["indent"].(func(int, string) string)),
		"nindent": g.indent("nindent", s["nindent"].(func(int, string) string)),
		"replace": func(old, repl, src string) (string, error) {
			n := int64(len(src))
			if len(repl) > len(old) {
				n += int64(strings.Count(src, old)) * int64(len(repl)-len(old))
			}
			if err := g.fits("replace", n); err != nil {
				return "", err
			}
			out := strings.ReplaceAll(src, old, repl)
			return out, g.charge("replace", int64(len(out)))
		},
	}
}

func fitsList(name string, n int) error {
	if n > maxListItems {
		return overBudgetf("%s would make a list of %d items, over the %d a template may make", name, n, maxListItems)
	}
	return nil
}

// indent bounds indent and nindent: the spaces times the lines.
func (g *templateGuard) indent(name string, f func(int, string) string) func(int, string) (string, error) {
	return func(spaces int, v string) (string, error) {
		n := int64(len(v)) + int64(strings.Count(v, "\n")+1)*int64(max(spaces, 0))
		if err := g.fits(name, n); err != nil {
			return "", err
		}
		return f(spaces, v), g.charge(name, n)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// shallowSize is what a function's result holds of its own: a string's bytes,
// a list's or map's entries (what they hold is charged where it was made).
func shallowSize(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Slice, reflect.Array, reflect.Map:
		return int64(v.Len()) * 16
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return shallowSize(v.Elem())
	}
	return 8
}

// expandedSize is about the bytes v takes written out whole (keys and strings
// by their length, other values by 8 bytes each), counted once per distinct map
// or list however often v reaches it, and stopping past limit: a value that
// holds itself, or more than limit, returns more than limit.
func expandedSize(v reflect.Value, limit int64) int64 {
	e := expansion{limit: limit, seen: map[uintptr]int64{}}
	return e.size(v)
}

type expansion struct {
	limit int64
	// seen holds the expanded size of each map and list already counted, and
	// -1 for those being counted (a value that holds itself).
	seen map[uintptr]int64
}

func (e *expansion) size(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return 4
		}
		return e.size(v.Elem())
	case reflect.String:
		return int64(v.Len()) + 2
	case reflect.Map, reflect.Slice:
		if v.IsNil() {
			return 4
		}
		id := v.Pointer()
		if n, ok := e.seen[id]; ok {
			if n < 0 {
				return e.limit + 1
			}
			return n
		}
		e.seen[id] = -1
		n := e.children(v)
		e.seen[id] = n
		return n
	case reflect.Array:
		return e.children(v)
	case reflect.Struct:
		var n int64
		for i := range v.NumField() {
			if n += e.size(v.Field(i)); n > e.limit {
				return n
			}
		}
		return n
	}
	return 8
}

func (e *expansion) children(v reflect.Value) int64 {
	n := int64(2)
	if v.Kind() == reflect.Map {
		for it := v.MapRange(); it.Next(); {
			if n += e.size(it.Key()) + e.size(it.Value()); n > e.limit {
				return n
			}
		}
		return n
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		return int64(v.Len()) + 2
	}
	for i := range v.Len() {
		if n += e.size(v.Index(i)) + 1; n > e.limit {
			return n
		}
	}
	return n
}

// checkFormat refuses a width or precision in printf's format over
// maxFormatWidth ("%999999999d" would make a string of that many bytes).
func checkFormat(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] < '0' || format[i] > '9' {
			continue
		}
		j := i
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(format[i:j]); err != nil || n > maxFormatWidth {
			if strings.Contains(format[:i], "%") {
				return overBudgetf("printf's format %q has a width or precision over %d", format, maxFormatWidth)
			}
		}
		i = j
	}
	return nil
}

// executeTemplates renders the chart's templates with Helm's engine, as they
// are, with the functions above, without a cluster (lookup returns nothing, as
// in `helm template`) and without DNS.
func executeTemplates(c *chart.Chart, vals common.Values, opts Options) (map[string]string, error) {
	g := newTemplateGuard(opts)
	funcs := g.funcs()
	funcs["tpl"] = newTplScope(c, g, funcs).rootTpl()
	out, err := engine.Engine{CustomTemplateFuncs: funcs}.Render(c, vals)
	if err != nil {
		return nil, &result.RenderError{Reason: reasonOfGuard(err), Err: errors.New(shorten(err.Error()))}
	}
	return out, nil
}

// maxTemplateError bounds the message of a template's failure: Helm nests the
// error of each include it passes through, and a deep recursion would make a
// message of megabytes. Its head names the template, its tail the cause.
const maxTemplateError = 1024

func shorten(msg string) string {
	if len(msg) <= maxTemplateError {
		return msg
	}
	return msg[:maxTemplateError/2] + " … " + msg[len(msg)-maxTemplateError/2:]
}

// reasonOfGuard is RenderLimitExceeded when a budget stopped the templates
// (Helm passes the budget's error on as text).
func reasonOfGuard(err error) string {
	for _, bound := range []string{"the templates' functions made more than", "the templates' functions may still make", "width or precision over", "a template may make", "tpl nests more than", "deep inside tpl"} {
		if strings.Contains(err.Error(), bound) {
			return v1alpha1.ReasonRenderLimitExceeded
		}
	}
	return ""
}
