package sync

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// recordHistory records in status.history that snap's revision is applied in
// full, with the health it reached and, for a new entry, its commit's subject
// and author (read from the git cache, made safe by source.Summary). A summary
// that cannot be read costs only the message and the author.
func (r *Reconciler) recordHistory(ctx context.Context, st *plan.Status, snap *source.Snapshot) {
	rev := snap.Revision.String()
	var sum source.CommitSummary
	if st.NeedsHistoryEntry(rev) && snap.Revision.Commit != "" {
		var err error
		if sum, err = r.Agent.Source.Summary(snap.Revision.URL, snap.Revision.Commit); err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("cannot read the commit's subject and author for the history", "revision", rev, "error", err.Error())
		}
	}
	st.History(rev, sum.Subject, sum.Author)
}
