//go:build regress_teeth_rank

package scenarios

import "testing"

// TestRegressionTeethRank: with eviction's ranking blind to priority
// (regress_teeth_rank), eviction-order — which ranks with the checker's
// own model, no longer the agent's eviction.Rank — catches a lower-ranked
// pod evicted first.
func TestRegressionTeethRank(t *testing.T) { testRegression(t, "eviction", "eviction-order", 60) }
