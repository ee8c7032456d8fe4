//go:build regress_106734

package scenarios

import "testing"

// Upstream kubernetes#106734 / #98424: a pod created and deleted quickly
// (or deleted before a restarted agent first synced it) stays Terminating:
// it never gets a final status, so it is never deleted from the API.
// termination finds it (deleted-disappears) within 60 seeds (19 today,
// shrunk to create then delete 100 ms later).
func TestRegression106734(t *testing.T) { testRegression(t, "termination", "deleted-disappears", 60) }
