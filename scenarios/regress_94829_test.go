//go:build regress_94829

package scenarios

import "testing"

// Upstream kubernetes#94829: one hung pod status call stalls the whole
// relist, and after 3 minutes the node turns NotReady though the runtime
// answers its lists. runtime-faults finds it (a status-hang of over 3
// minutes: node-ready) within 40 seeds (4 today, shrunk to a create and a
// status-hang).
func TestRegression94829(t *testing.T) { testRegression(t, "runtime-faults", "node-ready", 40) }
