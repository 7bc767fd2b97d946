package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docs/reasons.md is written from api/v1alpha1's table of reasons: a reason added
// there without `make docs` fails here, as `make verify` does.
func TestTheTableOfReasonsInTheDocsIsCurrent(t *testing.T) {
	t.Chdir("../..") // the paths the Makefile passes
	want, err := reasonsTable("api/v1alpha1/reasons.go")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("docs/reasons.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("docs/reasons.md is stale (run `make docs`), -want +got:\n%s", diff)
	}
}
