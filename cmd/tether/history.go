package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// historyFlags are the command line of `tether history`.
type historyFlags struct {
	kube   *kubeFlags
	output string
}

func newHistoryCommand(kube *kubeFlags) *cobra.Command {
	f := &historyFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions a Sync applied, newest first, and the health each reached",
		Long: `List the revisions a Sync applied in full (status.history, at most 10), newest
first: the revision, when it was applied, the health it reached (Healthy once it
was), how long it took to become Healthy, its commit's author and subject. The revision applied now is marked with *, one
pinned (tether.dev/pin-revision) or rolled back to says so. -o yaml and -o json
print the entries as they are in the status.

tether rollback NAME --to REVISION applies one of them again.`,
		Example:           `  tether history web -n tether-system`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.output != "table" && f.output != "yaml" && f.output != "json" {
				return usageError(cmd, fmt.Sprintf("-o %q: want table, yaml or json", f.output))
			}
			return f.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "Output format: table, yaml or json.")
	kube.bind(cmd)
	return cmd
}

func (f *historyFlags) run(ctx context.Context, name string, w io.Writer) error {
	t, err := f.kube.target("history", name)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	s, err := t.get(ctx)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	switch f.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(s.Status.History)
	case "yaml":
		out, err := yaml.Marshal(s.Status.History)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return printHistory(w, s, time.Now())
}

// maxHistoryMessage and maxHistoryAuthor bound a subject and an author in the table.
const (
	maxHistoryMessage = 72
	maxHistoryAuthor  = 32
)

// printHistory writes s's history as a table. Subjects are made safe again: a
// status may be written by anyone with the right to, not only by the agent.
func printHistory(w io.Writer, s *v1alpha1.Sync, now time.Time) error {
	if len(s.Status.History) == 0 {
		_, err := fmt.Fprintf(w, "Sync %s/%s has applied no revision yet\n", s.Namespace, s.Name)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "\tREVISION\tAPPLIED\tHEALTH\tHEALTHY AFTER\tAUTHOR\tMESSAGE")
	marks := historyMarks(s)
	for i, e := range s.Status.History {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", marks[i], source.OneLine(shortRevision(e.Revision), 80),
			age(e.AppliedAt, now)+" ago", orDash(source.OneLine(string(e.Health), 20)), orDash(plan.HealthyAfter(e)),
			source.OneLine(orDash(e.Author), maxHistoryAuthor), source.OneLine(orDash(e.Message), maxHistoryMessage))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if pin := s.GetAnnotations()[v1alpha1.PinRevisionAnnotation]; pin != "" {
		fmt.Fprintf(w, "Pinned to %s (tether rollback %s --undo follows the ref again)\n", source.OneLine(pin, 80), s.Name)
	}
	if rb := s.Status.Rollback; rb != nil {
		fmt.Fprintf(w, "Rolled back from %s (%s) to %s\n", shortRevision(source.OneLine(rb.FailedRevision, 80)),
			source.OneLine(rb.Reason, 40), shortRevision(source.OneLine(rb.Revision, 80)))
	}
	if head := plan.CommitOf(s.Status.SourceRevision); head != "" && head != plan.CommitOf(s.Status.History[0].Revision) {
		fmt.Fprintf(w, "git is at %s\n", shortRevision(source.OneLine(s.Status.SourceRevision, 80)))
	}
	return nil
}

// historyMarks are the marks of s's history rows: "*" on the revision applied
// now, "pinned" on the newest row of the commit tether.dev/pin-revision pins,
// "rolled-back-to" on the newest row of the revision a rollback went to.
func historyMarks(s *v1alpha1.Sync) []string {
	marks := make([][]string, len(s.Status.History))
	marks[0] = []string{"*"}
	markNewest := func(match func(v1alpha1.HistoryEntry) bool, mark string) {
		for i, e := range s.Status.History {
			if match(e) {
				marks[i] = append(marks[i], mark)
				return
			}
		}
	}
	if pin := s.GetAnnotations()[v1alpha1.PinRevisionAnnotation]; pin != "" {
		markNewest(func(e v1alpha1.HistoryEntry) bool { return plan.CommitOf(e.Revision) == pin || e.Revision == pin }, "pinned")
	}
	if rb := s.Status.Rollback; rb != nil && rb.Revision != "" {
		markNewest(func(e v1alpha1.HistoryEntry) bool { return e.Revision == rb.Revision }, "rolled-back-to")
	}
	out := make([]string, len(marks))
	for i, m := range marks {
		out[i] = strings.Join(m, " ")
	}
	return out
}
