package source

import (
	"context"
	"errors"
	"maps"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Render renders dir (relative to the repository root) of a fetched revision. Results
// are cached by (URL, commit, path): a revision's content never changes, so a resync
// of an unchanged revision costs no rendering.
//
// Each call returns objects of its own down to their metadata (what a caller marks
// and places: labels, annotations, namespace); below it (spec, data, metadata's
// nested maps), they are shared with the cache and with other calls, and must not
// be changed in place. A copy per call of everything would cost as much memory
// as the rendered revision at every reconcile.
func (s *Source) Render(ctx context.Context, rev Revision, dir string) (*Snapshot, error) {
	clean, err := CleanPath(dir)
	if err != nil {
		return nil, err
	}
	key := rev.URL + "\x00" + rev.Commit + "\x00" + clean
	objs, ok := s.renders.get(key)
	if !ok {
		var size int64
		if objs, size, err = s.render(ctx, rev, clean); err != nil {
			return nil, err
		}
		s.renders.put(key, objs, size)
	}
	return &Snapshot{Revision: rev, Path: clean, Objects: ownMetadata(objs)}, nil
}

// render renders dir of rev, at most Options.MaxConcurrentRenders at once, so
// that the memory renders take at their peak does not add up with the number of
// workers. It returns the objects and their size as JSON.
func (s *Source) render(ctx context.Context, rev Revision, dir string) ([]*unstructured.Unstructured, int64, error) {
	select {
	case s.rendering <- struct{}{}:
		defer func() { <-s.rendering }()
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	fs, err := s.tree(rev, dir)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return renderSized(fs, "/", path.Join("/", dir), RenderOptions{
		MaxObjects: s.opts.MaxObjects, MaxBytes: s.opts.MaxRenderedBytes,
		MaxYAMLNodesPerFile: s.opts.MaxYAMLNodesPerFile, MaxYAMLNodesPerRender: s.opts.MaxYAMLNodesPerRender,
	})
}

// CleanPath checks a path inside the repository and returns it cleaned ("." for the
// root). Absolute paths and paths that climb out of the repository are refused.
func CleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) {
		return "", &RenderError{File: p, Err: errors.New("path must be relative to the repository root")}
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &RenderError{File: p, Err: errors.New("path leaves the repository")}
	}
	return clean, nil
}

// ownMetadata returns copies of objs whose top level and metadata maps are their
// own: setting a field of either (unstructured's SetX replace the maps they set,
// labels and annotations included) leaves objs as they were.
func ownMetadata(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		c := &unstructured.Unstructured{Object: maps.Clone(o.Object)}
		if m, ok := o.Object["metadata"].(map[string]any); ok {
			c.Object["metadata"] = maps.Clone(m)
		}
		out[i] = c
	}
	return out
}
