// Package promserver runs a real Prometheus server on loopback for Tether's alert
// tests, and finds promtool.
//
// Tether's alerts are PromQL over the agent's metrics. Whether they fire is a property
// of Prometheus's rule evaluation (staleness, `for`, absent(), aggregation), which no
// fake reproduces; so the tests load the shipped rule file into the real server and
// read the alerts back through its HTTP API, as Alertmanager would see them.
//
// What the package owns:
//
//   - the binaries: prometheus and promtool, Debian's package (pinned by
//     hack/prometheus.sh, which links them into the control plane's directory,
//     $TETHER_TESTBIN, else .tools/testbin), or v3 built from source where
//     $TETHER_PROMETHEUS_DIR points (make test-prometheus3); a missing binary fails
//     the test with the command that installs it, it never skips;
//   - a Server: a prometheus process with a temporary data directory, a listener on
//     127.0.0.1, a configuration that scrapes the given targets (honor_labels, as the
//     ServiceMonitor does) and loads the given rule files, each with a short scrape
//     and evaluation interval; it is stopped when the test ends, and its log is
//     printed if the test failed;
//   - queries: Query (an instant query) and Alerts (the alerts that are pending or
//     firing now), through Prometheus's HTTP API.
//
// What it does not own: the rules. RulesWithFor makes a test copy of a rule file with
// shorter `for` durations, the one change a test needs to see alerts fire in seconds.
//
// Usage:
//
//	rules := promserver.RulesWithFor(t, "deploy/monitoring/rules/tether.rules.yaml", 5*time.Second, nil)
//	srv := promserver.Start(t, promserver.Options{Targets: []string{agentAddr}, RuleFiles: []string{rules}})
//	alerts, err := srv.Alerts(ctx)
package promserver
