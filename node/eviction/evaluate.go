package eviction

import (
	"cmp"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// State is what the eviction decisions remember from one cycle to the
// next. The zero State is a fresh start (an agent that just started).
type State struct {
	// met are the thresholds acted upon last cycle: they stay met until
	// their minimum reclaim is reached.
	met []Threshold
	// firstObserved is when each met threshold was first seen met, by key.
	firstObserved map[string]time.Time
	// conditionSeen is when each pressure condition's signal was last
	// seen over its threshold.
	conditionSeen map[corev1.NodeConditionType]time.Time
}

// Decision is one cycle's outcome.
type Decision struct {
	// Conditions are the node's pressure conditions now, sorted.
	Conditions []corev1.NodeConditionType
	// Act are the thresholds met past their grace period, memory first:
	// the first with a resource to reclaim is the one to act upon.
	Act []Threshold
}

// Met reports whether t is met by obs: the signal's available amount is
// below the threshold (plus its minimum reclaim when withMinReclaim).
func Met(t Threshold, obs Observations, withMinReclaim bool) bool {
	o, ok := obs[t.Signal]
	if !ok {
		return false
	}
	q := t.Value.Amount(o.Capacity)
	if withMinReclaim && t.MinReclaim != nil {
		q += t.MinReclaim.Amount(o.Capacity)
	}
	return q > o.Available
}

func metOf(ts []Threshold, obs Observations, withMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		if Met(t, obs, withMinReclaim) {
			out = append(out, t)
		}
	}
	return out
}

// Evaluate decides a cycle at now from obs under cfg, and remembers what
// the next cycle needs. As the kubelet: a threshold is met when its signal
// is below it, and stays met until it is above it by its minimum reclaim;
// a pressure condition is on while any of its thresholds is met (grace
// period or not) and for PressureTransitionPeriod after; a threshold is
// acted upon once it has been met for its grace period (hard: at once).
func (s *State) Evaluate(cfg Config, obs Observations, now time.Time) Decision {
	period := cfg.PressureTransitionPeriod
	if period <= 0 {
		period = DefaultPressureTransitionPeriod
	}
	met := metOf(cfg.Thresholds, obs, false)
	for _, t := range metOf(s.met, obs, true) {
		if !slices.ContainsFunc(met, func(m Threshold) bool { return m.key() == t.key() }) {
			met = append(met, t)
		}
	}

	first := map[string]time.Time{}
	for _, t := range met {
		at, ok := s.firstObserved[t.key()]
		if !ok {
			at = now
		}
		first[t.key()] = at
	}
	seen := maps.Clone(s.conditionSeen)
	if seen == nil {
		seen = map[corev1.NodeConditionType]time.Time{}
	}
	for _, t := range met {
		seen[signalCondition(t.Signal)] = now
	}
	var d Decision
	for _, c := range slices.Sorted(maps.Keys(seen)) {
		if now.Sub(seen[c]) < period {
			d.Conditions = append(d.Conditions, c)
		} else {
			delete(seen, c)
		}
	}
	for _, t := range met {
		if now.Sub(first[t.key()]) >= t.GracePeriod {
			d.Act = append(d.Act, t)
		}
	}
	slices.SortStableFunc(d.Act, func(a, b Threshold) int { return cmp.Compare(actOrder(a), actOrder(b)) })
	s.met, s.firstObserved, s.conditionSeen = d.Act, first, seen
	return d
}

// actOrder ranks thresholds for reclaim: memory first, then the other
// signals with a resource to reclaim.
func actOrder(t Threshold) int {
	switch signalResource(t.Signal) {
	case corev1.ResourceMemory:
		return 0
	case "":
		return 2
	}
	return 1
}

// HasCondition reports whether conds holds c.
func HasCondition(conds []corev1.NodeConditionType, c corev1.NodeConditionType) bool {
	return slices.Contains(conds, c)
}
