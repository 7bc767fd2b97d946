package main

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNeverTakeOverManagersFlag(t *testing.T) {
	f, err := parseControllerFlags([]string{"--never-take-over-managers", "kubectl, break-glass", "--never-take-over-managers=ops"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kubectl", "break-glass", "ops"}, f.neverTakeOver); diff != "" {
		t.Errorf("never take over (-want +got):\n%s", diff)
	}
}
