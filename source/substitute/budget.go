package substitute

import (
	"fmt"
	"math"

	"github.com/fluxcd/pkg/envsubst/parse"
)

// budget is what is left of Options.MaxBytes.
type budget struct {
	left int64
}

// charge takes n bytes from b, or fails when b has not that many.
func (b *budget) charge(n int64) error {
	if n > b.left {
		return fmt.Errorf("%w (%d bytes more than allowed)", ErrBudget, n-b.left)
	}
	b.left -= n
	return nil
}

// outputBound parses text as envsubst does and returns an upper bound of the
// bytes its evaluation with vars can produce, whatever the functions it uses.
func outputBound(text string, vars map[string]string) (int64, error) {
	tree, err := parse.Parse(text)
	if err != nil {
		return 0, err
	}
	return nodeBound(tree.Root, vars), nil
}

// nodeBound bounds the output of one node. A function's output is at most its
// value with every byte (and each gap between bytes) replaced by its
// arguments, or its arguments themselves (a default):
// (len(value)+1) * (1 + args) + args covers every function envsubst has
// (replace all with an empty pattern is the worst), the value tripled for a
// function that reads it as runes. Sums saturate.
func nodeBound(n parse.Node, vars map[string]string) int64 {
	switch n := n.(type) {
	case *parse.TextNode:
		return int64(len(n.Value))
	case *parse.ListNode:
		var sum int64
		for _, c := range n.Nodes {
			sum = add(sum, nodeBound(c, vars))
		}
		return sum
	case *parse.FuncNode:
		var args int64
		for _, a := range n.Args {
			args = add(args, nodeBound(a, vars))
		}
		value := int64(len(vars[n.Param]))
		if !asIs[n.Name] {
			// A function may read the value as runes: a byte that is no
			// UTF-8 then becomes the 3 bytes of U+FFFD (and a change of
			// case may take more bytes too).
			value = mul(value, 3)
		}
		return add(mul(value+1, add(args, 1)), args)
	}
	return 0
}

// asIs holds envsubst's forms that write the value as it is, or their
// arguments: ${v} and the defaults.
var asIs = map[string]bool{"": true, "=": true, ":=": true, "-": true, ":-": true, "+": true, ":+": true, "?": true, ":?": true}

func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
