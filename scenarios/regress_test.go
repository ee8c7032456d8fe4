//go:build regress_93210 || regress_104648 || regress_106734 || regress_94829 || regress_121003 || regress_141473 || regress_prompt || regress_teeth_rank || regress_teeth_qos || regress_teeth_grace || regress_teeth_sandbox || regress_teeth_features || regress_teeth_readd || regress_teeth_latest || regress_teeth_propagation || regress_teeth_apparmor || regress_teeth_fqdn || regress_teeth_probekill || regress_teeth_volstatus || regress_teeth_memlimit || regress_teeth_readiness || regress_teeth_prestop || regress_teeth_sidecars || regress_teeth_superseded || regress_teeth_mirrorstatus || regress_teeth_terminal || regress_teeth_devstream || regress_teeth_devadmit

package scenarios

import (
	"strings"
	"testing"
)

// testRegression asserts the suite catches a deliberately broken build
// within budget seeds, shrinks the failure to at most 10 actions, and that
// the shrunk plan replays with the identical trace hash; the replay command
// it prints builds the same broken variant. also lists other invariants
// the same bug may break first.
func testRegression(t *testing.T, scenario, invariant string, budget int, also ...string) {
	sc, err := Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	h, err := HuntBug(sc, invariant, budget, 300, also...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("found after %d seeds, shrunk from %d to %d actions:\n%s", h.Seeds, len(h.Found.Plan.Actions), len(h.Shrunk.Plan.Actions), h.Shrunk.Report())
	if n := len(h.Shrunk.Plan.Actions); n > MaxShrunkActions {
		t.Errorf("shrunk to %d actions, want at most %d", n, MaxShrunkActions)
	}
	if cmd := h.Shrunk.Plan.ReplayCommand(); !strings.HasPrefix(cmd, "go run -tags regress_") {
		t.Errorf("replay command %q does not build the broken variant", cmd)
	}
	again := Execute(h.Shrunk.Plan, Options{})
	if again.Hash != h.Shrunk.Hash || again.FailureName() != h.Shrunk.FailureName() {
		t.Errorf("replay gave hash %s (%s), want %s (%s)", again.Hash, again.FailureName(), h.Shrunk.Hash, h.Shrunk.FailureName())
	}
}
