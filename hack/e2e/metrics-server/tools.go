//go:build tools

// Package metricsserver pins the upstream metrics-server
// (sigs.k8s.io/metrics-server v0.8.0) the e2e suite runs against the
// control plane so that `kubectl top` reads lockstep's /metrics/resource.
// It is a module of its own: its k8s.io dependencies are older than the
// control plane's and must not touch hack/e2e/tools or its cache key.
package metricsserver

import _ "sigs.k8s.io/metrics-server/cmd/metrics-server"
