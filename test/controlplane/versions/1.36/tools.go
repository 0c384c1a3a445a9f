//go:build tools

// Package controlplane pins Kubernetes 1.36's programs build.sh compiles (etcd comes
// from the newest set in ../../go.mod, which this API server also talks to), so go.sum covers them.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
