package scenarios

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Swarm testing (as TigerBeetle's simulator and Groce et al.'s "swarm
// testing" do it): a fixed mix draws every operation in every plan, so
// the states reached when some operations are absent — a long run of
// creations with no crash, pressure with no deletes — are rare. A swarm
// variant of a scenario keeps or leaves out each operation of its mix
// and scales each kept one's weight, drawn per seed, so a sweep of many
// seeds visits many mixes.

// swarmMaxScale is the largest factor a kept operation's weight is
// multiplied by.
const swarmMaxScale = 4

// Swarm returns the variant of sc drawn from d: each operation of sc.Mix
// is left out or kept with its weight multiplied by 1..4. "wait" keeps
// its weight (time passing is never left out), and at least one
// operation that brings pods (a create or a manifest) stays, so no
// variant is an empty node. The registry's scenarios are not changed;
// the variant's Name is sc's, since a plan replays from its actions
// alone.
func Swarm(sc Scenario, d Drawer) Scenario {
	names := slices.Sorted(maps.Keys(sc.Mix))
	mix := make(map[string]int, len(names))
	for _, n := range names {
		if n == "wait" {
			mix[n] = sc.Mix[n]
			continue
		}
		if scale := d.Int("swarm:"+n, 0, swarmMaxScale); scale > 0 {
			mix[n] = sc.Mix[n] * scale
		}
	}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(mix)), bringsPods) {
		if n, ok := heaviestPodOp(sc.Mix, names); ok {
			mix[n] = sc.Mix[n]
		}
	}
	if len(mix) == 0 { // a mix of nothing but left-out operations
		return sc
	}
	v := sc
	v.Mix = mix
	return v
}

// bringsPods reports whether an operation adds pods to the node.
func bringsPods(op string) bool {
	return strings.HasPrefix(op, "create") || op == "manifest"
}

// heaviestPodOp is the pod-bringing operation of mix with the largest
// weight (the first by name on a tie).
func heaviestPodOp(mix map[string]int, names []string) (string, bool) {
	best, found := "", false
	for _, n := range names {
		if bringsPods(n) && (!found || mix[n] > mix[best]) {
			best, found = n, true
		}
	}
	return best, found
}

// SwarmSeed is the seed a swarm variant of a plan's seed is drawn from:
// apart from the plan's own draws, so the same seed gives the same
// variant and the same plan with or without other flags.
func SwarmSeed(seed uint64) uint64 { return seed ^ 0x5ca1_ab1e_5eed }

// MixString is a mix in a stable compact form, op=weight by name.
func MixString(mix map[string]int) string {
	parts := make([]string, 0, len(mix))
	for _, n := range slices.Sorted(maps.Keys(mix)) {
		parts = append(parts, n+"="+strconv.Itoa(mix[n]))
	}
	return strings.Join(parts, ",")
}
