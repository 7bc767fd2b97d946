package chartrepo

import (
	"testing"
	"time"

	testrepo "tether.dev/tether/test/chartrepo"
)

// The parsed indexes are kept within their byte bound, least recently used out
// first, and an index no Sync asked for within twice its interval is dropped.
func TestParsedIndexesAreBoundedByBytesAndDroppedWhenIdle(t *testing.T) {
	repo := testrepo.Start(t, testrepo.Options{})
	for _, name := range []string{"web", "api"} {
		repo.Publish(t, testrepo.ChartOf(t, map[string]string{
			"Chart.yaml":        "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n",
		}), "1.0.0")
	}
	src, err := NewRepositories(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	src.now = func() time.Time { return now }
	fetch := func(name string) {
		t.Helper()
		if _, err := src.FetchChart(t.Context(), Request{Repository: repo.URL, Name: name, MaxAge: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	reads := func() int { return repo.Requests("/index.yaml") }

	fetch("web")
	src.charts.mu.Lock()
	one := src.charts.indexes[chartIndexKey(Request{Repository: repo.URL, Name: "web"})].size
	src.charts.maxIndexBytes = one // room for one chart's entry
	src.charts.mu.Unlock()
	if one <= 0 {
		t.Fatalf("the entry's size is %d", one)
	}
	fetch("web")
	if n := reads(); n != 1 {
		t.Fatalf("index read %d times for two fetches of web within MaxAge; want 1", n)
	}
	t.Run("over the byte bound, the least recently used goes", func(t *testing.T) {
		now = now.Add(time.Minute)
		fetch("api") // web's entry is dropped to make room for api's
		now = now.Add(time.Minute)
		fetch("api")
		now = now.Add(time.Minute)
		fetch("web")
		if n := reads(); n != 3 {
			t.Errorf("index read %d times; want 3 (web again after api took its room)", n)
		}
		src.charts.mu.Lock()
		defer src.charts.mu.Unlock()
		if len(src.charts.indexes) != 1 {
			t.Errorf("%d entries kept within the room of one", len(src.charts.indexes))
		}
	})
	t.Run("an index nobody asked for within twice its interval goes", func(t *testing.T) {
		src.charts.mu.Lock()
		src.charts.maxIndexBytes = maxIndexCacheBytes
		src.charts.mu.Unlock()
		now = now.Add(2*time.Hour + time.Second)
		src.charts.mu.Lock()
		src.charts.sweepLocked(now)
		kept := len(src.charts.indexes)
		src.charts.mu.Unlock()
		if kept != 0 {
			t.Errorf("%d entries kept after two intervals without a request; want none", kept)
		}
	})
}
