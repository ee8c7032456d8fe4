//go:build !regress_firstwait

package backoff

import "time"

// regressFirstWait is false in every normal build; see firstHold.
const regressFirstWait = false

// firstHold is how long a container's first restart after an exit is
// held: 0, as the kubelet does (no back-off entry before the first
// restart). Built with the tag regress_firstwait (tests only, never the
// daemon) it re-creates lockstep's own earlier curve, one step behind the
// kubelet's (issue 27, B1): the first exit waits initial, and every later
// one a step more (20 s, 40 s, …), which backoff-respected must catch.
func firstHold(time.Duration) time.Duration { return 0 }
