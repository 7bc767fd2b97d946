package source

import (
	"path"

	"tether.dev/tether/source/render"
)

// maxChartProbes bounds the answers holdsChart remembers; past it they are
// forgotten all at once (each costs a few tree reads to learn again).
const maxChartProbes = 4096

// holdsChart reports whether dir of rev holds a Chart.yaml: whether the render
// cache's key must hold what changes a chart's render. It reads only the trees
// on the way to dir, and remembers the answer by key (URL, commit, path), which
// never changes. A commit the cache cannot read is left for the render to
// report: holdsChart then answers false, and remembers nothing.
func (s *Source) holdsChart(rev Revision, dir, key string) (bool, error) {
	s.renderMu.Lock()
	known, ok := s.chartPaths[key]
	s.renderMu.Unlock()
	if ok {
		return known, nil
	}
	found, read, err := s.probeChart(rev, dir)
	if err != nil || !read {
		return false, err
	}
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	if len(s.chartPaths) >= maxChartProbes {
		clear(s.chartPaths)
	}
	s.chartPaths[key] = found
	return found, nil
}

// probeChart looks for dir/Chart.yaml in rev's tree; read is false when the
// cache could not tell (the render reports why).
func (s *Source) probeChart(rev Revision, dir string) (found, read bool, err error) {
	if rev.Artifact != "" {
		return s.artifactHolds(rev, path.Join(dir, render.ChartFile))
	}
	return s.git.HoldsFile(rev, path.Join(dir, render.ChartFile))
}
