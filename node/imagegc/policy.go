// Package imagegc is the image garbage collector, as the kubelet's: it
// records when each image of the runtime was first detected and last used
// by a container (of any state), and, when the image filesystem's usage
// reaches the high threshold, removes unused images least recently used
// first (respecting the minimum age) until usage is down to the low
// threshold; with a maximum age, images unused that long go whatever the
// usage. Pinned images and the sandbox image are never removed. The
// records survive an agent restart in a small state file.
//
// The decisions (Detect, Candidates, ForSpace, ForAge) are pure functions
// of the records and the runtime's lists; the Manager does the I/O on the
// injected clock.
package imagegc

import (
	"fmt"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's defaults.
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	// DefaultPeriod is how often images are detected and collected
	// (upstream's ImageGCPeriod).
	DefaultPeriod = 5 * time.Minute
)

// Policy is when images are collected (imageGCHighThresholdPercent,
// imageGCLowThresholdPercent, imageMinimumGCAge, imageMaximumGCAge).
type Policy struct {
	// HighThresholdPercent of image filesystem usage starts a collection;
	// 100 turns collection for space off.
	HighThresholdPercent int
	// LowThresholdPercent is the usage a collection aims at.
	LowThresholdPercent int
	// MinAge is how long after its first detection an unused image is
	// kept.
	MinAge time.Duration
	// MaxAge, when positive, removes images unused for longer, whatever
	// the usage (not before the collector has run that long).
	MaxAge time.Duration
}

// DefaultPolicy is the kubelet's default policy.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: DefaultHighThresholdPercent, LowThresholdPercent: DefaultLowThresholdPercent, MinAge: DefaultMinAge}
}

// Validate checks the thresholds as the kubelet does.
func (p Policy) Validate() error {
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		return fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]", p.HighThresholdPercent)
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		return fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]", p.LowThresholdPercent)
	}
	if p.LowThresholdPercent > p.HighThresholdPercent {
		return fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", p.LowThresholdPercent, p.HighThresholdPercent)
	}
	if p.MinAge < 0 || p.MaxAge < 0 {
		return fmt.Errorf("image GC ages must not be negative (minimum %v, maximum %v)", p.MinAge, p.MaxAge)
	}
	if p.MaxAge > 0 && p.MaxAge < p.MinAge {
		return fmt.Errorf("imageMaximumGCAge %v must be greater than imageMinimumGCAge %v", p.MaxAge, p.MinAge)
	}
	return nil
}

// Disabled reports whether the policy never removes anything on its own
// (high threshold 100, no maximum age), as the kubelet stubs its
// collector then; node-level reclaim under disk pressure still works.
func (p Policy) Disabled() bool { return p.HighThresholdPercent >= 100 && p.MaxAge == 0 }

// Record is what the collector knows of one image.
type Record struct {
	// FirstDetected is when the image was first seen in the runtime.
	FirstDetected time.Time `json:"firstDetected"`
	// LastUsed is when a container last used it (zero: never seen used).
	LastUsed time.Time `json:"lastUsed,omitzero"`
	// Size is its size in bytes; Pinned says the runtime pins it.
	Size   int64 `json:"size"`
	Pinned bool  `json:"pinned,omitempty"`
	// Tags are its repo tags (for logs and the sandbox image).
	Tags []string `json:"tags,omitempty"`
}

// Records are the records by image ID.
type Records map[string]Record

// InUse is the set of image references (IDs, tags, digests) that
// containers of any state name, from the runtime's container list.
func InUse(containers []*runtimeapi.Container) map[string]bool {
	used := map[string]bool{}
	for _, c := range containers {
		if r := c.GetImageRef(); r != "" {
			used[r] = true
		}
		if r := c.GetImageId(); r != "" {
			used[r] = true
		}
		if r := c.GetImage().GetImage(); r != "" {
			used[r] = true
		}
	}
	return used
}

