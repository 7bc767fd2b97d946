package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// treeFlags are the command line of `tether tree`.
type treeFlags struct {
	kube  *kubeFlags
	color string
	deps  bool
	// syncSet names a SyncSet rather than a Sync.
	syncSet bool
}

func newTreeCommand(kube *kubeFlags) *cobra.Command {
	f := &treeFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "tree NAME",
		Short: "Show the objects a Sync manages as a tree, by namespace and kind, with their sync and health",
		Long: `Show the inventory of a Sync (every object it applied) as a tree, by namespace
and kind, with each object's sync and health status and, where the agent has
something to say, its message. Colours mark what is not Synced and Healthy when
the output is a terminal (--color). With --deps, show instead the Syncs it depends
on (spec.dependsOn), and theirs, each with whether it is Ready. With --syncset,
NAME is a SyncSet: show its Syncs, each with its revision, sync and health and
what holds it (a rolling sync's pin, a rollback), and where its rollout stands.`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.color != "auto" && f.color != "always" && f.color != "never" {
				return usageError(cmd, fmt.Sprintf("--color %q: want auto, always or never", f.color))
			}
			if f.syncSet && f.deps {
				return usageError(cmd, "--syncset and --deps: choose one")
			}
			return f.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&f.deps, "deps", false, "Show the Syncs this one depends on (spec.dependsOn), and theirs, instead of its objects.")
	cmd.Flags().BoolVar(&f.syncSet, "syncset", false, "NAME is a SyncSet: show the Syncs it made, and where its rolling sync stands.")
	cmd.Flags().StringVar(&f.color, "color", "auto", "Colour the statuses: auto (on a terminal, unless NO_COLOR is set), always or never.")
	kube.bind(cmd)
	return cmd
}

func (f *treeFlags) run(ctx context.Context, name string, w io.Writer) error {
	t, err := f.kube.target("tree", name)
	if err != nil {
		return err
	}
	p := &treePrinter{w: w, color: useColor(f.color, w)}
	if f.syncSet {
		p.syncSetTree(ctx, t)
		return p.err
	}
	s, err := t.get(ctx)
	if err != nil {
		return err
	}
	if f.deps {
		p.printDeps(s, func(n types.NamespacedName) (*v1alpha1.Sync, error) {
			dep := &v1alpha1.Sync{}
			if err := t.c.Get(ctx, n, dep); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, nil
				}
				return nil, fmt.Errorf("reading Sync %s: %w", n, err)
			}
			return dep, nil
		})
		return p.err
	}
	p.print(s)
	return p.err
}

// useColor decides --color auto: colour on a terminal, unless NO_COLOR is set.
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// treePrinter writes a Sync's inventory as a tree.
type treePrinter struct {
	w     io.Writer
	color bool
	err   error
}

func (p *treePrinter) print(s *v1alpha1.Sync) {
	head := fmt.Sprintf("Sync/%s/%s  %s  %s  %s", s.Namespace, s.Name, orDash(shortRevision(s.Status.LastAppliedRevision)),
		p.status(string(s.Status.Sync)), p.status(string(s.Status.Health)))
	if s.Spec.Suspend {
		head += "  " + p.status(string(v1alpha1.HealthSuspended)) + ": not compared with git until resumed"
	}
	if set := s.Labels[v1alpha1.SyncSetLabel]; set != "" {
		head += "  (SyncSet " + set + ")"
	}
	if s.Spec.Destination.IsRemote() {
		head += "  in cluster " + s.Spec.Destination.ClusterName()
	}
	if s.Status.LastAppliedSigner != "" {
		head += "  signed by " + s.Status.LastAppliedSigner
	}
	p.line("", head)
	tree := plan.Tree(s)
	if len(tree) == 0 {
		p.line("", "└── (no objects)")
	}
	for i, ns := range tree {
		nsPrefix, nsIndent := branch("", i == len(tree)-1)
		p.line(nsPrefix, ns.Namespace)
		for j, kind := range ns.Kinds {
			kindPrefix, kindIndent := branch(nsIndent, j == len(ns.Kinds)-1)
			p.line(kindPrefix, kind.Kind)
			for k, r := range kind.Objects {
				objPrefix, _ := branch(kindIndent, k == len(kind.Objects)-1)
				p.line(objPrefix, p.object(r))
			}
		}
	}
}

// branch returns the prefix of a child line under indent, and the indent of its
// own children.
func branch(indent string, last bool) (prefix, childIndent string) {
	if last {
		return indent + "└── ", indent + "    "
	}
	return indent + "├── ", indent + "│   "
}

func (p *treePrinter) object(r v1alpha1.ResourceStatus) string {
	text := fmt.Sprintf("%s  %s  %s", r.Name, p.status(string(r.Sync)), p.status(string(r.Health)))
	if r.Message != "" {
		text += "  " + oneLine(r.Message)
	}
	return text
}

func (p *treePrinter) line(prefix, text string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, prefix+text)
	}
}

// ANSI colours of statuses.
const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	reset  = "\x1b[0m"
)

// status writes a sync or health status, coloured when p colours.
func (p *treePrinter) status(code string) string {
	if code == "" {
		code = "-"
	}
	if !p.color {
		return code
	}
	c := ""
	switch code {
	case string(v1alpha1.SyncStatusSynced), string(v1alpha1.HealthHealthy):
		c = green
	case string(v1alpha1.SyncStatusOutOfSync), string(v1alpha1.HealthProgressing), string(v1alpha1.HealthSuspended):
		c = yellow
	case string(v1alpha1.HealthDegraded), string(v1alpha1.HealthMissing):
		c = red
	}
	if c == "" {
		return code
	}
	return c + code + reset
}
