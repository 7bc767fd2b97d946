package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root from this package.
const root = "../.."

var (
	// link is a Markdown link or image: [text](target).
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codePath is a code span naming a path under one of the repository's
	// top-level directories.
	codePath = regexp.MustCompile("`((?:api|cmd|deploy|docs|hack|plan|apply|health|sync|source|ui|test|webhook)/[A-Za-z0-9_./-]*)`")
)

// markdownFiles are README.md, CHANGELOG.md and every Markdown file of docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}, files...)
}

// TestEveryRelativeLinkExists follows each relative link from the file that
// holds it (anchors and queries cut off).
func TestEveryRelativeLinkExists(t *testing.T) {
	n := 0
	for _, file := range markdownFiles(t) {
		for _, m := range link.FindAllStringSubmatch(read(t, file), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			target, _, _ = strings.Cut(target, "?")
			n++
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel(file), m[1])
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d relative links; the pattern no longer reads the docs", n)
	}
}

// TestEveryPathNamedExists looks up each repository path named in a code span,
// from the repository's root, but placeholders (<...>, X.Y.Z, *, ...).
func TestEveryPathNamedExists(t *testing.T) {
	n := 0
	for _, file := range markdownFiles(t) {
		for _, m := range codePath.FindAllStringSubmatch(read(t, file), -1) {
			path := strings.TrimRight(m[1], ".")
			if strings.ContainsAny(path, "<>*") || strings.Contains(path, "X.Y.Z") || strings.Contains(path, "...") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s names %s, which does not exist", rel(file), path)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d paths; the pattern no longer reads the docs", n)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}
