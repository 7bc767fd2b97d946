package chartrepo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"strings"

	"github.com/Masterminds/semver/v3"
	"gopkg.in/yaml.v3"

	"tether.dev/tether/source/git"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
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
	// Layer is an OCI registry's chart layer, once ociLayer resolved the tag.
	Layer *ocispec.Descriptor `json:"-" yaml:"-"`
	// Manifest is the descriptor of the manifest Layer was read from: what a
	// cosign signature signs.
	Manifest *ocispec.Descriptor `json:"-" yaml:"-"`
}

// errIndexLayout is the failure of an index written in YAML that is neither
// JSON nor laid out as chart repositories write it (a block mapping "entries:"
// at the left margin, one chart name per line below it), when it is also too
// large to be parsed whole.
var errIndexLayout = errors.New("index.yaml is not laid out as chart repositories write it (a block mapping under \"entries:\"), and is too large to be read whole")

// maxChartVersions bounds the versions of the asked-for chart an index (or an
// OCI registry's tag list) may hold: a repository with more is refused
// (RenderLimitExceeded) rather than kept, so that a hostile index of millions
// of tiny entries ("{},") costs no more memory than this many. The largest
// public repositories hold a few thousand versions of their largest chart.
const maxChartVersions = 20_000

// errTooManyVersions is an index or tag list over maxChartVersions.
func errTooManyVersions(what string) error {
	return result.OverBudgetf("%s holds more than %d versions of the chart, the limit", what, maxChartVersions)
}

// parseIndex reads an index (YAML or JSON) within maxNodes YAML nodes per
// part parsed at once, and keeps only the entries of chart name (every
// chart's when name is empty), at most maxChartVersions of them. The whole
// of a large index is never held as a YAML tree: a parser spends a few
// hundred bytes on each node, and a 20 MB index is over a million of them.
// JSON is decoded as a stream, other charts' entries skipped token by token;
// YAML is cut into one part per chart (the layout every chart repository
// writes) and only the asked-for chart's part is parsed; a YAML index of any
// other layout is parsed whole only within maxNodes.
func parseIndex(data []byte, maxNodes int, name string) (chartIndex, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New("index.yaml is empty")
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return parseJSONIndex(trimmed, name)
	}
	parts, ok := indexParts(data)
	if !ok {
		if render.YAMLNodeBound(data) > maxNodes {
			return nil, fmt.Errorf("index.yaml: %w", errIndexLayout)
		}
		idx, err := parseYAMLPart(data, maxNodes)
		if err != nil {
			return nil, err
		}
		return only(idx, name)
	}
	idx := chartIndex{}
	for _, part := range parts {
		if name != "" && !partMayBe(part, name) {
			continue
		}
		charts, err := parseChartPart(part, maxNodes)
		if err != nil {
			return nil, err
		}
		for n, versions := range charts {
			if name != "" && n != name {
				continue
			}
			idx[n] = append(idx[n], versions...)
			if len(idx[n]) > maxChartVersions {
				return nil, errTooManyVersions("index.yaml")
			}
		}
	}
	return idx, nil
}

// partMayBe reports whether a part of an index (as indexParts cuts it) may be
// chart name's: its first line is "name:", or is spelled otherwise (quoted,
// an anchor) and is parsed to find out.
func partMayBe(part []byte, name string) bool {
	line := bytes.TrimSpace(part[:lineEnd(part, 0)])
	key, ok := bytes.CutSuffix(line, []byte(":"))
	if !ok || bytes.ContainsAny(key, "\"'&*!{[:#") {
		return true
	}
	return string(key) == name
}

// only keeps name's entries of idx (all when name is empty), within
// maxChartVersions.
func only(idx chartIndex, name string) (chartIndex, error) {
	if name != "" {
		idx = chartIndex{name: idx[name]}
		if idx[name] == nil {
			delete(idx, name)
		}
	}
	for _, versions := range idx {
		if len(versions) > maxChartVersions {
			return nil, errTooManyVersions("index.yaml")
		}
	}
	return idx, nil
}

// parseJSONIndex decodes an index written as JSON as a stream of tokens,
// keeping only chart name's versions, URLs and digests (every chart's when
// name is empty), at most maxChartVersions of them; what else it holds is read
// token by token and dropped.
func parseJSONIndex(data []byte, name string) (chartIndex, error) {
	fail := func(err error) (chartIndex, error) {
		var over *result.OverBudget
		if errors.As(err, &over) {
			return nil, err
		}
		return nil, fmt.Errorf("index.yaml (JSON): %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	idx := chartIndex{}
	if err := indexObject(dec, func(key string) error {
		if key != "entries" {
			return skipIndexValue(dec)
		}
		return indexObject(dec, func(chart string) error {
			if name != "" && chart != name {
				return skipIndexValue(dec)
			}
			return indexArray(dec, func() error {
				var e chartEntry
				if err := dec.Decode(&e); err != nil {
					return err
				}
				idx[chart] = append(idx[chart], e)
				if len(idx[chart]) > maxChartVersions {
					return errTooManyVersions("index.yaml")
				}
				return nil
			})
		})
	}); err != nil {
		return fail(err)
	}
	return idx, nil
}

// indexObject reads an object (or null) from dec, calling each with every key
// with dec before the key's value, which each must read.
func indexObject(dec *json.Decoder, each func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("an object was expected, not %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if err := each(tok.(string)); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// indexArray reads an array (or null) from dec, calling each with dec before
// every element, which each must read.
func indexArray(dec *json.Decoder, each func() error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("an array was expected, not %v", tok)
	}
	for dec.More() {
		if err := each(); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// skipIndexValue reads one value from dec and drops it, token by token: nothing of
// it is held, however large.
func skipIndexValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// parseYAMLPart parses a part of an index (or a whole one) as a YAML mapping
// with entries, within maxNodes nodes counted from its text first.
func parseYAMLPart(data []byte, maxNodes int) (chartIndex, error) {
	if n := render.YAMLNodeBound(data); n > maxNodes {
		return nil, result.OverBudgetf("index.yaml: holds more than %d YAML nodes (a bound from the text: %d)", maxNodes, n)
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
	if n := render.YAMLNodeBound(data); n > maxNodes {
		return nil, result.OverBudgetf("index.yaml: one chart's entries hold more than %d YAML nodes (a bound from the text: %d)", maxNodes, n)
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
	return git.ParseRange(version)
}
