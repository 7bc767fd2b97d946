package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// defaultWaitTimeout bounds `tether reconcile --wait` and `tether wait`.
const defaultWaitTimeout = 5 * time.Minute

// reconcileFlags are the command line of `tether reconcile`.
type reconcileFlags struct {
	kube    *kubeFlags
	wait    bool
	timeout time.Duration
}

func newReconcileCommand(kube *kubeFlags) *cobra.Command {
	f := &reconcileFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "reconcile NAME",
		Short: "Ask the agent to reconcile a Sync now, and with --wait wait for the outcome",
		Long: `Ask the agent to reconcile a Sync at once, whatever its interval: look at git
for a new commit, apply it, correct drift. The request is the annotation
` + v1alpha1.ReconcileRequestedAnnotation + ` set to the current time; the agent
answers it by copying that value into status.lastHandledReconcileAt.

With --wait, print each step until the agent has answered and the Sync is Ready
(exit 0) or Stalled (exit 1, with its message).

Exit status: 0 requested (with --wait: Ready), 1 the Sync is suspended or
Stalled, 2 error, 3 timed out.`,
		Example: `  # After a push, in a pipeline: apply it now and say how it went
  tether reconcile web -n tether-system --wait --timeout 3m`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&f.wait, "wait", false, "Wait until the agent has handled the request and the Sync is Ready or Stalled.")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultWaitTimeout, "How long --wait waits.")
	kube.bind(cmd)
	return cmd
}

func (f *reconcileFlags) run(ctx context.Context, name string, w io.Writer) error {
	t, err := f.kube.target("reconcile", name)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	token, err := requestReconcile(ctx, t, w)
	if err != nil {
		return err
	}
	if !f.wait {
		return nil
	}
	return watchSync(ctx, t, f.timeout, w, func(s *v1alpha1.Sync) judgement {
		if s.Status.LastHandledReconcileAt != token {
			return judgement{pending, "waiting for the agent to handle the request"}
		}
		return stalledOrReady(s)
	})
}

// requestReconcile sets the reconcile-request annotation of the Sync to a new
// value, says so on w with an Event naming the user, and returns the value. A
// suspended Sync is refused: the agent would not look.
func requestReconcile(ctx context.Context, t *syncTarget, w io.Writer) (string, error) {
	s, err := t.get(ctx)
	if err != nil {
		return "", &exitError{code: exitBroken, err: err}
	}
	if s.Spec.Suspend {
		return "", &exitError{code: exitFailed, err: fmt.Errorf("%s is suspended: resume it first (tether resume %s -n %s)", t, t.name, t.namespace)}
	}
	patch := client.MergeFrom(s.DeepCopy())
	token := requestAnnotation(s)
	if err := t.c.Patch(ctx, s, patch); err != nil {
		return "", &exitError{code: exitBroken, err: fmt.Errorf("requesting a reconcile of %s: %w", t, err)}
	}
	fmt.Fprintf(w, "► requested a reconcile of %s\n", t)
	recordAction(ctx, t.c, s, "reconcile", w)
	return token, nil
}

// requestAnnotation sets the reconcile-request annotation of s to a new value (the
// time), and returns it (plan.RequestReconcile).
func requestAnnotation(s *v1alpha1.Sync) string { return plan.RequestReconcile(s, time.Now()) }
