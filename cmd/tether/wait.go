package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tether.dev/tether/api/v1alpha1"
)

// waitFlags are the command line of `tether wait`.
type waitFlags struct {
	kube     *kubeFlags
	revision string
	healthy  bool
	timeout  time.Duration
}

func newWaitCommand(kube *kubeFlags) *cobra.Command {
	f := &waitFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "wait NAME (--revision SHA | --healthy)",
		Short: "Wait until a commit has landed (--revision) and what it applied is healthy (--healthy)",
		Long: `Wait until a Sync has applied a commit in full (--revision, a full or abbreviated
hash) and, with --healthy, until every object it manages is healthy: the
answer, for a pipeline, to "has my commit landed and does it work?". Each step is
printed as it happens. Nothing is asked of the agent: combine with
'tether reconcile' not to wait for the Sync's interval.

Exit status:
  0  the revision is applied (and, with --healthy, healthy)
  1  it failed: the Sync is Stalled on that revision (it cannot be rendered or
     applied), its objects are Degraded (--healthy), or the Sync is suspended;
     the message says why
  2  error: bad flags, the Sync does not exist, the cluster cannot be reached
  3  timed out (--timeout) before either`,
		Example: `  # In a pipeline, after pushing
  tether wait web -n tether-system --revision "$(git rev-parse HEAD)" --healthy --timeout 10m`,
		Args:              oneName,
		ValidArgsFunction: completeSyncNames(kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.revision = strings.ToLower(strings.TrimSpace(f.revision))
			switch {
			case f.revision == "" && !f.healthy:
				return usageError(cmd, "give --revision, --healthy or both")
			case f.revision != "" && strings.Trim(f.revision, "0123456789abcdef") != "":
				return usageError(cmd, fmt.Sprintf("--revision %q is not a commit hash", f.revision))
			}
			return f.run(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.revision, "revision", "", "The commit, by its full or abbreviated SHA-1 hash, that the Sync must have applied.")
	cmd.Flags().BoolVar(&f.healthy, "healthy", false, "Wait until every object the Sync manages is healthy too.")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultWaitTimeout, "How long to wait.")
	kube.bind(cmd)
	return cmd
}

func (f *waitFlags) run(ctx context.Context, name string, w io.Writer) error {
	t, err := f.kube.target("wait", name)
	if err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	if _, err := t.get(ctx); err != nil {
		return &exitError{code: exitBroken, err: err}
	}
	return watchSync(ctx, t, f.timeout, w, f.judge)
}

// judge says whether s has landed f.revision, and is healthy if asked.
func (f *waitFlags) judge(s *v1alpha1.Sync) judgement {
	if s.Spec.Suspend {
		return judgement{failed, "suspended: nothing is applied until it is resumed"}
	}
	if f.revision != "" {
		if j, done := f.landed(s); !done {
			return j
		}
	} else if j := stalledOrReady(s); j.verdict != succeeded {
		return j
	}
	if !f.healthy {
		return judgement{succeeded, "applied " + s.Status.LastAppliedRevision}
	}
	return healthJudgement(s)
}

// landed judges whether s has applied f.revision in full; done is true when it
// has, and then the judgement is not needed.
func (f *waitFlags) landed(s *v1alpha1.Sync) (j judgement, done bool) {
	fetched := strings.HasPrefix(revisionHash(s.Status.SourceRevision), f.revision)
	applied := strings.HasPrefix(revisionHash(s.Status.LastAppliedRevision), f.revision)
	state := stalledOrReady(s)
	switch {
	case fetched && state.verdict == failed:
		return state, false
	case applied && state.verdict == succeeded:
		return judgement{}, true
	case fetched:
		return judgement{pending, "revision " + s.Status.SourceRevision + " fetched; " + state.say}, false
	}
	return judgement{pending, fmt.Sprintf("waiting for revision %s (applied: %s, fetched: %s)",
		f.revision, orDash(s.Status.LastAppliedRevision), orDash(s.Status.SourceRevision))}, false
}

// healthJudgement judges the health of what s applied: Degraded fails.
func healthJudgement(s *v1alpha1.Sync) judgement {
	msg := string(s.Status.Health)
	if c := condition(s, v1alpha1.HealthyCondition); c != nil && c.Message != "" {
		msg += ": " + c.Message
	}
	switch s.Status.Health {
	case v1alpha1.HealthHealthy:
		return judgement{succeeded, "applied " + s.Status.LastAppliedRevision + " and healthy"}
	case v1alpha1.HealthDegraded:
		return judgement{failed, "applied " + s.Status.LastAppliedRevision + " but " + msg}
	}
	return judgement{pending, "applied " + s.Status.LastAppliedRevision + "; health " + msg}
}
