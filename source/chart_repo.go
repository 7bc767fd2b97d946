package source

import (
	"context"

	"tether.dev/tether/source/chartrepo"
)

// ChartRequest names a packaged chart to fetch from a chart repository
// (chartrepo.Request).
type ChartRequest = chartrepo.Request

// FetchChart resolves req's version range against the repository's index and
// downloads the package of the newest match (chartrepo.Repositories.FetchChart);
// RenderChart renders it.
func (s *Source) FetchChart(ctx context.Context, req ChartRequest) (Revision, error) {
	return s.charts.FetchChart(ctx, req)
}
