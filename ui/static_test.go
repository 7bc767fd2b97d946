package ui

import (
	"strings"
	"testing"
)

// TestTheStylesheetsBracesBalance: a stray } at the top of a stylesheet is no
// error to a browser, which silently drops the rule after it.
func TestTheStylesheetsBracesBalance(t *testing.T) {
	css, err := staticFiles.ReadFile("static/ui.css")
	if err != nil {
		t.Fatal(err)
	}
	depth := 0
	for i, line := range strings.Split(string(css), "\n") {
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if depth < 0 {
			t.Fatalf("ui.css line %d closes a block never opened: %q", i+1, line)
		}
	}
	if depth != 0 {
		t.Errorf("ui.css ends with %d blocks open", depth)
	}
}
