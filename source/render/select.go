package render

import (
	"fmt"
	"path/filepath"

	"github.com/gobwas/glob"

	"tether.dev/tether/api/v1alpha1"
)

// Directory selects what of a plain directory (one without a kustomization)
// a render reads: Argo CD's spec.source.directory. The zero value reads every
// manifest file, recursively, and builds every subdirectory holding a
// kustomization, as Flux does. A directory holding a kustomization is built
// whole, whatever it says.
type Directory struct {
	// NoRecurse reads the directory's own files only, no subdirectory.
	NoRecurse bool
	// Include, when set, reads only the files whose path relative to the
	// directory it matches; Exclude leaves out those it matches. Both are
	// globs as Argo CD reads them: "*" and "?" match "/" too, and "{a,b}"
	// is either. A subdirectory holding a kustomization is selected by its
	// path as a file is.
	Include, Exclude string
}

// DirectoryOf is the selection a Sync's spec.source.directory makes; the
// zero value for none.
func DirectoryOf(d *v1alpha1.DirectorySpec) Directory {
	if d == nil {
		return Directory{}
	}
	return Directory{NoRecurse: !d.RecurseOrDefault(), Include: d.Include, Exclude: d.Exclude}
}

// Key is d in a render cache key; empty for the zero value, so that a render
// with no selection keeps the key it always had.
func (d Directory) Key() string {
	if d == (Directory{}) {
		return ""
	}
	return fmt.Sprintf("\x00dir:%t\x00%s\x00%s", d.NoRecurse, d.Include, d.Exclude)
}

// fileSelector is a Directory compiled: which paths below dir a plain
// render reads.
type fileSelector struct {
	dir              string
	recurse          bool
	include, exclude glob.Glob
}

// selector compiles d for a render of dir; an error names the field of
// spec.source.directory whose glob does not compile.
func (d Directory) selector(dir string) (*fileSelector, error) {
	s := &fileSelector{dir: dir, recurse: !d.NoRecurse}
	var err error
	if d.Include != "" {
		if s.include, err = glob.Compile(d.Include); err != nil {
			return nil, fmt.Errorf("spec.source.directory.include %q: %w", d.Include, err)
		}
	}
	if d.Exclude != "" {
		if s.exclude, err = glob.Compile(d.Exclude); err != nil {
			return nil, fmt.Errorf("spec.source.directory.exclude %q: %w", d.Exclude, err)
		}
	}
	return s, nil
}

// descends reports whether the render reads below the subdirectory p.
func (s *fileSelector) descends() bool { return s == nil || s.recurse }

// reads reports whether the render reads the file, or builds the
// kustomization of the subdirectory, at p.
func (s *fileSelector) reads(p string) bool {
	if s == nil {
		return true
	}
	rel, err := filepath.Rel(s.dir, p)
	if err != nil {
		return false
	}
	rel = filepath.ToSlash(rel)
	if s.include != nil && !s.include.Match(rel) {
		return false
	}
	return s.exclude == nil || !s.exclude.Match(rel)
}
