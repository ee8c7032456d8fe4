//go:build tools

// Package tools pins the upstream node agents that lockstep is measured
// against: the kubelet (k8s.io/kubernetes/cmd/kubelet) and kubemark's hollow
// node (k8s.io/kubernetes/cmd/kubemark), at the version the e2e control plane
// is built from. It is a module of its own so that neither the project's
// go.mod nor the e2e control plane's cache key changes with them.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubemark"
)
