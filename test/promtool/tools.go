//go:build tools

// Package promtool pins the promtool that checks and unit-tests the alert rules in
// deploy/monitoring (built by ../controlplane/build.sh promtool, since no release binaries
// can be downloaded here).
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
