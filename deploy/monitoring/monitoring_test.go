// Package monitoring_test checks Tether's shipped monitoring: the rules pass promtool's
// check and their unit tests, every alert is tested firing and quiet and has a
// runbook, and the PrometheusRule is generated from the rule file.
package monitoring_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"tether.dev/tether/test/promserver"
)

const (
	rulesFile = "rules/tether.rules.yaml"
	testsFile = "rules/tether.rules.test.yaml"
)

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// alertNames returns the alerts of the shipped rule file.
func alertNames(t *testing.T) []string {
	t.Helper()
	var rf ruleFile
	readYAML(t, rulesFile, &rf)
	var names []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}

func TestRulesPassPromtool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool (installed by make prometheus)")
	}
	promtool := promserver.Binary(t, "promtool")
	t.Run("check rules", func(t *testing.T) {
		run(t, ".", promtool, "check", "rules", rulesFile)
	})
	t.Run("test rules", func(t *testing.T) {
		run(t, "rules", promtool, "test", "rules", filepath.Base(testsFile))
	})
}

// TestEveryAlertIsTestedFiringAndQuiet reads the promtool tests: each alert needs an
// evaluation at which it fires and one at which it does not, or promtool's pass
// proves nothing about it.
func TestEveryAlertIsTestedFiringAndQuiet(t *testing.T) {
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, testsFile, &tests)
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, name := range alertNames(t) {
		if !firing[name] {
			t.Errorf("%s has no promtool test in which it fires", name)
		}
		if !quiet[name] {
			t.Errorf("%s has no promtool test in which it stays quiet", name)
		}
	}
}

// TestEveryAlertHasARunbook checks that each alert links to a section of
// docs/alerts.md that exists.
func TestEveryAlertHasARunbook(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	readYAML(t, rulesFile, &rf)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			want := "docs/alerts.md#" + strings.ToLower(r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], want) {
				t.Errorf("%s: runbook_url %q does not end in %s", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !slices.Contains(strings.Split(string(doc), "\n"), "## "+r.Alert) {
				t.Errorf("docs/alerts.md has no section \"## %s\"", r.Alert)
			}
		}
	}
}

func TestPrometheusRuleIsGeneratedFromTheRuleFile(t *testing.T) {
	run(t, ".", "./generate.sh", "--verify")
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
