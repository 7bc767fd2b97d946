package source

import (
	"bufio"
	"bytes"
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
	br := bufio.NewReaderSize(r, 4096)
	var out []treeEntry
	for {
		mode, err := readField(br, ' ', 8)
		if errors.Is(err, io.EOF) && mode == "" {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: mode: %w", errMalformedTree, err)
		}
		name, err := readField(br, 0, maxEntryName)
		if err != nil {
			return nil, fmt.Errorf("%w: name: %w", errMalformedTree, err)
		}
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%w: entry name %q", errMalformedTree, name)
		}
		var hash plumbing.Hash
		if _, err := io.ReadFull(br, hash[:]); err != nil {
			return nil, fmt.Errorf("%w: object id of %q: %w", errMalformedTree, name, err)
		}
		kind, err := entryKind(mode)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", errMalformedTree, name, err)
		}
		if len(out) == limit {
			return nil, errTooManyEntries
		}
		out = append(out, treeEntry{name: name, kind: kind, hash: hash})
	}
}

// errTooManyEntries: a tree holds more entries than the caller has left to read.
var errTooManyEntries = errors.New("too many tree entries")

// readField reads up to delim, which it drops, failing past max bytes.
func readField(br *bufio.Reader, delim byte, max int) (string, error) {
	var b bytes.Buffer
	for {
		c, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && b.Len() > 0 {
				err = io.ErrUnexpectedEOF
			}
			return b.String(), err
		}
		if c == delim {
			return b.String(), nil
		}
		if b.Len() == max {
			return "", fmt.Errorf("longer than %d bytes", max)
		}
		b.WriteByte(c)
	}
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
