package refmodel

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// More signals, for thresholds.
const (
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
)

// Threshold is one eviction threshold: the signal is met while its
// available amount is below Quantity, or below Percentage of the
// capacity when Quantity is nil. Hard thresholds have no grace period.
type Threshold struct {
	Signal     Signal
	Quantity   *resource.Quantity
	Percentage float64
	Hard       bool
}

// amount is the threshold's value against capacity.
func (t Threshold) amount(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(float64(capacity) * t.Percentage)
}

// Met reports whether t is met when available of capacity is left (a
// value equal to the threshold is not below it).
func (t Threshold) Met(available, capacity int64) bool {
	return available < t.amount(capacity)
}

// HardMemoryReservation is the memory the hard memory.available threshold
// keeps from pods (node allocatable is capacity minus it): 0 without one.
func HardMemoryReservation(ts []Threshold, capacity int64) int64 {
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.Hard {
			return t.amount(capacity)
		}
	}
	return 0
}

// Condition is the node condition the thresholds of signal set, as
// upstream maps them: memory signals MemoryPressure, filesystem ones
// DiskPressure, pid.available PIDPressure.
func Condition(signal Signal) corev1.NodeConditionType {
	switch signal {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return corev1.NodeMemoryPressure
	case SignalPIDAvailable:
		return corev1.NodePIDPressure
	}
	return corev1.NodeDiskPressure
}
