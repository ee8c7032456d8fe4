//go:build tools

// Package crictl records the crictl version that fakecri's tests build.
package crictl

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
