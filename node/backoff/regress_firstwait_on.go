//go:build regress_firstwait

package backoff

import "time"

// regressFirstWait: see regress_firstwait.go. This build is deliberately
// broken.
const regressFirstWait = true

// firstHold: the first restart waits initial (lockstep's earlier curve).
func firstHold(initial time.Duration) time.Duration { return initial }
