package main

import (
	"fmt"
	"strings"
)

// unifiedDiff writes the difference of lines a and b (each ending in "\n") in
// unified format with n lines of context, or "" when they are equal.
func unifiedDiff(nameA, nameB string, a, b []string, n int) string {
	edits := editScript(a, b)
	var sb strings.Builder
	for _, h := range hunks(edits, n) {
		if sb.Len() == 0 {
			fmt.Fprintf(&sb, "--- %s\n+++ %s\n", nameA, nameB)
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(h.startA, h.lenA), hunkRange(h.startB, h.lenB))
		for _, e := range edits[h.from:h.to] {
			sb.WriteByte(e.op)
			sb.WriteString(e.line)
		}
	}
	return sb.String()
}

// edit is one line of a diff: ' ' kept, '-' only in a, '+' only in b.
type edit struct {
	op   byte
	line string
}

// hunk is a run of edits[from:to] with its line ranges (0-based starts) in a and b.
type hunk struct {
	from, to     int
	startA, lenA int
	startB, lenB int
}

// hunks groups changes with n kept lines around each; changes closer than 2n
// lines share a hunk, as in diff -u.
func hunks(edits []edit, n int) []hunk {
	var out []hunk
	lineA, lineB := 0, 0 // lines of a and b before edits[i]
	for i := 0; i < len(edits); {
		if edits[i].op == ' ' {
			lineA, lineB, i = lineA+1, lineB+1, i+1
			continue
		}
		from := max(0, i-n)
		h := hunk{from: from, startA: lineA - (i - from), startB: lineB - (i - from)}
		kept := 0 // kept lines since the last change
		for ; i < len(edits) && kept <= 2*n; i++ {
			switch edits[i].op {
			case ' ':
				lineA, lineB, kept = lineA+1, lineB+1, kept+1
			case '-':
				lineA, kept = lineA+1, 0
			case '+':
				lineB, kept = lineB+1, 0
			}
		}
		// Give back the kept lines beyond the trailing context.
		extra := max(0, kept-n)
		i, lineA, lineB = i-extra, lineA-extra, lineB-extra
		h.to, h.lenA, h.lenB = i, lineA-h.startA, lineB-h.startB
		out = append(out, h)
	}
	return out
}

// hunkRange writes a hunk's line range: 1-based start and length, the length left
// out when it is 1, and the start being the line before an empty range.
func hunkRange(start, length int) string {
	switch length {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, length)
}

// maxEdits bounds the search for a shortest edit script, whose memory grows with
// the square of the edits. Objects that differ in more lines are shown as one
// replacement of the lines between their common head and tail.
const maxEdits = 2000

// editScript returns a shortest sequence of edits that turns a into b (Myers'
// O(ND) algorithm), after setting aside their common head and tail.
func editScript(a, b []string) []edit {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out []edit
	for _, l := range a[:head] {
		out = append(out, edit{' ', l})
	}
	midA, midB := a[head:len(a)-tail], b[head:len(b)-tail]
	mid, ok := myers(midA, midB)
	if !ok {
		mid = replacement(midA, midB)
	}
	out = append(out, mid...)
	for _, l := range a[len(a)-tail:] {
		out = append(out, edit{' ', l})
	}
	return out
}

func replacement(a, b []string) []edit {
	out := make([]edit, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, edit{'-', l})
	}
	for _, l := range b {
		out = append(out, edit{'+', l})
	}
	return out
}

// myers searches the edit graph of a and b breadth-first by number of edits d,
// keeping for each d the furthest x reached on every diagonal k = x - y, then walks
// back through those snapshots. ok is false past maxEdits.
func myers(a, b []string) (edits []edit, ok bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replacement(a, b), true
	}
	limit := min(n+m, maxEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int // trace[d][k+d]: v before step d
	for d := 0; d <= limit; d++ {
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		for k := -d; k <= d; k += 2 {
			x := v[off+k-1] + 1 // a deletion from diagonal k-1
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // an insertion from diagonal k+1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace), true
			}
		}
	}
	return nil, false
}

// backtrack turns the snapshots of myers into edits, walking from the end.
func backtrack(a, b []string, trace [][]int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		at := func(k int) int { return trace[d][k+d] }
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			rev = append(rev, edit{' ', a[x]})
		}
		if x == prevX {
			rev = append(rev, edit{'+', b[prevY]})
		} else {
			rev = append(rev, edit{'-', a[prevX]})
		}
		x, y = prevX, prevY
	}
	for x > 0 {
		x--
		rev = append(rev, edit{' ', a[x]})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
