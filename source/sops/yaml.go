package sops

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// sopsYAML reads and writes SOPS's YAML files as SOPS does: every document
// a mapping, comments kept as items of the tree, and the plaintext written
// back with an indent of 4.
type sopsYAML struct{}

var _ sopsFormat = sopsYAML{}

func (sopsYAML) load(in []byte) ([]sopsMap, error) {
	if len(in) > 0 {
		// Decoding into a map first refuses duplicate keys and excessive
		// aliasing, which walking the nodes does not check.
		if err := yaml.NewDecoder(bytes.NewReader(in)).Decode(map[string]any{}); err != nil {
			return nil, err
		}
	}
	var branches []sopsMap
	dec := yaml.NewDecoder(bytes.NewReader(in))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return branches, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := yamlMapping(&doc, sopsMap{}, false)
		if err != nil {
			return nil, err
		}
		branches = append(branches, b)
	}
}

// yamlComments appends the lines of a node's comment to a mapping, as
// comment items.
func yamlComments(m sopsMap, comment string, inline bool) sopsMap {
	for _, line := range commentLines(comment) {
		m = append(m, sopsItem{key: sopsComment{text: line, inline: inline}})
	}
	return m
}

func yamlListComments(l []any, comment string, inline bool) []any {
	for _, line := range commentLines(comment) {
		l = append(l, sopsComment{text: line, inline: inline})
	}
	return l
}

// commentLines splits a node's comment into its lines, without their '#'.
func commentLines(comment string) []string {
	var out []string
	for line := range strings.SplitSeq(comment, "\n") {
		if line != "" {
			out = append(out, line[1:])
		}
	}
	return out
}

// yamlMapping appends what a document, mapping or alias node holds to m.
// commentsDone says the node's own comments are already in the tree.
func yamlMapping(node *yaml.Node, m sopsMap, commentsDone bool) (sopsMap, error) {
	if !commentsDone {
		m = yamlComments(m, node.HeadComment, false)
		m = yamlComments(m, node.LineComment, false)
	}
	var err error
	switch node.Kind {
	case yaml.DocumentNode:
		for _, n := range node.Content {
			if m, err = yamlMapping(n, m, false); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, errors.New("a YAML document that is a sequence")
	case yaml.MappingNode:
		if m, err = yamlPairs(node, m); err != nil {
			return nil, err
		}
	case yaml.ScalarNode:
		if node.ShortTag() == "!!null" {
			return m, nil
		}
		return nil, errors.New("a YAML document that is a value")
	case yaml.AliasNode:
		if m, err = yamlMapping(node.Alias, m, false); err != nil {
			return nil, err
		}
	}
	if !commentsDone {
		m = yamlComments(m, node.FootComment, false)
	}
	return m, nil
}

// yamlPairs appends a mapping node's keys and values to m.
func yamlPairs(node *yaml.Node, m sopsMap) (sopsMap, error) {
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		m = yamlComments(m, key.HeadComment, false)
		m = yamlComments(m, key.LineComment, false)
		scalar := value.Kind == yaml.ScalarNode || value.Kind == yaml.AliasNode
		if scalar {
			m = yamlComments(m, value.HeadComment, false)
			m = yamlComments(m, value.LineComment, true)
		}
		var k any
		if err := key.Decode(&k); err != nil {
			return nil, err
		}
		v, err := yamlValue(value, scalar)
		if err != nil {
			return nil, err
		}
		m = append(m, sopsItem{key: k, value: v})
		if scalar {
			m = yamlComments(m, value.FootComment, false)
		}
		m = yamlComments(m, key.FootComment, false)
	}
	return m, nil
}

// yamlValue is the tree value of a node below a document.
func yamlValue(node *yaml.Node, commentsDone bool) (any, error) {
	switch node.Kind {
	case yaml.SequenceNode:
		var l []any
		if !commentsDone {
			l = yamlListComments(l, node.HeadComment, false)
			l = yamlListComments(l, node.LineComment, false)
		}
		for _, item := range node.Content {
			l = yamlListComments(l, item.HeadComment, false)
			l = yamlListComments(l, item.LineComment, true)
			v, err := yamlValue(item, true)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			l = yamlListComments(l, item.FootComment, false)
		}
		if !commentsDone {
			l = yamlListComments(l, node.FootComment, false)
		}
		return l, nil
	case yaml.MappingNode:
		return yamlMapping(node, sopsMap{}, commentsDone)
	case yaml.ScalarNode:
		var v any
		if err := node.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.AliasNode:
		return yamlValue(node.Alias, false)
	}
	return nil, nil
}

