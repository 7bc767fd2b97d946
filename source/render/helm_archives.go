package render

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// maxArchiveDepth bounds how deep vendored chart archives may nest (an
// archive under charts/ of a chart in an archive, …).
const maxArchiveDepth = 8

// expandArchives replaces every vendored chart archive of a chart's files
// (charts/NAME.tgz, at any depth of subcharts) with the files it holds, as
// the directory charts/NAME, unpacked by Tether as a chart package is
// (UnpackChart): within the files and bytes a chart may hold in all
// (MaxChartFiles, MaxTreeSize, MaxFileSize per file), counted over the
// chart and every archive inside it, and with links and names leaving the
// archive refused. Helm's loader then loads directories only, and the YAML
// node budget counts the archives' files as it counts the chart's own.
func expandArchives(files []*archive.BufferedFile, label string, opts Options) ([]*archive.BufferedFile, error) {
	e := &archiveExpansion{label: label, opts: opts, entries: len(files)}
	for _, f := range files {
		e.bytes += int64(len(f.Data))
	}
	return e.expand(files, 0)
}

type archiveExpansion struct {
	label   string
	opts    Options
	entries int
	bytes   int64
}

func (e *archiveExpansion) expand(files []*archive.BufferedFile, depth int) ([]*archive.BufferedFile, error) {
	var out []*archive.BufferedFile
	for _, f := range files {
		dir, ok := vendoredArchive(f.Name)
		if !ok {
			out = append(out, f)
			continue
		}
		if depth >= maxArchiveDepth {
			return nil, &result.RenderError{File: path.Join(e.label, f.Name), Reason: v1alpha1.ReasonRenderLimitExceeded,
				Err: fmt.Errorf("chart archives nest more than %d deep", maxArchiveDepth)}
		}
		inner, err := e.unpack(f)
		if err != nil {
			return nil, err
		}
		for _, in := range inner {
			in.Name = dir + "/" + in.Name
		}
		expanded, err := e.expand(inner, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, expanded...)
	}
	return out, nil
}

// unpack unpacks one archive within what the chart has left of its bounds.
func (e *archiveExpansion) unpack(f *archive.BufferedFile) ([]*archive.BufferedFile, error) {
	e.bytes -= int64(len(f.Data))
	e.entries--
	left := e.opts
	left.MaxChartFiles = e.opts.MaxChartFiles - e.entries
	left.MaxTreeSize = e.opts.MaxTreeSize - e.bytes
	if left.MaxChartFiles <= 0 || left.MaxTreeSize <= 0 {
		return nil, &result.RenderError{File: path.Join(e.label, f.Name), Reason: v1alpha1.ReasonRenderLimitExceeded,
			Err: fmt.Errorf("the chart and its archives hold more than %d files or %d bytes, the limits", e.opts.MaxChartFiles, e.opts.MaxTreeSize)}
	}
	const root = "archive"
	fs, err := UnpackChart(f.Data, root, left)
	if err != nil {
		if re, ok := err.(*result.RenderError); ok {
			re.File = path.Join(e.label, f.Name)
		}
		return nil, err
	}
	var inner []*archive.BufferedFile
	for name, data := range fs.files {
		inner = append(inner, &archive.BufferedFile{Name: strings.TrimPrefix(name, "/"+root+"/"), Data: data})
		e.entries++
		e.bytes += int64(len(data))
	}
	sort.Slice(inner, func(i, j int) bool { return inner[i].Name < inner[j].Name })
	return inner, nil
}

// vendoredArchive reports whether name is a chart archive Helm's loader would
// load as a subchart (charts/NAME.tgz below the chart or a subchart of it),
// and the directory its files take instead (charts/NAME).
func vendoredArchive(name string) (string, bool) {
	if path.Ext(name) != ".tgz" {
		return "", false
	}
	parts := strings.Split(name, "/")
	n := len(parts)
	if n < 2 || parts[n-2] != "charts" || strings.IndexAny(parts[n-1], "._") == 0 {
		return "", false
	}
	// Every directory above must be a subchart's: charts/A/charts/B.tgz.
	for i := 0; i < n-2; i += 2 {
		if parts[i] != "charts" {
			return "", false
		}
	}
	if (n-2)%2 != 0 {
		return "", false
	}
	return strings.TrimSuffix(name, ".tgz"), true
}
