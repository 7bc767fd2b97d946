package sync

import (
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/source"
)

// requestSpacing spaces the ref listings that requests for a reconcile
// (v1alpha1.ReconcileRequestedAnnotation) force: at most one per repository per
// Options.MinInterval, however often the annotation changes. A request that
// comes sooner is not dropped: it is answered by a listing a request forced
// after it was first seen, or it waits until the repository may be asked
// again, and is answered then. A loop that rewrites the annotation thus costs
// the git host what polling at the minimum interval costs, and no more.
type requestSpacing struct {
	mu gosync.Mutex
	// forced is when a request last forced a listing, by repository
	// (source.NormalizeURL).
	forced map[string]time.Time
	// seen is each Sync's request for a reconcile, and when it was first seen.
	seen map[types.NamespacedName]seenRequest
}

type seenRequest struct {
	value string
	at    time.Time
}

// admit decides how the reconcile requested of Sync key (annotation value
// value) asks url's refs at now, minInterval being the least time between two
// forced listings of one repository:
//
//   - force: a listing now (MaxAge zero);
//   - maxAge > 0: reuse the listing a request forced since this one was first
//     seen, which answers it;
//   - wait > 0: nothing answers it yet; reconcile as usual, and ask again
//     after wait, when the request may force a listing.
func (s *requestSpacing) admit(key types.NamespacedName, url, value string, now time.Time, minInterval time.Duration) (force bool, maxAge, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forced == nil {
		s.forced, s.seen = map[string]time.Time{}, map[types.NamespacedName]seenRequest{}
	}
	seen, ok := s.seen[key]
	if !ok || seen.value != value {
		seen = seenRequest{value: value, at: now}
		s.seen[key] = seen
	}
	repo := source.NormalizeURL(url)
	if repo == "" {
		repo = url
	}
	last, ok := s.forced[repo]
	switch {
	case ok && !last.Before(seen.at):
		// Listed at or after the request was seen: that listing answers it.
		return false, now.Sub(last) + time.Millisecond, 0
	case !ok || now.Sub(last) >= minInterval:
		s.forced[repo] = now
		return true, 0, 0
	}
	return false, 0, last.Add(minInterval).Sub(now)
}

// forget drops what is remembered of a deleted Sync's requests.
func (s *requestSpacing) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, key)
}