// used reports whether any name of img is in used.
func used(img *runtimeapi.Image, inUse map[string]bool) bool {
	return inUse[img.GetId()] || slices.ContainsFunc(img.GetRepoTags(), func(t string) bool { return inUse[t] }) ||
		slices.ContainsFunc(img.GetRepoDigests(), func(d string) bool { return inUse[d] })
}

// Detect returns the records after seeing images at now: a new image is
// first detected now, an image in use was last used now, sizes and pins
// follow the runtime, and records of images gone are dropped. It also
// returns the IDs of the images in use.
func Detect(old Records, images []*runtimeapi.Image, inUse map[string]bool, now time.Time) (Records, map[string]bool) {
	out := make(Records, len(images))
	usedIDs := map[string]bool{}
	for _, img := range images {
		id := img.GetId()
		r, ok := old[id]
		if !ok {
			r = Record{FirstDetected: now}
		}
		if used(img, inUse) {
			r.LastUsed = now
			usedIDs[id] = true
		}
		r.Size, r.Pinned, r.Tags = int64(img.GetSize()), img.GetPinned(), slices.Clone(img.GetRepoTags())
		out[id] = r
	}
	return out, usedIDs
}

// Candidate is an image the collector may remove.
type Candidate struct {
	ID string
	Record
}

// Candidates are the images neither in use, pinned nor protected (the
// sandbox image), least recently used first, ties broken by first
// detection, then by ID so that the order is the same on every run.
func Candidates(recs Records, inUse map[string]bool, protected func(id string, r Record) bool) []Candidate {
	var out []Candidate
	for id, r := range recs {
		if inUse[id] || r.Pinned || (protected != nil && protected(id, r)) {
			continue
		}
		out = append(out, Candidate{ID: id, Record: r})
	}
	slices.SortFunc(out, func(a, b Candidate) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		if c := a.FirstDetected.Compare(b.FirstDetected); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ForAge are the candidates unused for longer than maxAge at now, once
// the collector has run longer than maxAge (began is when it started),
// as the kubelet's; none without a maximum age.
func ForAge(cands []Candidate, maxAge time.Duration, began, now time.Time) []Candidate {
	if maxAge <= 0 || now.Sub(began) <= maxAge {
		return nil
	}
	var out []Candidate
	for _, c := range cands {
		if now.Sub(c.LastUsed) > maxAge {
			out = append(out, c)
		}
	}
	return out
}

// ForSpace are the candidates to remove, in order, to free toFree bytes
// at now: images used at or after now and images detected less than
// minAge ago are skipped; the list stops once their sizes reach toFree
// (it holds at least one image when any is eligible).
func ForSpace(cands []Candidate, toFree int64, minAge time.Duration, now time.Time) []Candidate {
	var out []Candidate
	var freed int64
	for _, c := range cands {
		if !c.LastUsed.Before(now) || now.Sub(c.FirstDetected) < minAge {
			continue
		}
		out = append(out, c)
		freed += c.Size
		if freed >= toFree {
			break
		}
	}
	return out
}

// Usage is the image filesystem's usage percent and the bytes to free to
// bring it down to low percent, as the kubelet computes them (available
// above capacity counts as capacity).
func Usage(capacity, available int64, low int) (percent int, toFree int64) {
	available = min(available, capacity)
	percent = 100 - int(available*100/capacity)
	return percent, capacity*int64(100-low)/100 - available
}

// FormatSize writes a byte count as the kubelet's messages do.
func FormatSize(b int64) string {
	const (
		kib = 1024
		mib = 1024 * kib
		gib = 1024 * mib
		tib = 1024 * gib
	)
	s := float64(b)
	switch {
	case s < kib:
		return fmt.Sprintf("%d B", b)
	case s < mib:
		return fmt.Sprintf("%.1f KiB", s/kib)
	case s < gib:
		return fmt.Sprintf("%.1f MiB", s/mib)
	case s < tib:
		return fmt.Sprintf("%.1f GiB", s/gib)
	}
	return fmt.Sprintf("%.1f TiB", s/tib)
}
