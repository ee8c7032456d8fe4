//go:build regress_104648

package scenarios

import "testing"

// Upstream kubernetes#104648: a static pod whose manifest is removed and
// re-added unchanged is never started again. static-pods finds it within
// 200 seeds (81 today).
func TestRegression104648(t *testing.T) { testRegression(t, "static-pods", "converges", 200) }
