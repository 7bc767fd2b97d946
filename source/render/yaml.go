package render

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Bounds on one YAML document. They make alias bombs ("billion laughs"), aliases of
// large scalars and absurdly deep nesting fail fast, in bounded time and memory,
// instead of exhausting the agent. The number of nodes is bounded by nodeBudget.
const (
	maxYAMLDepth = 128
	// defaultYAMLBytes bounds what one document may expand to when the caller
	// gives no byte budget of its own (DecodeManifests).
	defaultYAMLBytes = 64 << 20
	// nodeBytes is what each value costs besides its text: roughly the bytes JSON
	// spends on quotes, separators and brackets, so that a document's cost is close
	// to the size of the JSON it becomes.
	nodeBytes = 4
)

var errYAMLTooLarge = errors.New("document is too large or too deeply nested after alias expansion")

// documentMap converts a decoded YAML document into the plain values JSON uses.
// Scalars keep YAML 1.2 core types, except timestamps, which stay strings as they are
// written (Kubernetes has no timestamp type in YAML: "2024-01-01" is a string).
//
// budget bounds what the document expands to: every value counts its text each
// time it is reached, through an alias or not, so a 1 MiB string under 400 aliases
// costs 400 MiB and is refused as soon as the count passes what the budget has
// left, before any copy of it (JSON, an object) is built. The budget itself is
// charged later, with what the document really renders to. A nil or unlimited
// budget allows defaultYAMLBytes.
func documentMap(doc *yaml.Node, budget *byteBudget) (map[string]any, error) {
	return newConverter(budget, DefaultMaxYAMLNodesPerFile).document(doc)
}

// newConverter returns a converter that may spend nodes values, and bytes as
// documentMap says, over all the documents it converts.
func newConverter(budget *byteBudget, nodes int) *converter {
	c := &converter{nodes: nodes, maxNodes: nodes, bytes: defaultYAMLBytes, limit: defaultYAMLBytes}
	if budget != nil && budget.max > 0 {
		c.bytes, c.limit = budget.remaining(), budget.max
	}
	return c
}

// document converts one decoded document (see documentMap).
func (c *converter) document(doc *yaml.Node) (map[string]any, error) {
	if doc.Kind == 0 || (doc.Kind == yaml.DocumentNode && len(doc.Content) == 0) {
		return nil, nil
	}
	root := doc
	if doc.Kind == yaml.DocumentNode {
		root = doc.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("not a Kubernetes object: the document is not a mapping")
	}
	v, err := c.convert(root, 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// spent is how many values the converter has spent.
func (c *converter) spent() int { return c.maxNodes - c.nodes }

// converter walks a document, charging every value it reaches to its budgets.
type converter struct {
	// nodes is what is left to spend of maxNodes.
	nodes, maxNodes int
	// bytes is what is left to spend of limit.
	bytes, limit int64
}

// charge spends one value of size text bytes.
func (c *converter) charge(text int, depth int) error {
	c.nodes--
	c.bytes -= int64(text) + nodeBytes
	switch {
	case c.nodes < 0:
		return fmt.Errorf("%w: more than %d values (YAML nodes)", errYAMLTooLarge, c.maxNodes)
	case c.bytes < 0:
		return fmt.Errorf("%w: renders more than the limit of %d bytes", errYAMLTooLarge, c.limit)
	case depth > maxYAMLDepth:
		return fmt.Errorf("%w: nested deeper than %d", errYAMLTooLarge, maxYAMLDepth)
	}
	return nil
}

func (c *converter) convert(n *yaml.Node, depth int) (any, error) {
	text := 0
	if n.Kind == yaml.ScalarNode {
		text = len(n.Value)
	}
	if err := c.charge(text, depth); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.convert(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.convert(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// measure charges what n expands to, as convert does, building nothing.
func (c *converter) measure(n *yaml.Node, depth int) error {
	text := 0
	if n.Kind == yaml.ScalarNode {
		text = len(n.Value)
	}
	if n.Kind != yaml.DocumentNode && n.Kind != 0 {
		if err := c.charge(text, depth); err != nil {
			return err
		}
	}
	if n.Kind == yaml.AliasNode {
		return c.measure(n.Alias, depth+1)
	}
	for _, child := range n.Content {
		if err := c.measure(child, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (c *converter) mapping(n *yaml.Node, depth int) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			if err := c.merge(out, v, depth+1); err != nil {
				return nil, err
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: mapping keys must be strings", k.Line)
		}
		if err := c.charge(len(k.Value), depth+1); err != nil {
			return nil, err
		}
		val, err := c.convert(v, depth+1)
		if err != nil {
			return nil, err
		}
		out[k.Value] = val
	}
	return out, nil
}

// merge adds to out the keys it lacks of the mapping v, or of each mapping of
// the list v, earlier mappings first (YAML 1.1's merge key, as kubectl and
// kustomize read it).
func (c *converter) merge(out map[string]any, v *yaml.Node, depth int) error {
	merged, err := c.convert(v, depth)
	if err != nil {
		return err
	}
	sources := []any{merged}
	if list, ok := merged.([]any); ok {
		sources = list
	}
	for _, src := range sources {
		m, ok := src.(map[string]any)
		if !ok {
			return fmt.Errorf("line %d: merge key needs a mapping or a list of mappings", v.Line)
		}
		for mk, mv := range m {
			if _, set := out[mk]; !set {
				out[mk] = mv
			}
		}
	}
	return nil
}

func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!null":
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return v, nil
}
