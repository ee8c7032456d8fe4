// Package eviction keeps the node alive under memory, disk and PID
// pressure, as the kubelet's eviction manager does. Every cycle (10 s on
// the injected clock) it observes the eviction signals from a stats
// sample, decides which thresholds are met (hard at once, soft after their
// grace period, both until their minimum reclaim is reached), derives the
// node's pressure conditions (kept for the pressure transition period
// after the signal clears), evicts every pod over a local storage limit
// (an emptyDir's sizeLimit, the pod's or a container's ephemeral-storage
// limit; CheckLocalStorage) and then acts on no threshold that cycle,
// else tries node-level reclaim first (dead
// containers and unused images, for disk signals), then evicts at most one
// pod, ranked as upstream ranks them. Critical pods are never evicted.
//
// The decisions are pure functions of the configuration, the observations
// and the pods (Evaluate, Rank, Message); the Manager runs them on the
// clock and does the I/O through the ports it is given.
package eviction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, named as the kubelet names it.
type Signal string

// The eviction signals.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// Signals lists every signal, in the order observations are logged.
var Signals = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable,
}

// Resources a signal reclaims (inodes and pids are the kubelet's internal
// names).
const (
	ResourceInodes corev1.ResourceName = "inodes"
	ResourcePIDs   corev1.ResourceName = "pids"
)

// signalResource is the resource a signal's evictions reclaim.
func signalResource(s Signal) corev1.ResourceName {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return corev1.ResourceMemory
	case SignalNodeFsAvailable, SignalImageFsAvailable:
		return corev1.ResourceEphemeralStorage
	case SignalNodeFsInodesFree, SignalImageFsInodesFree:
		return ResourceInodes
	case SignalPIDAvailable:
		return ResourcePIDs
	}
	return ""
}

// signalCondition is the node condition a signal's threshold sets.
func signalCondition(s Signal) corev1.NodeConditionType {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return corev1.NodeMemoryPressure
	case SignalPIDAvailable:
		return corev1.NodePIDPressure
	}
	return corev1.NodeDiskPressure
}

// Value is a threshold's amount: an absolute quantity, or a percentage of
// the signal's capacity.
type Value struct {
	// Quantity, when set, is the amount.
	Quantity *resource.Quantity
	// Percentage (0 < p ≤ 1) of the capacity, when Quantity is nil.
	Percentage float64
}

// Amount is the value against a capacity. A percentage counts at the
// kubelet's precision, a float32 (its ThresholdValue.Percentage), so that
// the amounts, and the allocatable they are taken from, are the kubelet's
// to the byte (10% of 270553174016 bytes is 403 bytes more than a tenth).
func (v Value) Amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * float64(float32(v.Percentage)))
}

// String is the value as configured ("100Mi", "10%").
func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// Threshold is one eviction threshold: met when the signal's available
// amount is below Value.
type Threshold struct {
	Signal Signal
	Value  Value
	// GracePeriod is 0 for a hard threshold; a soft one is acted upon once
	// it has been met for this long.
	GracePeriod time.Duration
	// MinReclaim, when set, keeps the threshold met until the signal is
	// this far above Value.
	MinReclaim *Value
}

// Hard reports whether the threshold is hard (acted upon at once, pods
// killed with a 1 s grace period).
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// key identifies a threshold in the manager's state.
func (t Threshold) key() string {
	return fmt.Sprintf("%s<%s/%v", t.Signal, t.Value, t.GracePeriod)
}

// DefaultHard is the kubelet's default evictionHard on Linux.
func DefaultHard() map[string]string {
	return map[string]string{
		string(SignalMemoryAvailable):  "100Mi",
		string(SignalNodeFsAvailable):  "10%",
		string(SignalNodeFsInodesFree): "5%",
		string(SignalImageFsAvailable): "15%",
	}
}

// DefaultPressureTransitionPeriod is evictionPressureTransitionPeriod's
// default.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// Config is the eviction configuration, in the kubelet's terms.
type Config struct {
	// Thresholds are the hard and soft thresholds (ParseThresholds).
	Thresholds []Threshold
	// MaxPodGracePeriod is the grace period of a soft eviction
	// (evictionMaxPodGracePeriod), or the pod's own when shorter.
	MaxPodGracePeriod int64
	// PressureTransitionPeriod is how long a pressure condition stays on
	// after its signal cleared (DefaultPressureTransitionPeriod).
	PressureTransitionPeriod time.Duration
	// Period is the monitoring interval (10 s).
	Period time.Duration
}

