package scenarios

import (
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// apiFaultPoints are the agent's fault points that stand for a fault of
// the apiserver the agent cannot tell from one (a write applied whose
// reply was lost is a timeout), with how long the checker excuses the
// API for each firing, as it does for the operations' injected write
// failures (opAPIFailWrites: 10 s a failure). The status manager retries
// a lost status write after its back-off, so what the pod shows next
// reaches the API late, as after any failed write; a lost registration
// reply is retried after the registration's back-off, which delays the
// lease. Lost replies the agent retries at once (the lease's, the node
// status's) delay nothing the checker bounds and are not listed.
func apiFaultPoints() map[deps.Point]time.Duration {
	return map[deps.Point]time.Duration{
		deps.FaultStatusWriteReplyLost: 10 * time.Second,
		deps.FaultDeleteReplyLost:      10 * time.Second,
		deps.FaultRegisterReplyLost:    10 * time.Second,
	}
}

// excuseFaultPoint tells c of a fault point that fired: one standing for
// an apiserver fault excuses the API (see apiFaultPoints); a late eviction
// cycle leaves the eviction manager's samples a period further apart
// (pressure-conditions); a late image collection round detects new images
// a period later (reclaim-first, image-gc-lru: the minimum age counts from
// detection); any excuses volume-wait-status.
func excuseFaultPoint(c *Checker, p deps.Point) {
	if d, ok := apiFaultPoints()[p]; ok {
		c.APIImpaired(d)
	}
	if p == deps.FaultEvictionTickLate {
		c.pressure.tickLate = c.h.K.Elapsed()
	}
	if p == deps.FaultManifestDirUnreadable {
		c.stc.dirUnreadable = c.h.K.Elapsed()
	}
	if p == deps.FaultImageGCLate {
		c.imagegc.late = append(c.imagegc.late, c.h.K.Elapsed())
	}
	// Any rare path may fail a pod's sync (a checkpoint write, a CRI
	// call): its worker retries after a back-off, and the status it
	// writes comes late (volume-wait-status).
	c.volStatus().faultAt = c.h.K.Elapsed()
}
