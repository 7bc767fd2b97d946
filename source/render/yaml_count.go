package render

// YAMLNodeBound returns, from the text alone and in one pass, a number that is
// at least the count of nodes (documents, mappings, sequences, scalars, aliases)
// a YAML parser builds from data, so that a file can be refused before the
// parser spends a few hundred bytes on each of its nodes. A flat 8 MiB file of
// "- 1" lines is two million nodes, half a GiB as yaml.v3 nodes.
//
// It knows nothing of context, so nothing can put it out of step with the
// parser: each node is charged to a byte that every spelling of the node needs.
// A scalar is charged to its first byte (a run of text starts a scalar only at
// the start of a line or after an indicator, never after text and blanks); an
// empty node to the indicator that implies it (":", "-", "?", ",", "}", "]", a
// tag or an anchor); a mapping or a sequence to the indicator that opens it or
// its first ":" or "-"; a document to "---", "..." or the start of the stream.
// Text in quotes, comments and block scalars is counted as if it were
// structure, so the bound runs high on prose: about twice the nodes of a
// typical manifest.
func YAMLNodeBound(data []byte) int {
	count := 2 // the first document and its root
	const (
		lineStart = iota
		indicator
		text
	)
	prev := lineStart // the class of the last byte that is not blank
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n' || c == '\r' || isUnicodeBreak(data, i):
			prev = lineStart
			continue
		case c == ' ' || c == '\t':
			continue
		}
		if prev == lineStart && c == '.' && hasPrefixAt(data, i, "...") {
			count += 2 // a document may start after a document end marker
		}
		w, ok := indicatorWeight(data, i, prev == text)
		switch {
		case ok && (c == '!' || c == '&' || c == '*'):
			// A tag, an anchor or an alias: its name is no scalar of its own.
			count += w
			i = propertyEnd(data, i)
			prev = indicator
		case ok:
			count += w
			prev = indicator
		default:
			if prev != text {
				count++
			}
			prev = text
		}
	}
	return count
}

// propertyEnd returns the index of the last byte of the tag, anchor or alias
// name that starts at i: it ends before a blank, a line break, a flow indicator
// or a ":".
func propertyEnd(data []byte, i int) int {
	for i+1 < len(data) && !isBlankOrFlow(data[i+1]) && data[i+1] != ':' && !breakAt(data, i+1) {
		i++
	}
	return i
}

// indicatorWeight is what the byte at i may add to the nodes when it acts as an
// indicator; ok is false for a byte that is text. afterText is true when the
// byte directly follows text, with no blank between: then only flow indicators,
// and a ":" that a blank or a flow indicator follows, act as indicators.
func indicatorWeight(data []byte, i int, afterText bool) (weight int, ok bool) {
	c := data[i]
	switch c {
	case ',', '[', '{', ']', '}':
		return 1, true
	case ':':
		if afterText && i+1 < len(data) && !isBlankOrFlow(data[i+1]) && !breakAt(data, i+1) {
			return 0, false
		}
		return 2, true
	}
	if afterText {
		return 0, false
	}
	switch c {
	case '-', '*', '&', '!':
		return 2, true
	case '?':
		return 3, true
	case '|', '>', '"', '\'':
		return 1, true
	}
	return 0, false
}

func isBlankOrFlow(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '[', ']', '{', '}':
		return true
	}
	return false
}

// isUnicodeBreak reports whether data[i] ends a line break YAML parsers of the
// libyaml family also accept: NEL (C2 85), LS (E2 80 A8) and PS (E2 80 A9).
func isUnicodeBreak(data []byte, i int) bool {
	switch {
	case data[i] == 0x85 && i >= 1 && data[i-1] == 0xC2:
		return true
	case (data[i] == 0xA8 || data[i] == 0xA9) && i >= 2 && data[i-1] == 0x80 && data[i-2] == 0xE2:
		return true
	}
	return false
}

func hasPrefixAt(data []byte, i int, prefix string) bool {
	return len(data)-i >= len(prefix) && string(data[i:i+len(prefix)]) == prefix
}

// breakAt reports whether a line break starts at i, Unicode ones included.
func breakAt(data []byte, i int) bool {
	return data[i] == '\n' || data[i] == '\r' || hasPrefixAt(data, i, "\u0085") ||
		hasPrefixAt(data, i, "\u2028") || hasPrefixAt(data, i, "\u2029")
}
