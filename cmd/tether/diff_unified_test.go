package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestUnifiedDiff(t *testing.T) {
	lines := func(s string) []string {
		ls := strings.SplitAfter(s, "\n")
		return ls[:len(ls)-1]
	}
	numbered := func(from, to int, changed map[int]string) string {
		var sb strings.Builder
		for i := from; i <= to; i++ {
			if c, ok := changed[i]; ok {
				sb.WriteString(c + "\n")
			} else {
				fmt.Fprintf(&sb, "%d\n", i)
			}
		}
		return sb.String()
	}
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"from nothing", "", "a\nb\n", "--- live\n+++ desired\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"to nothing", "a\n", "", "--- live\n+++ desired\n@@ -1 +0,0 @@\n-a\n"},
		{
			"one change with three lines of context", numbered(1, 9, nil), numbered(1, 9, map[int]string{5: "five"}),
			"--- live\n+++ desired\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		{
			"changes six lines apart share a hunk", numbered(1, 12, nil), numbered(1, 12, map[int]string{2: "two", 9: "nine"}),
			"--- live\n+++ desired\n@@ -1,12 +1,12 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+nine\n 10\n 11\n 12\n",
		},
		{
			"changes seven lines apart do not", numbered(1, 13, nil), numbered(1, 13, map[int]string{2: "two", 10: "ten"}),
			"--- live\n+++ desired\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n",
		},
		{"an insertion", "a\nc\n", "a\nb\nc\n", "--- live\n+++ desired\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unifiedDiff("live", "desired", lines(tc.a), lines(tc.b), 3)); diff != "" {
				t.Errorf("unifiedDiff (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEditScriptIsShortestAndComplete checks the edit script of random inputs
// against what it must be: it rebuilds both sides, and it keeps as many lines as
// their longest common subsequence, which a slow textbook LCS computes.
func TestEditScriptIsShortestAndComplete(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomLines := func() []string {
		out := make([]string, rng.IntN(30))
		for i := range out {
			out[i] = string(rune('a'+rng.IntN(4))) + "\n"
		}
		return out
	}
	for range 500 {
		a, b := randomLines(), randomLines()
		edits := editScript(a, b)
		gotA, gotB, kept := sides(edits)
		if !cmp.Equal(a, gotA, cmpopts.EquateEmpty()) || !cmp.Equal(b, gotB, cmpopts.EquateEmpty()) {
			t.Fatalf("edits %q do not rebuild %q and %q", edits, a, b)
		}
		if want := lcsLength(a, b); kept != want {
			t.Fatalf("edits of %q to %q keep %d lines, want the longest common subsequence, %d", a, b, kept, want)
		}
	}
}

func TestEditScriptBeyondMaxEditsIsStillADiff(t *testing.T) {
	var a, b []string
	for i := range maxEdits {
		a = append(a, fmt.Sprintf("a%d\n", i))
		b = append(b, fmt.Sprintf("b%d\n", i))
	}
	a, b = append([]string{"head\n"}, append(a, "tail\n")...), append([]string{"head\n"}, append(b, "tail\n")...)
	gotA, gotB, kept := sides(editScript(a, b))
	if !cmp.Equal(a, gotA) || !cmp.Equal(b, gotB) || kept != 2 {
		t.Errorf("edits rebuild equal sides %v, keep %d lines; want both sides rebuilt and head and tail kept", cmp.Equal(a, gotA) && cmp.Equal(b, gotB), kept)
	}
}

func sides(edits []edit) (a, b []string, kept int) {
	for _, e := range edits {
		if e.op != '+' {
			a = append(a, e.line)
		}
		if e.op != '-' {
			b = append(b, e.line)
		}
		if e.op == ' ' {
			kept++
		}
	}
	return a, b, kept
}

func lcsLength(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}
