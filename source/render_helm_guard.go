package source

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"

	"tether.dev/tether/api/v1alpha1"
)

// Bounds of one chart's template execution. Go's templates cannot be
// interrupted from outside, so the chart's templates are rewritten before Helm
// parses them (guardTemplate): every list of nodes a template executes (its
// body, each branch of if and with, each iteration of range, each defined
// template that include or template runs) starts with a call of tetherTick,
// which counts a step, charges the text the list writes and checks the
// deadline; every action that prints passes its value through tetherOut,
// which charges its size. The functions that make far more than they are given
// (repeat, until, untilStep, indent, nindent, replace, printf's widths) check
// their result's size before they make it. A template over any bound fails at
// its next step, naming the template and the bound, and the render's goroutine
// ends with it.
const (
	// maxTemplateSteps bounds the lists of nodes one chart's templates execute
	// (a range's iterations, the templates include runs).
	maxTemplateSteps = 1_000_000
	// templateOutputFactor: the templates may write this many times
	// Options.MaxRenderedBytes in all, what include makes and a template then
	// prints counted each time.
	templateOutputFactor = 4
	// defaultTemplateOutput bounds the output when MaxRenderedBytes does not.
	defaultTemplateOutput = 64 << 20
	// maxFormatWidth bounds a width or precision in printf's format.
	maxFormatWidth = 4096
)

// Names of the functions the rewritten templates call.
const (
	tickFunc = "tetherTick"
	outFunc  = "tetherOut"
	// guardFunc guards the text tpl is about to parse, as guardTemplate guards
	// a file, so that a template made of values at render time is bounded too.
	guardFunc = "tetherGuard"
)

// templateGuard counts one render's steps and output against its bounds.
type templateGuard struct {
	steps, maxSteps int
	out, maxOut     int64
	deadline        time.Time
	// current names the template being rewritten or run, for messages.
	now func() time.Time
}

func newTemplateGuard(opts Options, now func() time.Time) *templateGuard {
	g := &templateGuard{maxSteps: maxTemplateSteps, maxOut: defaultTemplateOutput, now: now}
	if opts.MaxRenderedBytes > 0 {
		g.maxOut = templateOutputFactor * opts.MaxRenderedBytes
	}
	if opts.RenderTimeout > 0 {
		g.deadline = now().Add(opts.RenderTimeout)
	}
	return g
}

// step counts n steps and checks the deadline.
func (g *templateGuard) step(n int) error {
	g.steps += n
	if g.steps > g.maxSteps {
		return overBudgetf("the templates ran more than %d steps (loop iterations and included templates)", g.maxSteps)
	}
	if !g.deadline.IsZero() && g.now().After(g.deadline) {
		return overBudgetf("the templates ran past the render's deadline")
	}
	return nil
}

// write charges n bytes of output.
func (g *templateGuard) write(n int64) error {
	g.out += n
	if g.out > g.maxOut {
		return overBudgetf("the templates wrote more than %d bytes", g.maxOut)
	}
	return nil
}

// fits checks that a value of n bytes about to be made fits what is left.
func (g *templateGuard) fits(what string, n int64) error {
	if n < 0 || g.out+n > g.maxOut {
		return overBudgetf("%s would make more than the %d bytes the templates may write", what, g.maxOut-g.out)
	}
	return nil
}

