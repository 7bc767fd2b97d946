package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// cliFieldManager owns what the CLI writes into a Sync (the pin): a Sync that
// applies Syncs (self-management) owns other fields, and its applies leave this
// one alone.
const cliFieldManager = "tether-cli"

// rollbackFlags are the command line of `tether rollback`.
type rollbackFlags struct {
	kube    *kubeFlags
	to      string
	undo    bool
	wait    bool
	timeout time.Duration
}

func newRollbackCommand(kube *kubeFlags) *cobra.Command {
	f := &rollbackFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Pin a Sync to an earlier revision, or with --undo follow its ref again",
		Long: `Pin a Sync to a revision it applied before (tether history NAME): by default the
last one that was Healthy before the current one, or the one --to names (a
revision, a commit hash or a prefix of one from the history; a full hash of any
commit of the repository). The pin is the annotation ` + v1alpha1.PinRevisionAnnotation + `,
written with the field manager ` + cliFieldManager + `: while it is set the agent applies
that commit (through the same dry-run gate), keeps fetching the ref to report
what git holds, and says Pinned. Automated sync stays on: nothing else needs
turning off, and nothing turns the pin off but --undo (or removing the annotation).

--undo removes the pin: the Sync follows its ref again.

The command waits (--wait, on by default) until the agent has applied the
revision and the Sync is Ready, printing each step, as reconcile --wait does.

Exit status: 0 done (with --wait: applied and Ready), 1 the Sync is Stalled
(a pin the repository cannot serve) or has no revision to go back to, 2 error,
3 timed out.`,
		Example: `  # Back to the last revision that was Healthy
  tether rollback web -n tether-system
  # Back to a given commit of the history
  tether rollback web -n tether-system --to 4f2c1a2
  # Follow the branch again
  tether rollback web -n tether-system --undo`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.undo && f.to != "" {
				return usageError(cmd, "--to and --undo exclude each other")
			}
			return f.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.to, "to", "", "The revision to go back to: a revision, commit or commit prefix of the history, or a full commit hash. Default: the last Healthy before the current.")
	cmd.Flags().BoolVar(&f.undo, "undo", false, "Remove the pin: follow the ref again.")
	cmd.Flags().BoolVar(&f.wait, "wait", true, "Wait until the revision is applied and the Sync Ready or Stalled.")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultWaitTimeout, "How long --wait waits.")
	kube.bind(cmd)
	return cmd
}

func (f *rollbackFlags) run(ctx context.Context, name string, w io.Writer) error {
	t, err := f.kube.target("rollback", name)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	s, err := t.get(ctx)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	if s.Spec.Suspend {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s is suspended: resume it first (tether resume %s -n %s)", t, t.name, t.namespace)}
	}
	commit := ""
	if !f.undo {
		if commit, err = plan.RollbackTarget(s.Status.History, f.to); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("%s: %w", t, err)}
		}
	}
	// A Sync Stalled before the pin says so until the agent has looked again.
	stalledBefore := ""
	if c := condition(s, v1alpha1.StalledCondition); c != nil && isTrue(s, v1alpha1.StalledCondition) {
		stalledBefore = c.Message
	}
	if err := setPin(ctx, t, commit); err != nil {
		return err
	}
	if commit == "" {
		fmt.Fprintf(w, "► removed the pin of %s: it follows %s again\n", t, orDash(s.Spec.Source.Ref.String()))
	} else {
		fmt.Fprintf(w, "► pinned %s to %s\n", t, commit)
	}
	recordPin(ctx, t.c, s, commit, w)
	if !f.wait {
		return nil
	}
	return watchSync(ctx, t, f.timeout, w, func(s *v1alpha1.Sync) judgement { return pinLanded(s, commit, stalledBefore) })
}

// setPin sets the pin annotation of the Sync to commit, or removes it for "",
// with a merge patch under the CLI's own field manager.
func setPin(ctx context.Context, t *syncTarget, commit string) error {
	s := &v1alpha1.Sync{}
	s.Namespace, s.Name = t.namespace, t.name
	if err := t.c.Patch(ctx, s, client.RawPatch(types.MergePatchType, plan.PinPatch(commit)), client.FieldOwner(cliFieldManager)); err != nil {
		return &exitError{code: exitBroken, err: fmt.Errorf("setting %s of %s: %w", v1alpha1.PinRevisionAnnotation, t, err)}
	}
	return nil
}

// pinLanded judges whether s applies commit, pinned (or, for "", follows its ref
// again), and is Ready. A Stalled condition that says what it said before the
// pin (stalledBefore) is not the agent's answer yet.
func pinLanded(s *v1alpha1.Sync, commit, stalledBefore string) judgement {
	pinned := isTrue(s, v1alpha1.PinnedCondition)
	state := stalledOrReady(s)
	if c := condition(s, v1alpha1.StalledCondition); state.verdict == failed && stalledBefore != "" && c != nil && c.Message == stalledBefore {
		state = judgement{pending, "waiting for the agent to look at the pin"}
	}
	applied := plan.CommitOf(s.Status.LastAppliedRevision)
	switch {
	case commit != "" && pinned && applied == commit && state.verdict != pending:
		return state
	case commit == "" && !pinned && applied != "" && applied == plan.CommitOf(s.Status.SourceRevision) && state.verdict != pending:
		return state
	case state.verdict == failed:
		return state
	case commit == "":
		return judgement{pending, fmt.Sprintf("waiting for the agent to follow the ref again (applied: %s, git: %s)",
			orDash(s.Status.LastAppliedRevision), orDash(s.Status.SourceRevision))}
	}
	return judgement{pending, fmt.Sprintf("waiting for the agent to apply %s (applied: %s)", commit, orDash(s.Status.LastAppliedRevision))}
}
