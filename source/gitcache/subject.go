package gitcache

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
)

// MaxSubject bounds a commit's subject as Subject returns it, in bytes.
const MaxSubject = 200

// maxCommitRead bounds how much of a commit object Subject reads: its headers (a
// signature among them) and the first line of its message. A commit is text from
// whoever can push, and may be made large on purpose.
const maxCommitRead = 64 << 10

// Summary is what the history keeps of a commit: its subject (the first
// line of its message) and its author's name, each made safe to show (see
// OneLine) and at most MaxSubject bytes. The author's email is left out.
type Summary struct {
	Subject, Author string
}

// Summary returns the summary of commit in url's cache. It reads only the
// cache, and at most maxCommitRead bytes of the commit; a commit whose headers
// are longer has the subject "". A commit not in the cache is
// ErrHistoryUnknown.
func (c *Cache) Summary(url, commit string) (Summary, error) {
	e := c.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, url)
	if err != nil {
		return Summary{}, err
	}
	obj, err := repo.Storer.EncodedObject(plumbing.CommitObject, plumbing.NewHash(commit))
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %s", ErrHistoryUnknown, commit)
	}
	rd, err := obj.Reader()
	if err != nil {
		return Summary{}, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	defer func() { _ = rd.Close() }()
	sum, err := readSummary(io.LimitReader(rd, maxCommitRead))
	if err != nil {
		return Summary{}, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	return Summary{Subject: OneLine(sum.Subject, MaxSubject), Author: OneLine(sum.Author, MaxSubject)}, nil
}

// readSummary reads a raw commit object: headers (continuation lines begin
// with a space) up to the first empty line, the author's name among them, then
// the message, whose first non-empty line is the subject. A message cut off by
// the reader's limit gives what was read.
func readSummary(r io.Reader) (Summary, error) {
	br := bufio.NewReaderSize(r, 4096)
	var sum Summary
	inHeaders := true
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) && line == nil {
			return sum, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return Summary{}, err
		}
		if inHeaders {
			inHeaders = len(line) > 0
			if rest, ok := bytes.CutPrefix(line, []byte("author ")); ok && sum.Author == "" {
				sum.Author = authorName(string(rest))
			}
		} else if text := strings.TrimSpace(string(line)); text != "" {
			sum.Subject = text
			return sum, nil
		}
		if errors.Is(err, io.EOF) {
			return sum, nil
		}
	}
}

// authorName is the name of an author header's value,
// "Name <email> seconds zone": what comes before the email, or "" when
// there is no email to tell where the name ends.
func authorName(value string) string {
	name, _, found := strings.Cut(value, "<")
	if !found {
		return ""
	}
	return strings.TrimSpace(name)
}

// readLine reads one line without its newline; a line longer than MaxSubject*4
// is cut there (the rest of it is skipped).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line) < MaxSubject*4 {
			line = append(line, chunk[:min(len(chunk), MaxSubject*4-len(line))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			if len(line) == 0 && len(chunk) == 0 {
				return nil, err
			}
			return bytes.TrimSuffix(line, []byte("\n")), err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}

// OneLine makes text from git (a commit subject) safe to keep in a status and
// print on a terminal: invalid UTF-8, control characters (escape sequences,
// newlines, tabs) and the format characters that reorder or hide text (bidi
// overrides, zero-width characters) each become one space, runs of spaces one
// space, and the result is cut to at most maxBytes on a rune boundary, with "…"
// when cut.
func OneLine(text string, maxBytes int) string {
	var b strings.Builder
	space := false
	for _, r := range text {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	out := strings.TrimRight(b.String(), " ")
	if len(out) <= maxBytes {
		return out
	}
	const ellipsis = "…"
	cut := maxBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return strings.TrimRight(out[:max(cut, 0)], " ") + ellipsis
}
