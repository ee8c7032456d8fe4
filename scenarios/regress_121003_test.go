//go:build regress_121003

package scenarios

import "testing"

// Upstream kubernetes#121003 / #123087: a pod worker acts on a runtime view
// older than its own last action. Upstream that started a second instance
// of a container; here the runtime refuses a second container of the same
// name and attempt, so one-instance cannot break, and what the old view
// makes the worker do is repeat its last action: it tears down the pod's
// sandbox it has just replaced, SIGKILLing containers that honour SIGTERM.
// runtime-faults finds it (sigterm-first) within 40 seeds (2 today, shrunk
// to three actions around a sandbox without an IP). relist-race finds it
// too (a live previous instance removed: previous-kept, seed 112), and
// such a plan can show a restartPolicy=Never container run twice
// (never-restart, upstream #23636's symptom), though not first in 300 seeds.
func TestRegression121003(t *testing.T) { testRegression(t, "runtime-faults", "sigterm-first", 40) }
