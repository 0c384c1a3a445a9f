//go:build tools

// Package helm pins the Helm that the chart's tests lint, render and install with (built by
// ../controlplane/build.sh helm, since no release binaries can be downloaded here).
package helm

import _ "helm.sh/helm/v4/cmd/helm"
