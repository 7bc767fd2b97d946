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

// TestEveryPictureOfTheUIIsABrowserTestsScreenshot keeps docs/ui.md's pictures
// from going stale: each one it shows must be listed in the Makefile's
// UI_PICTURES (which `make ui-pictures` copies from the browser tests'
// screenshots), and each screenshot listed there must be one that test/browser
// takes by that name.
func TestEveryPictureOfTheUIIsABrowserTestsScreenshot(t *testing.T) {
	makefile := strings.ReplaceAll(read(t, filepath.Join(root, "Makefile")), "\\\n", " ")
	m := regexp.MustCompile(`(?m)^UI_PICTURES :=(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no UI_PICTURES")
	}
	screenshotOf := map[string]string{} // picture → screenshot
	for _, pair := range strings.Fields(m[1]) {
		shot, picture, ok := strings.Cut(pair, ":")
		if !ok {
			t.Fatalf("UI_PICTURES holds %q, want SCREENSHOT:PICTURE", pair)
		}
		screenshotOf[picture+".png"] = shot
	}
	var browserTests strings.Builder
	files, err := filepath.Glob(filepath.Join(root, "test", "browser", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		browserTests.WriteString(read(t, f))
	}
	taken := regexp.MustCompile(`screenshot(?:Of)?\("([a-z0-9-]+)"`)
	shots := map[string]bool{}
	for _, s := range taken.FindAllStringSubmatch(browserTests.String(), -1) {
		shots[s[1]] = true
	}
	if len(shots) < 10 {
		t.Fatalf("found %d screenshots in test/browser; the pattern no longer reads the tests", len(shots))
	}
	shown := regexp.MustCompile(`!\[[^\]]*\]\((ui-[a-z0-9-]+\.png)\)`).FindAllStringSubmatch(read(t, filepath.Join(root, "docs", "ui.md")), -1)
	if len(shown) == 0 {
		t.Fatal("docs/ui.md shows no picture of the UI; the pattern no longer reads it")
	}
	for _, s := range shown {
		shot, ok := screenshotOf[s[1]]
		switch {
		case !ok:
			t.Errorf("docs/ui.md shows %s, which UI_PICTURES does not list: make ui-pictures would never redraw it", s[1])
		case !shots[shot]:
			t.Errorf("UI_PICTURES draws %s from the screenshot %s, which no browser test takes", s[1], shot)
		}
	}
}
