package eviction

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Candidate is an active pod with its usage; HasStats is false when the
// sample had none for it (such pods rank first, as upstream).
type Candidate struct {
	Pod      *corev1.Pod
	Usage    PodUsage
	HasStats bool
}

// Candidates pairs pods with their usages, in the pods' order.
func Candidates(pods []*corev1.Pod, usages Usages) []Candidate {
	out := make([]Candidate, len(pods))
	for i, p := range pods {
		u, ok := usages[p.UID]
		out[i] = Candidate{Pod: p, Usage: u, HasStats: ok}
	}
	return out
}

// Rank orders candidates for eviction under signal, first to evict first,
// by the kubelet's rules (ties keep the given order):
//   - memory: pods without stats, then pods whose working set exceeds
//     their memory request; then lower priority; then the larger working
//     set above the request;
//   - pid.available: lower priority, then more processes;
//   - disk (nodefs/imagefs bytes or inodes): pods without stats, then
//     pods whose writable layers exceed their ephemeral-storage request
//     (for inodes: their request of inodes, none); then lower priority;
//     then the larger usage above the ephemeral-storage request.
func Rank(signal Signal, cands []Candidate) {
	switch signalResource(signal) {
	case corev1.ResourceMemory:
		slices.SortStableFunc(cands, func(a, b Candidate) int {
			return cmpFirst(
				cmpTrueFirst(!a.HasStats, !b.HasStats),
				cmpTrueFirst(exceeds(a, memoryUse, corev1.ResourceMemory), exceeds(b, memoryUse, corev1.ResourceMemory)),
				cmp.Compare(rankPriority(a.Pod), rankPriority(b.Pod)),
				cmp.Compare(above(b, memoryUse, corev1.ResourceMemory), above(a, memoryUse, corev1.ResourceMemory)),
			)
		})
	case ResourcePIDs:
		slices.SortStableFunc(cands, func(a, b Candidate) int {
			return cmpFirst(
				cmp.Compare(rankPriority(a.Pod), rankPriority(b.Pod)),
				cmpTrueFirst(!a.HasStats, !b.HasStats),
				cmp.Compare(b.Usage.Processes, a.Usage.Processes),
			)
		})
	case corev1.ResourceEphemeralStorage, ResourceInodes:
		use, measured := diskUse, corev1.ResourceEphemeralStorage
		if signalResource(signal) == ResourceInodes {
			// Upstream holds inodes against a request of inodes (which
			// pods do not make: any inode exceeds it), then ranks by
			// inodes above the ephemeral-storage request.
			use, measured = inodeUse, ResourceInodes
		}
		slices.SortStableFunc(cands, func(a, b Candidate) int {
			return cmpFirst(
				cmpTrueFirst(!a.HasStats, !b.HasStats),
				cmpTrueFirst(exceeds(a, use, measured), exceeds(b, use, measured)),
				cmp.Compare(rankPriority(a.Pod), rankPriority(b.Pod)),
				cmp.Compare(above(b, use, corev1.ResourceEphemeralStorage), above(a, use, corev1.ResourceEphemeralStorage)),
			)
		})
	}
}

func memoryUse(c Candidate) int64 { return c.Usage.Memory }
func diskUse(c Candidate) int64   { return c.Usage.Disk }
func inodeUse(c Candidate) int64  { return c.Usage.Inodes }

// exceeds reports whether c uses more than it requests of r.
func exceeds(c Candidate, use func(Candidate) int64, r corev1.ResourceName) bool {
	return use(c) > admission.Request(c.Pod, r)
}

// above is c's usage above its request of r (negative below).
func above(c Candidate, use func(Candidate) int64, r corev1.ResourceName) int64 {
	return use(c) - admission.Request(c.Pod, r)
}

// cmpTrueFirst orders true before false.
func cmpTrueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// cmpFirst is the first non-zero comparison.
func cmpFirst(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

// rankPriority is the pod's priority as the ranking compares it (all
// equal in the deliberately broken build of teeth_rank.go).
func rankPriority(pod *corev1.Pod) int32 {
	if brokenRank {
		return 0
	}
	return podutil.Priority(pod)
}
