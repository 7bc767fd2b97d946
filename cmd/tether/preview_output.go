package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
)

// Bounds of a markdown preview: a pull-request comment is at most 65,536
// characters on GitHub (1,000,000 on GitLab); the diffs share what is left
// after the summary, and one Sync's diff is cut at maxSyncMarkdown.
const (
	maxMarkdown     = 60000
	maxSyncMarkdown = 20000
)

// writePreview writes report in format: text, markdown or json.
func writePreview(w io.Writer, format string, report *previewReport) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		return enc.Encode(report)
	case "markdown":
		_, err := io.WriteString(w, previewMarkdown(report))
		return err
	}
	return previewText(w, report)
}

// previewText writes each changed Sync's diff under a header, then the Syncs
// the change leaves alone.
func previewText(w io.Writer, report *previewReport) error {
	var untouched []string
	for _, p := range report.Syncs {
		switch {
		case p.Error != "":
			fmt.Fprintf(w, "=== Sync %s/%s (%s): error\n%s\n", p.Namespace, p.Name, p.Path, p.Error)
		case p.Changed:
			fmt.Fprintf(w, "=== Sync %s/%s (%s) changes\n%s", p.Namespace, p.Name, p.Path, p.Diff)
		default:
			untouched = append(untouched, p.Namespace+"/"+p.Name)
		}
	}
	if len(untouched) > 0 {
		fmt.Fprintf(w, "=== untouched: %s\n", strings.Join(untouched, ", "))
	}
	return nil
}

// previewMarkdown is a pull-request comment: a summary, then one collapsed
// section per changed Sync with its diff, bounded (see maxMarkdown). Everything
// from git or the cluster is escaped or fenced: a diff may hold anything.
func previewMarkdown(report *previewReport) string {
	var b strings.Builder
	changed, untouched := 0, 0
	for _, p := range report.Syncs {
		if p.Changed || p.Error != "" {
			changed++
		} else {
			untouched++
		}
	}
	fmt.Fprintf(&b, "### Tether preview of %.12s → %.12s\n\n", report.Base, report.Head)
	fmt.Fprintf(&b, "%d Sync(s) change, %d untouched.\n\n", changed, untouched)
	for _, p := range report.Syncs {
		if !p.Changed && p.Error == "" {
			continue
		}
		title := fmt.Sprintf("Sync %s/%s (%s)", p.Namespace, p.Name, p.Path)
		body := p.Diff
		if p.Error != "" {
			title += ": error"
			body = p.Error + "\n" + body
		}
		if b.Len() > maxMarkdown-1000 {
			fmt.Fprintf(&b, "- %s: diff left out, the comment is full\n", html.EscapeString(title))
			continue
		}
		body = cut(body, min(maxSyncMarkdown, maxMarkdown-1000-b.Len()))
		fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
		fmt.Fprintf(&b, "<details><summary>%s</summary>\n\n%sdiff\n%s\n%s\n\n</details>\n\n", html.EscapeString(title), fence, strings.TrimRight(body, "\n"), fence)
	}
	return b.String()
}

// cut bounds s to n bytes at a line end, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:max(n, 0)]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i+1]
	}
	return s + "# … cut: run tether preview to see the whole diff\n"
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