// funcs are the guard's functions and the bounded replacements of Helm's.
func (g *templateGuard) funcs() template.FuncMap {
	s := sprig.TxtFuncMap()
	return template.FuncMap{
		tickFunc: func(text int) (string, error) {
			if err := g.step(1); err != nil {
				return "", err
			}
			return "", g.write(int64(text))
		},
		outFunc: func(v any) (any, error) {
			if str, ok := v.(string); ok {
				return v, g.write(int64(len(str)))
			}
			return v, g.write(int64(len(fmt.Sprint(v))))
		},
		guardFunc: func(text string) (string, error) {
			if err := g.step(1); err != nil {
				return "", err
			}
			return guardTemplate("tpl", text)
		},
		"repeat": func(count int, str string) (string, error) {
			if err := g.fits("repeat", int64(count)*int64(len(str))); err != nil {
				return "", err
			}
			return strings.Repeat(str, max(count, 0)), nil
		},
		"until": func(count int) ([]int, error) {
			if err := g.step(abs(count)); err != nil {
				return nil, err
			}
			return s["until"].(func(int) []int)(count), nil
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			if step != 0 {
				if err := g.step(abs((stop - start) / step)); err != nil {
					return nil, err
				}
			}
			return s["untilStep"].(func(int, int, int) []int)(start, stop, step), nil
		},
		"indent":  g.indent("indent", s["indent"].(func(int, string) string)),
		"nindent": g.indent("nindent", s["nindent"].(func(int, string) string)),
		"replace": func(old, repl, src string) (string, error) {
			if len(repl) > len(old) {
				n := int64(strings.Count(src, old)) * int64(len(repl)-len(old))
				if err := g.fits("replace", int64(len(src))+n); err != nil {
					return "", err
				}
			}
			return strings.ReplaceAll(src, old, repl), nil
		},
		"printf": func(format string, args ...any) (string, error) {
			if err := checkFormat(format); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
	}
}

// indent bounds indent and nindent: the spaces times the lines.
func (g *templateGuard) indent(name string, f func(int, string) string) func(int, string) (string, error) {
	return func(spaces int, v string) (string, error) {
		lines := int64(strings.Count(v, "\n") + 1)
		if err := g.fits(name, int64(len(v))+lines*int64(spaces)); err != nil {
			return "", err
		}
		return f(spaces, v), nil
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
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

// executeTemplates renders the chart's templates with Helm's engine, every
// template guarded, without a cluster (lookup returns nothing, as in `helm
// template`) and without DNS.
func executeTemplates(c *chart.Chart, vals common.Values, opts Options) (map[string]string, error) {
	g := newTemplateGuard(opts, time.Now)
	if err := guardChart(c); err != nil {
		return nil, err
	}
	out, err := engine.Engine{CustomTemplateFuncs: g.funcs()}.Render(c, vals)
	if err != nil {
		return nil, &RenderError{Reason: reasonOfGuard(err), Err: errors.New(shorten(err.Error()))}
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

// reasonOfGuard is RenderLimitExceeded when a guard stopped the templates (Helm
// passes the guard's error on as text).
func reasonOfGuard(err error) string {
	for _, bound := range []string{"steps (loop iterations", "past the render's deadline", "bytes the templates may write", "the templates wrote more than", "width or precision over"} {
		if strings.Contains(err.Error(), bound) {
			return v1alpha1.ReasonRenderLimitExceeded
		}
	}
	return ""
}

// guardChart rewrites the templates of c and of its vendored charts.
func guardChart(c *chart.Chart) error {
	for _, t := range c.Templates {
		data, err := guardTemplate(t.Name, string(t.Data))
		if err != nil {
			return &RenderError{File: t.Name, Err: err}
		}
		t.Data = []byte(data)
	}
	for _, d := range c.Dependencies() {
		if err := guardChart(d); err != nil {
			return err
		}
	}
	return nil
}

// guardTemplate returns the text of a template with the guard's calls added
// (see the bounds above): parsed as Go's templates parse it, the calls put into
// the trees, and the trees written back as template text, the defined
// templates as define blocks.
func guardTemplate(name, text string) (string, error) {
	trees := map[string]*parse.Tree{}
	t := parse.New(name)
	t.Mode = parse.SkipFuncCheck
	if _, err := t.Parse(text, "", "", trees); err != nil {
		return "", fmt.Errorf("parse error: %w", err)
	}
	var b strings.Builder
	for _, tname := range slices.Sorted(maps.Keys(trees)) {
		tree := trees[tname]
		if tree.Root == nil {
			continue
		}
		guardList(tree.Root)
		if tname == name {
			continue
		}
		fmt.Fprintf(&b, "{{define %q}}%s{{end}}", tname, tree.Root.String())
	}
	if main := trees[name]; main != nil && main.Root != nil {
		b.WriteString(main.Root.String())
	}
	return b.String(), nil
}

// guardList adds a tick at the head of list and of every list below it, and
// passes what each action prints through the output charge.
func guardList(list *parse.ListNode) {
	if list == nil {
		return
	}
	text := 0
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			text += len(n.Text)
		case *parse.ActionNode:
			guardTpl(n.Pipe)
			if len(n.Pipe.Decl) == 0 {
				n.Pipe.Cmds = append(n.Pipe.Cmds, command(outFunc))
			}
		case *parse.TemplateNode:
			guardTpl(n.Pipe)
		case *parse.IfNode:
			guardBranch(&n.BranchNode)
		case *parse.RangeNode:
			guardBranch(&n.BranchNode)
		case *parse.WithNode:
			guardBranch(&n.BranchNode)
		}
	}
	tick := command(tickFunc)
	tick.Args = append(tick.Args, &parse.NumberNode{NodeType: parse.NodeNumber, IsInt: true, Int64: int64(text), Text: strconv.Itoa(text)})
	action := &parse.ActionNode{NodeType: parse.NodeAction, Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Cmds: []*parse.CommandNode{tick}}}
	list.Nodes = append([]parse.Node{action}, list.Nodes...)
}

// guardBranch guards an if, range or with: its pipeline and both its lists.
func guardBranch(b *parse.BranchNode) {
	guardTpl(b.Pipe)
	guardList(b.List)
	guardList(b.ElseList)
}

// guardTpl passes the text of every call of tpl in pipe (tpl TEXT VALUES)
// through guardFunc, in nested pipelines too.
func guardTpl(pipe *parse.PipeNode) {
	if pipe == nil {
		return
	}
	for _, cmd := range pipe.Cmds {
		for _, arg := range cmd.Args {
			switch arg := arg.(type) {
			case *parse.PipeNode:
				guardTpl(arg)
			case *parse.ChainNode:
				if p, ok := arg.Node.(*parse.PipeNode); ok {
					guardTpl(p)
				}
			}
		}
		if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok && id.Ident == "tpl" && len(cmd.Args) >= 3 {
			guard := command(guardFunc)
			guard.Args = append(guard.Args, cmd.Args[1])
			cmd.Args[1] = &parse.PipeNode{NodeType: parse.NodePipe, Cmds: []*parse.CommandNode{guard}}
		}
	}
}

// command is a command calling the function name.
func command(name string) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Args: []parse.Node{&parse.IdentifierNode{NodeType: parse.NodeIdentifier, Ident: name}}}
}
