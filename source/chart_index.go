package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"gopkg.in/yaml.v3"
)

// chartIndex is what Tether keeps of a chart repository's index.yaml: for each
// chart name, its versions with where to download each and its digest. The
// rest of the index (descriptions, maintainers, icons: most of its bytes) is
// dropped as it is read.
type chartIndex map[string][]chartEntry

// chartEntry is one version of one chart in an index.
type chartEntry struct {
	Version string   `json:"version" yaml:"version"`
	URLs    []string `json:"urls" yaml:"urls"`
	// Digest is the hex SHA-256 of the package, when the index says it.
	Digest string `json:"digest" yaml:"digest"`
}

// errIndexLayout is the failure of an index written in YAML that is neither
// JSON nor laid out as chart repositories write it (a block mapping "entries:"
// at the left margin, one chart name per line below it), when it is also too
// large to be parsed whole.
var errIndexLayout = errors.New("index.yaml is not laid out as chart repositories write it (a block mapping under \"entries:\"), and is too large to be read whole")

// parseIndex reads an index (YAML or JSON) within maxNodes YAML nodes per
// part parsed at once. The whole of a large index is never held as a YAML
// tree: a parser spends a few hundred bytes on each node, and a 20 MB index is
// over a million of them. JSON is decoded as a stream; YAML is cut into one
// part per chart (the layout every chart repository writes), each parsed
// alone; a YAML index of any other layout is parsed whole only within
// maxNodes.
func parseIndex(data []byte, maxNodes int) (chartIndex, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New("index.yaml is empty")
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return parseJSONIndex(trimmed)
	}
	parts, ok := indexParts(data)
	if !ok {
		if yamlNodeBound(data) > maxNodes {
			return nil, fmt.Errorf("index.yaml: %w", errIndexLayout)
		}
		return parseYAMLPart(data, maxNodes)
	}
	idx := chartIndex{}
	for _, part := range parts {
		charts, err := parseChartPart(part, maxNodes)
		if err != nil {
			return nil, err
		}
		for name, versions := range charts {
			idx[name] = append(idx[name], versions...)
		}
	}
	return idx, nil
}

// parseJSONIndex decodes an index written as JSON, keeping only its entries'
// versions, URLs and digests.
func parseJSONIndex(data []byte) (chartIndex, error) {
	var doc struct {
		Entries chartIndex `json:"entries"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("index.yaml (JSON): %w", err)
	}
	return orEmpty(doc.Entries), nil
}

// parseYAMLPart parses a part of an index (or a whole one) as a YAML mapping
// with entries, within maxNodes nodes counted from its text first.
func parseYAMLPart(data []byte, maxNodes int) (chartIndex, error) {
	if n := yamlNodeBound(data); n > maxNodes {
		return nil, overBudgetf("index.yaml: holds more than %d YAML nodes (a bound from the text: %d)", maxNodes, n)
	}
	var doc struct {
		Entries chartIndex `yaml:"entries"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("index.yaml: %w", err)
	}
	return orEmpty(doc.Entries), nil
}

// parseChartPart parses one chart's part of an index's entries (an indented
// mapping of one name to its versions, as indexParts cuts it), within
// maxNodes nodes counted from its text first.
func parseChartPart(data []byte, maxNodes int) (chartIndex, error) {
	if n := yamlNodeBound(data); n > maxNodes {
		return nil, overBudgetf("index.yaml: one chart's entries hold more than %d YAML nodes (a bound from the text: %d)", maxNodes, n)
	}
	idx := chartIndex{}
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("index.yaml: %w", err)
	}
	return idx, nil
}

func orEmpty(idx chartIndex) chartIndex {
	if idx == nil {
		return chartIndex{}
	}
	return idx
}

// indexParts cuts a YAML index laid out as chart repositories write it into
// one part per chart ("  name:\n  - ...", slices of data) and reports whether
// the layout was that: a line "entries:" at the left margin, and below it,
// up to the next line at the left margin, lines indented at least as much as
// the first, those at exactly that indent (and not sequence items) each
// opening one chart.
func indexParts(data []byte) ([][]byte, bool) {
	start := -1
	for i := 0; i < len(data); {
		end := lineEnd(data, i)
		if strings.TrimRight(string(data[i:end]), " \r") == "entries:" {
			start = nextLine(data, end)
			break
		}
		i = nextLine(data, end)
	}
	if start < 0 {
		return nil, false
	}
	var parts [][]byte
	indent := -1
	partStart := -1
	flush := func(end int) {
		if partStart >= 0 {
			parts = append(parts, data[partStart:end:end])
		}
	}
	i := start
	for i < len(data) {
		end := lineEnd(data, i)
		line := data[i:end]
		content := bytes.TrimLeft(line, " ")
		depth := len(line) - len(content)
		blank := len(bytes.TrimSpace(content)) == 0 || content[0] == '#'
		switch {
		case blank:
		case depth == 0:
			flush(i)
			return parts, indent > 0
		case bytes.HasPrefix(content, []byte("\t")):
			return nil, false
		case indent < 0:
			if bytes.HasPrefix(content, []byte("- ")) || bytes.HasPrefix(content, []byte("{")) {
				return nil, false
			}
			indent, partStart = depth, i
		case depth < indent:
			return nil, false
		case depth == indent && !bytes.HasPrefix(content, []byte("- ")) && !bytes.Equal(bytes.TrimSpace(content), []byte("-")):
			flush(i)
			partStart = i
		}
		i = nextLine(data, end)
	}
	flush(len(data))
	return parts, indent > 0
}

// lineEnd is the index of the newline ending the line at i, or len(data).
func lineEnd(data []byte, i int) int {
	if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(data)
}

// nextLine is the start of the line after the one ending at end.
func nextLine(data []byte, end int) int {
	if end < len(data) {
		return end + 1
	}
	return end
}

// newest returns the entry of name with the highest version that satisfies
// constraint. Versions that are not semver are ignored; pre-releases match
// only a range that names one (Masterminds' rule, which Helm follows).
func (idx chartIndex) newest(name string, constraint *semver.Constraints) (chartEntry, bool) {
	var best *semver.Version
	var found chartEntry
	for _, e := range idx[name] {
		v, err := semver.NewVersion(e.Version)
		if err != nil || !constraint.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, found = v, e
		}
	}
	return found, best != nil
}

// chartConstraint parses spec.source.chart.version: an exact version or a
// range; empty means any released version.
func chartConstraint(version string) (*semver.Constraints, error) {
	if strings.TrimSpace(version) == "" {
		version = "*"
	}
	return parseRange(version)
}
