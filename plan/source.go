package plan

import (
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// The one mapping from a Sync to what source fetches. The agent, `tether diff`
// (and the diff page of `tether ui`, which renders through it) ask for a
// Sync's source through these, and add what only they know: the credentials
// its secretRef names, read as its identity, and how old a shared answer may
// be (the caller's clock and intervals).

// RequestOf is what to fetch for a Sync of a git repository: its URL and ref,
// its namespace as the tenant a git host's places and the cache are shared
// between; without credentials, and with MaxAge zero (always ask).
func RequestOf(s *v1alpha1.Sync) result.Request {
	return result.Request{URL: s.Spec.Source.URL, Ref: s.Spec.Source.Ref, Tenant: s.Namespace}
}

// ChartRequestOf is the packaged chart a Sync names (spec.source.chart), without
// credentials, and with MaxAge zero; the zero ChartRequest when it names none.
func ChartRequestOf(s *v1alpha1.Sync) result.ChartRequest {
	c := s.Spec.Source.Chart
	if c == nil {
		return result.ChartRequest{}
	}
	return result.ChartRequest{Repository: c.Repository, Name: c.Name, Version: c.Version}
}
