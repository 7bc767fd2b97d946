package gitcache

import (
	"errors"
	"path"
	"strings"
)

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
