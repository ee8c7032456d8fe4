package nodestatus

import cri "k8s.io/cri-api/pkg/apis"

// The CRI services the agent is given satisfy the narrow ports this
// package declares.
var (
	_ Runtime     = cri.RuntimeService(nil)
	_ ImageLister = cri.ImageManagerService(nil)
)
