package main

import (
	"math"
	"sort"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds by the
// nearest-rank method; 0 for an empty slice. ds is not modified.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Rate is n events over d as events per second; 0 when d is not positive.
func Rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