func (sopsYAML) emit(branches []sopsMap) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(4)
	for _, branch := range branches {
		mapping := &yaml.Node{Kind: yaml.MappingNode}
		if err := yamlAppendMap(branch, mapping); err != nil {
			return nil, err
		}
		if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping}}); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// yamlNode is the node of a tree value.
func yamlNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case sopsMap:
		n := &yaml.Node{Kind: yaml.MappingNode}
		return n, yamlAppendMap(v, n)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		return n, yamlAppendList(v, n)
	}
	n := &yaml.Node{}
	return n, n.Encode(v)
}

// Comments go back where SOPS puts them: the comments before an entry above
// it, those inline after its value, and those after the last entry below it.

// pendingComments gathers the comments met between two entries of a map or a
// list, and gives each back to its place.
type pendingComments struct {
	head, inline []string
	entries      int
}

// take keeps item if it is a comment, saying whether it was.
func (p *pendingComments) take(item any) bool {
	c, ok := item.(sopsComment)
	if !ok {
		return false
	}
	if c.inline {
		p.inline = append(p.inline, c.text)
	} else {
		p.head = append(p.head, c.text)
	}
	return true
}

// next returns the comments of the entry that comes now and forgets them; those
// above the first entry go to the container itself.
func (p *pendingComments) next(container *yaml.Node) (head, inline []string) {
	head, inline = p.head, p.inline
	p.head, p.inline = nil, nil
	if p.entries == 0 {
		addHeadComment(container, head)
		head = nil
	}
	p.entries++
	return head, inline
}

// end puts the comments after the last entry below it (last), or on the
// container when it has no entry.
func (p *pendingComments) end(container *yaml.Node, last func() *yaml.Node) {
	rest := slices.Concat(p.head, p.inline)
	switch {
	case len(rest) == 0:
	case p.entries == 0:
		addHeadComment(container, rest)
	default:
		addFootComment(last(), rest)
	}
}

func yamlAppendMap(m sopsMap, mapping *yaml.Node) error {
	var pending pendingComments
	for _, item := range m {
		if pending.take(item.key) {
			continue
		}
		head, inline := pending.next(mapping)
		key := &yaml.Node{}
		if err := key.Encode(item.key); err != nil {
			return err
		}
		addHeadComment(key, head)
		value, err := yamlNode(item.value)
		if err != nil {
			return err
		}
		addLineComment(value, inline)
		mapping.Content = append(mapping.Content, key, value)
	}
	pending.end(mapping, func() *yaml.Node { return mapping.Content[len(mapping.Content)-2] })
	return nil
}

func yamlAppendList(l []any, seq *yaml.Node) error {
	var pending pendingComments
	for _, item := range l {
		if pending.take(item) {
			continue
		}
		head, inline := pending.next(seq)
		n, err := yamlNode(item)
		if err != nil {
			return err
		}
		addHeadComment(n, head)
		addLineComment(n, inline)
		seq.Content = append(seq.Content, n)
	}
	pending.end(seq, func() *yaml.Node { return seq.Content[len(seq.Content)-1] })
	return nil
}

func yamlComment(lines []string) string {
	return "#" + strings.Join(lines, "\n#")
}

// addHeadComment puts lines before the node's own head comment.
func addHeadComment(n *yaml.Node, lines []string) {
	if len(lines) > 0 {
		n.HeadComment = joinComment(yamlComment(lines), n.HeadComment)
	}
}

func addLineComment(n *yaml.Node, lines []string) {
	if len(lines) > 0 {
		n.LineComment = joinComment(n.LineComment, yamlComment(lines))
	}
}

func addFootComment(n *yaml.Node, lines []string) {
	if len(lines) > 0 {
		n.FootComment = joinComment(n.FootComment, yamlComment(lines))
	}
}

func joinComment(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
