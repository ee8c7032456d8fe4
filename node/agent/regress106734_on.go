//go:build regress_106734

package agent

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/status"
)

// regress106734: see regress106734.go. This build is deliberately broken.
const regress106734 = true

// skipsFinalStatus: a pod with no cached status "has nothing to report".
func skipsFinalStatus(m *status.Manager, uid types.UID) bool {
	_, ok := m.PodStatus(uid)
	return !ok
}
