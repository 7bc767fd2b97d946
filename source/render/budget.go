package render

import (
	"errors"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// overBudget is an answer over one of its bounds (result.OverBudget).
type overBudget = result.OverBudget

func overBudgetf(format string, args ...any) error { return result.OverBudgetf(format, args...) }

// FileError names file in err, classing it as RenderLimitExceeded when err is a
// render over one of its bounds.
func FileError(file string, err error) *result.RenderError {
	re := &result.RenderError{File: file, Err: err}
	var over *overBudget
	if errors.As(err, &over) || errors.Is(err, errYAMLTooLarge) {
		re.Reason = v1alpha1.ReasonRenderLimitExceeded
	}
	return re
}

// nodeBudget counts the YAML nodes of one render: per file, a bound from the
// file's text (yamlNodeBound) before any parser sees it, and what its aliases
// expand to as it is converted; per render, the sum over the files read.
type nodeBudget struct {
	perFile, perRender int
	// left is what is left of perRender; estimated is the bound of the file
	// being converted, charged already.
	left, estimated int
}

func newNodeBudget(opts DirOptions) *nodeBudget {
	b := &nodeBudget{perFile: opts.MaxYAMLNodesPerFile, perRender: opts.MaxYAMLNodesPerRender}
	if b.perFile <= 0 {
		b.perFile = DefaultMaxYAMLNodesPerFile
	}
	if b.perRender <= 0 {
		b.perRender = DefaultMaxYAMLNodesPerRender
	}
	b.left = b.perRender
	return b
}

// file charges the bound of data's nodes and returns how many values its
// documents may expand to.
func (b *nodeBudget) file(data []byte) (int, error) {
	n := YAMLNodeBound(data)
	if n > b.perFile {
		return 0, overBudgetf("holds more than %d YAML nodes (the agent's --max-yaml-nodes-per-file; a bound from its text before parsing: %d)", b.perFile, n)
	}
	if n > b.left {
		return 0, overBudgetf("the files this render reads hold more than %d YAML nodes (the agent's --max-yaml-nodes-per-render)", b.perRender)
	}
	b.left -= n
	b.estimated = n
	return min(b.perFile, b.left+n), nil
}

// expanded charges what a file's values came to beyond the bound charged for it.
func (b *nodeBudget) expanded(values int) {
	if values > b.estimated {
		b.left -= values - b.estimated
	}
	b.estimated = 0
}

// nodeCountingFS charges every file kustomize reads to a node budget before
// kustomize parses it, and refuses the read once over; err keeps the first
// refusal, which kustomize's own error may no longer show.
type nodeCountingFS struct {
	filesys.FileSystem
	nodes *nodeBudget
	rel   func(string) string
	err   *result.RenderError
}

func (f *nodeCountingFS) ReadFile(name string) ([]byte, error) {
	data, err := f.FileSystem.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if _, err := f.nodes.file(data); err != nil {
		if f.err == nil {
			f.err = FileError(f.rel(name), err)
		}
		return nil, f.err
	}
	return data, nil
}
