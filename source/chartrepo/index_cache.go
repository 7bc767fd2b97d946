package chartrepo

import (
	"time"
)

// The parsed indexes chart repositories answered are kept in memory (one chart
// of one repository per entry, for one set of credentials: chartIndexKey) for
// the next read within its MaxAge. They are kept within maxIndexCacheBytes in
// all, the least recently used dropped first, and an entry no Sync asked for
// within twice its interval (at least indexIdleFloor) is dropped: its Syncs are
// gone, or ask for another chart, repository or credentials now. Either costs
// at most one read of the index again.

const (
	// maxIndexCacheBytes bounds the parsed indexes kept, by indexSize.
	maxIndexCacheBytes = 16 << 20
	// indexIdleFloor is the least an entry is kept after its last use.
	indexIdleFloor = 10 * time.Minute
)

// useLocked marks e used by a request of maxAge at now.
func (e *indexEntry) useLocked(now time.Time, maxAge time.Duration) {
	e.used, e.maxAge = now, maxAge
}

// idle reports whether e has not been asked for within twice the interval of
// its last asker (at least indexIdleFloor) at now.
func (e *indexEntry) idle(now time.Time) bool {
	return now.Sub(e.used) > max(2*e.maxAge, indexIdleFloor)
}

// indexSize estimates what an index takes in memory: its strings, and the
// headers of its entries, slices and map.
func indexSize(idx chartIndex) int64 {
	const entryBytes, sliceBytes, mapBytes = 64, 24, 48
	n := int64(0)
	for name, versions := range idx {
		n += mapBytes + sliceBytes + int64(len(name))
		for _, v := range versions {
			n += entryBytes + int64(len(v.Version)+len(v.Digest))
			for _, u := range v.URLs {
				n += 16 + int64(len(u))
			}
		}
	}
	return n
}

// sweepLocked drops the idle entries, then the least recently used ones
// until those kept take maxBytes at most; an entry being read stays.
func (c *chartRepos) sweepLocked(now time.Time) {
	total := int64(0)
	for k, e := range c.indexes {
		switch {
		case e.reading != nil:
		case e.idle(now):
			delete(c.indexes, k)
		default:
			total += e.size
		}
	}
	for total > c.maxIndexBytes {
		oldest := ""
		for k, e := range c.indexes {
			if e.reading == nil && e.size > 0 && (oldest == "" || e.used.Before(c.indexes[oldest].used)) {
				oldest = k
			}
		}
		if oldest == "" {
			return
		}
		total -= c.indexes[oldest].size
		delete(c.indexes, oldest)
	}
}
