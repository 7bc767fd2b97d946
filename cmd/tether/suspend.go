package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/plan"
)

// newSuspendCommand builds `tether suspend` (suspend true) or `tether resume`.
func newSuspendCommand(kube *kubeFlags, suspend bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suspend NAME",
		Short: "Stop reconciling a Sync (spec.suspend: true): nothing is fetched, applied or pruned",
		Long: `Stop reconciling a Sync by setting spec.suspend to true: the agent fetches,
applies, corrects and prunes nothing for it until 'tether resume'. What it applied
stays in the cluster as it is. Use it to hold a Sync during an incident or a
manual change. While suspended, every view says so the same way: READY Unknown
(reason Suspended), SYNC Unknown (nothing is compared), SUSPENDED true, and
'tether tree' marks the Sync Suspended and each object's sync Unknown.`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setSuspend(cmd.Context(), kube, args[0], suspend, cmd.OutOrStdout())
		},
	}
	if !suspend {
		cmd.Use = "resume NAME"
		cmd.Short = "Resume reconciling a suspended Sync (spec.suspend: false)"
		cmd.Long = `Resume reconciling a Sync by setting spec.suspend to false and requesting a
reconcile (as 'tether reconcile' does): the agent looks at git and reconciles it at
once, and then at its interval. 'tether wait NAME --healthy' waits for the outcome.`
	}
	kube.bind(cmd)
	return cmd
}

// setSuspend sets spec.suspend of a Sync. Setting it to what it is already
// writes nothing.
func setSuspend(ctx context.Context, kube *kubeFlags, name string, suspend bool, w io.Writer) error {
	verb := map[bool]string{true: "suspended", false: "resumed"}[suspend]
	t, err := kube.target(verb, name)
	if err != nil {
		return err
	}
	s, err := t.get(ctx)
	if err != nil {
		return err
	}
	if s.Spec.Suspend == suspend {
		_, err := fmt.Fprintf(w, "%s is %s already\n", t, map[bool]string{true: "suspended", false: "not suspended"}[suspend])
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	plan.SetSuspend(s, suspend, time.Now())
	if err := t.c.Patch(ctx, s, patch); err != nil {
		return fmt.Errorf("setting spec.suspend of %s: %w", t, err)
	}
	if _, err := fmt.Fprintf(w, "► %s %s\n", t, verb); err != nil {
		return err
	}
	recordAction(ctx, t.c, s, map[bool]string{true: "suspend", false: "resume"}[suspend], w)
	return nil
}
