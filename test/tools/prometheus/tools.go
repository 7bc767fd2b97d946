//go:build tools

// Package tools pins the Prometheus commands that hack/testbin.sh builds.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
