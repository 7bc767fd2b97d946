package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// ErrChartPackage is wrapped by the result.RenderError of a package that cannot be
// unpacked as a chart (not a gzipped tar, a link, a name leaving the chart).
var ErrChartPackage = errors.New("not a chart package")

// UnpackChart unpacks a chart package (a gzipped tar holding one directory)
// into an in-memory file system, under /<label>, within the bounds of opts:
// Options.MaxChartFiles entries, Options.MaxFileSize per file and
// Options.MaxTreeSize in all, counted as the archive is read so that a small
// package cannot unpack to gigabytes. Links and names leaving the directory
// are refused. Errors are RenderErrors naming label.
func UnpackChart(data []byte, label string, opts Options) (*FS, error) {
	fail := func(reason string, err error) (*FS, error) {
		return nil, &result.RenderError{File: label, Reason: reason, Err: err}
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fail("", fmt.Errorf("%w: %w", ErrChartPackage, err))
	}
	defer func() { _ = gz.Close() }()
	fs := NewFS()
	tr := tar.NewReader(gz)
	var entries int
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail("", fmt.Errorf("%w: %w", ErrChartPackage, err))
		}
		if entries++; entries > opts.MaxChartFiles {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("the package holds more than %d files, the limit", opts.MaxChartFiles))
		}
		name, err := packagedName(h)
		if err != nil {
			return fail("", err)
		}
		if name == "" {
			continue
		}
		if h.Size > opts.MaxFileSize {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("%.200s is %d bytes, over the limit of %d per file", name, h.Size, opts.MaxFileSize))
		}
		if total += h.Size; total > opts.MaxTreeSize {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("the package unpacks to more than %d bytes, the limit", opts.MaxTreeSize))
		}
		content, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return fail("", fmt.Errorf("%w: %.200s: %w", ErrChartPackage, name, err))
		}
		if err := fs.WriteFile(path.Join("/", label, name), content); err != nil {
			return fail("", fmt.Errorf("%w: %w", ErrChartPackage, err))
		}
	}
	if !IsChart(fs, path.Join("/", label)) {
		return fail("", fmt.Errorf("%w: no Chart.yaml in the package's directory", ErrChartPackage))
	}
	return fs, nil
}

// packagedName is the name of a file of a package inside its chart's
// directory ("templates/web.yaml"), or "" for an entry that is no file to
// keep (a directory, the directory itself). A chart package holds one
// directory of regular files; anything else is refused.
func packagedName(h *tar.Header) (string, error) {
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeXGlobalHeader:
		return "", nil
	case tar.TypeReg:
	default:
		return "", fmt.Errorf("%w: %.200s is not a regular file (links are refused)", ErrChartPackage, h.Name)
	}
	clean := path.Clean(strings.TrimPrefix(h.Name, "./"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: %.200s leaves the chart", ErrChartPackage, h.Name)
	}
	_, rest, ok := strings.Cut(clean, "/")
	if !ok || rest == "" {
		return "", fmt.Errorf("%w: %.200s is outside the chart's directory", ErrChartPackage, h.Name)
	}
	return rest, nil
}