// ParseThresholds turns the kubelet's evictionHard, evictionSoft,
// evictionSoftGracePeriod and evictionMinimumReclaim maps into thresholds.
// A nil hard means the defaults (DefaultHard); a non-nil one replaces them
// (the kubelet's mergeDefaultEvictionSettings: false). A "0" or "0%"
// threshold is off. When allocatable is true (enforceNodeAllocatable holds
// "pods", the default) an allocatableMemory.available hard threshold
// follows memory.available's.
func ParseThresholds(hard, soft, softGrace, minReclaim map[string]string, allocatable bool) ([]Threshold, error) {
	merged := hard
	if merged == nil {
		merged = DefaultHard()
	}
	var out []Threshold
	for _, sig := range slices.Sorted(maps.Keys(merged)) {
		t, err := parseThreshold(sig, merged[sig], "evictionHard")
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		out = append(out, *t)
		if allocatable && t.Signal == SignalMemoryAvailable {
			a := *t
			a.Signal = SignalAllocatableMemoryAvailable
			out = append(out, a)
		}
	}
	for _, sig := range slices.Sorted(maps.Keys(soft)) {
		t, err := parseThreshold(sig, soft[sig], "evictionSoft")
		if err != nil {
			return nil, err
		}
		g, ok := softGrace[sig]
		if !ok {
			return nil, fmt.Errorf("evictionSoft %s: no grace period in evictionSoftGracePeriod", sig)
		}
		d, err := time.ParseDuration(g)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("evictionSoftGracePeriod %s=%q: want a positive duration", sig, g)
		}
		if t == nil {
			continue
		}
		t.GracePeriod = d
		out = append(out, *t)
	}
	for _, sig := range slices.Sorted(maps.Keys(softGrace)) {
		if _, ok := soft[sig]; !ok {
			return nil, fmt.Errorf("evictionSoftGracePeriod %s: no evictionSoft threshold for it", sig)
		}
	}
	for _, sig := range slices.Sorted(maps.Keys(minReclaim)) {
		if !validSignal(sig) {
			return nil, fmt.Errorf("evictionMinimumReclaim: unknown signal %q", sig)
		}
		v, err := parseValue(minReclaim[sig])
		if err != nil {
			return nil, fmt.Errorf("evictionMinimumReclaim %s: %w", sig, err)
		}
		for i := range out {
			if out[i].Signal == Signal(sig) {
				out[i].MinReclaim = &v
			}
		}
	}
	return out, nil
}

func validSignal(s string) bool { return slices.Contains(Signals, Signal(s)) }

// parseThreshold reads one threshold; nil for one that is off ("0").
func parseThreshold(sig, val, field string) (*Threshold, error) {
	if !validSignal(sig) {
		return nil, fmt.Errorf("%s: unknown signal %q (want one of %s)", field, sig, joinSignals())
	}
	v, err := parseValue(val)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, sig, err)
	}
	if v.Quantity != nil && v.Quantity.IsZero() || v.Quantity == nil && v.Percentage == 0 {
		return nil, nil
	}
	return &Threshold{Signal: Signal(sig), Value: v}, nil
}

func joinSignals() string {
	s := make([]string, len(Signals))
	for i, sig := range Signals {
		s[i] = string(sig)
	}
	return strings.Join(s, ", ")
}

// parseValue reads "100Mi" or "10%".
func parseValue(val string) (Value, error) {
	val = strings.TrimSpace(val)
	if p, ok := strings.CutSuffix(val, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return Value{}, fmt.Errorf("percentage %q: want 0%% to 100%%", val)
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return Value{}, fmt.Errorf("quantity %q: %w", val, err)
	}
	if q.Sign() < 0 {
		return Value{}, fmt.Errorf("quantity %q is negative", val)
	}
	return Value{Quantity: &q}, nil
}

// HardMemoryReservation is the memory the hard memory.available
// threshold keeps free, against capacity: subtracted from allocatable, as
// the kubelet does.
func HardMemoryReservation(ts []Threshold, capacity int64) int64 {
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.Hard() {
			return t.Value.Amount(capacity)
		}
	}
	return 0
}

// HardNodeFsReservation is the ephemeral storage the hard
// nodefs.available threshold keeps free, against the node filesystem's
// capacity.
func HardNodeFsReservation(ts []Threshold, capacity int64) int64 {
	for _, t := range ts {
		if t.Signal == SignalNodeFsAvailable && t.Hard() {
			return t.Value.Amount(capacity)
		}
	}
	return 0
}

// Condition is the node condition a signal's thresholds set.
func Condition(s Signal) corev1.NodeConditionType { return signalCondition(s) }
