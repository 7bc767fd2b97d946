package gitcache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// maxEntryName bounds one tree entry's name, as the file systems git checks out
// into bound a path component.
const maxEntryName = 4096

// Kinds of tree entry that rendering tells apart; any other (a submodule) is
// neither read nor copied.
const (
	entryOther = iota
	entryTree
	entryFile
	entrySymlink
)

// treeEntry is one entry of a git tree object: what rendering needs of it.
type treeEntry struct {
	name string
	kind int
	hash plumbing.Hash
}

var errMalformedTree = errors.New("malformed tree object")

// readTreeEntries parses a git tree object ("<mode> <name>\x00<20-byte id>",
// repeated) from r, one entry at a time, and fails once it holds more than limit
// entries, so that a tree of millions of entries costs no more than limit of them
// to refuse. (go-git's own decoder builds every entry first.)
func readTreeEntries(r io.Reader, limit int) ([]treeEntry, error) {
	// The buffer holds the longest field whole (readField).
	br := bufio.NewReaderSize(r, maxEntryName+1)
	var out []treeEntry
	for {
		mode, err := readField(br, ' ', 8)
		if errors.Is(err, io.EOF) && len(mode) == 0 {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: mode: %w", errMalformedTree, err)
		}
		kind, kindErr := entryKind(string(mode))
		raw, err := readField(br, 0, maxEntryName)
		if err != nil {
			return nil, fmt.Errorf("%w: name: %w", errMalformedTree, err)
		}
		name := string(raw)
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%w: entry name %q", errMalformedTree, name)
		}
		var hash plumbing.Hash
		if _, err := io.ReadFull(br, hash[:]); err != nil {
			return nil, fmt.Errorf("%w: object id of %q: %w", errMalformedTree, name, err)
		}
		if kindErr != nil {
			return nil, fmt.Errorf("%w: %q: %w", errMalformedTree, name, kindErr)
		}
		if len(out) == limit {
			return nil, errTooManyEntries
		}
		out = append(out, treeEntry{name: name, kind: kind, hash: hash})
	}
}

// errTooManyEntries: a tree holds more entries than the caller has left to read.
var errTooManyEntries = errors.New("too many tree entries")

// readField reads up to delim, which it drops, failing past max bytes (at most
// br's size less one). The field is br's own bytes, good until br's next read: a
// tree of a thousand entries is read without a buffer for each field.
func readField(br *bufio.Reader, delim byte, max int) ([]byte, error) {
	b, err := br.ReadSlice(delim)
	switch {
	case errors.Is(err, bufio.ErrBufferFull), err == nil && len(b)-1 > max, err != nil && len(b) > max:
		return nil, fmt.Errorf("longer than %d bytes", max)
	case errors.Is(err, io.EOF) && len(b) > 0:
		return b, io.ErrUnexpectedEOF
	case err != nil:
		return b, err
	}
	return b[:len(b)-1], nil
}

// entryKind classes an entry by the type bits of its octal mode, as git does
// (a regular file may be written 100664 by old tools).
func entryKind(mode string) (int, error) {
	m, err := strconv.ParseUint(mode, 8, 32)
	if err != nil || mode == "" {
		return 0, fmt.Errorf("mode %q", mode)
	}
	switch filemode.FileMode(m) & 0o170000 {
	case filemode.Dir:
		return entryTree, nil
	case filemode.Regular & 0o170000:
		return entryFile, nil
	case filemode.Symlink:
		return entrySymlink, nil
	}
	return entryOther, nil
}
