package sync

import (
	"context"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// fetchChart reads the desired state of a Sync of a packaged chart
// (spec.source.chart): the newest version matching its range, from an index
// shared with every Sync of the repository and credentials for an interval
// (listingAge), rendered with the Sync's helm input. The revision is
// "name@version+sha256:<digest of the package and values>".
func (r *Reconciler) fetchChart(ctx context.Context, obj *v1alpha1.Sync, id Identity, st *plan.Status) (*source.Snapshot, error) {
	fetchStart := r.state.now()
	req, wait, err := r.chartRequest(ctx, obj, id)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		st.RequestWaits(obj, wait)
	}
	rev, err := r.Agent.Source.FetchChart(ctx, req)
	r.Observers.Metrics.ObserveFetch(obj, r.state.now().Sub(fetchStart), err)
	if err != nil {
		return nil, err
	}
	snap, err := r.renderAgain(ctx, obj, id, nil, rev, "")
	if err != nil {
		return nil, err
	}
	st.Fetched(snap.Revision.String())
	st.Rendered(snap.Revision.String(), len(snap.Objects))
	return snap, nil
}

// chartRequest builds what to fetch for a Sync of a packaged chart: the
// chart, its range, the credentials its secretRef names, the cosign keys its
// verify trusts, and how old a shared index may be.
func (r *Reconciler) chartRequest(ctx context.Context, obj *v1alpha1.Sync, id Identity) (source.ChartRequest, time.Duration, error) {
	req := plan.ChartRequestOf(obj)
	var wait time.Duration
	req.MaxAge, wait = r.listingAge(obj, req.Repository)
	auth, err := r.sourceAuth(ctx, obj, id)
	req.Auth = auth
	if err != nil {
		return req, wait, err
	}
	if req.Keys, err = r.cosignKeys(ctx, obj, id, fieldChartVerifySecret, obj.Spec.Source.Chart.Verify); err != nil {
		return req, wait, &source.FetchError{URL: req.Repository, Ref: req.Label(), Reason: verificationReason(err), Err: err}
	}
	return req, wait, nil
}
