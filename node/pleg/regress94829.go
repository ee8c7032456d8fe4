//go:build !regress_94829

package pleg

import "time"

// regress94829 is false in every normal build; see refreshTimeout.
const regress94829 = false

// refreshTimeout bounds a relist's pod refreshes: PodStatusTimeout (d).
// Built with the tag regress_94829 (tests only, never the daemon) it
// re-creates upstream bug kubernetes#94829: a relist fetches pod statuses
// without a timeout of its own, so one hung status call stalls the whole
// relist until the runtime answers, and after UnhealthyAfter (3 min) the
// node turns NotReady though the runtime answers every list.
func refreshTimeout(d time.Duration) time.Duration { return d }
