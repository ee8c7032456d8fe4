//go:build tools

// Package kubectl pins the upstream kubectl the e2e suite drives (exec,
// attach, port-forward, logs through the apiserver), from the same
// k8s.io/kubernetes as the control plane. It is a module of its own so that
// neither its dependencies nor its cache key touch hack/e2e/tools.
package kubectl

import _ "k8s.io/kubernetes/cmd/kubectl"
