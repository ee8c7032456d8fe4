package scenarios

import (
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/imagegc"
)

// gcRaceSlack: a container created this close before an image's removal
// may have come after the collector listed the containers (the kubelet
// has the same window); image-gc-safe judges only older users.
const gcRaceSlack = 2 * time.Second

// imageGCChecks is what image-gc-safe and image-gc-lru remember: the
// removals already judged, when each image was first seen and last used
// (by a container of any state), and whether it ever was; when its current
// run of use began and how long its longest run lasted.
type imageGCChecks struct {
	seen      int
	firstSeen map[string]time.Duration
	lastUsed  map[string]time.Duration
	useSince  map[string]time.Duration
	longest   map[string]time.Duration
	// late: when collection rounds ran a period late (the image-gc-late
	// fault point): each delays the collector's next detection, from
	// which its minimum age counts, by a period.
	late []time.Duration
}

// lateRounds is the delay the late rounds between from and to add to the
// collector's detections: a period each.
func (g *imageGCChecks) lateRounds(from, to, period time.Duration) time.Duration {
	var d time.Duration
	for _, at := range g.late {
		if at >= from && at <= to {
			d += period
		}
	}
	return d
}

func newImageGCChecks() *imageGCChecks {
	return &imageGCChecks{firstSeen: map[string]time.Duration{}, lastUsed: map[string]time.Duration{},
		useSince: map[string]time.Duration{}, longest: map[string]time.Duration{}}
}

// seenUsed reports whether the collector must have seen image id in use:
// it records uses only when it detects images (every period, and at each
// eviction reclaim), as the kubelet's does, so a use that came and went
// between two detections (a pod created and deleted within seconds) may
// have escaped it. A run of use longer than a period cannot.
func (g *imageGCChecks) seenUsed(id string, period time.Duration) bool {
	_, ever := g.lastUsed[id]
	return ever && g.longest[id] > period+time.Second
}

// checkImageGC follows image use and judges the runtime's new removals:
//
//   - image-gc-safe: never a pinned image, never one a container (of any
//     state) used at the removal, unless that container was created
//     within gcRaceSlack of it;
//   - image-gc-lru: an image removed while another, clearly less recently
//     used (by more than two collection periods, the granularity of the
//     agent's records), stayed although it was removable (present longer
//     than the minimum age plus a period, unused, not pinned); one never
//     used counts as less recently used only than an image the collector
//     must have seen in use (seenUsed).
func (c *Checker) checkImageGC() {
	g := c.imagegc
	now := c.h.K.Elapsed()
	used := c.truth().imagesUsed()
	present := c.h.Runtime.TrueImagesView()
	for _, img := range present {
		if _, ok := g.firstSeen[img.GetId()]; !ok {
			g.firstSeen[img.GetId()] = now
		}
		id := img.GetId()
		if !used[id] && !slices.ContainsFunc(img.GetRepoTags(), func(t string) bool { return used[t] }) {
			delete(g.useSince, id)
			continue
		}
		g.lastUsed[id] = now
		since, ok := g.useSince[id]
		if !ok {
			since = now
			g.useSince[id] = now
		}
		g.longest[id] = max(g.longest[id], now-since)
	}
	removals := c.h.Runtime.Removals()
	epoch := c.h.K.Now().Add(-now)
	cfg := c.h.AgentConfig().ImageGC
	pol, period := cfg.EffectivePolicy(), cfg.EffectivePeriod()
	for len(removals) > g.seen {
		r := removals[g.seen]
		at := r.At.Sub(epoch)
		if r.Pinned {
			c.fail("image-gc-safe", "pinned image %v removed", r.Tags)
		}
		for _, u := range r.UsedBy {
			if age := r.At.Sub(u.CreatedAt); age > gcRaceSlack {
				c.fail("image-gc-safe", "image %v removed while container %s, created %v before, used it", r.Tags, u.ContainerID, age)
			}
		}
		c.judgeLRU(r.ID, r.Tags, at, present, pol, period)
		if i := g.seen; i > 0 && removals[i-1].At.Equal(r.At) {
			c.judgeOrder(removals[i-1], r, period)
		}
		g.seen++
	}
}

// judgeOrder checks image-gc-lru for two removals of one collection: the
// first must not have been used clearly later than the second.
func (c *Checker) judgeOrder(prev, cur fakecri.Removal, period time.Duration) {
	g := c.imagegc
	pUsed, pEver := g.lastUsed[prev.ID]
	cUsed, cEver := g.lastUsed[cur.ID]
	if !pEver || !cEver && !g.seenUsed(prev.ID, period) {
		return
	}
	if !cEver || pUsed-cUsed > 2*period+10*time.Second {
		c.fail("image-gc-lru", "image %v (last used at +%v) removed before %v (last used %s)", prev.Tags, pUsed, cur.Tags, usedWhen(cUsed, cEver))
	}
}

// judgeLRU checks image-gc-lru for the removal of image id at at against
// the images still present.
func (c *Checker) judgeLRU(id string, tags []string, at time.Duration, present []*runtimeapi.Image, pol imagegc.Policy, period time.Duration) {
	g := c.imagegc
	margin := 2*period + 10*time.Second
	xUsed, xEver := g.lastUsed[id]
	if !xEver {
		return // never used: first in the agent's order
	}
	seen := g.seenUsed(id, period)
	for _, img := range present {
		y := img.GetId()
		if y == id || img.GetPinned() || g.firstSeen[y]+pol.MinAge+period+margin+g.lateRounds(g.firstSeen[y], at, period) > at {
			continue
		}
		yUsed, yEver := g.lastUsed[y]
		if yEver && (at-yUsed < margin || xUsed-yUsed <= margin) || !yEver && !seen {
			continue
		}
		c.fail("image-gc-lru", "image %v (last used at +%v) removed while %v (last used %s) stayed", tags, xUsed, img.GetRepoTags(), usedWhen(yUsed, yEver))
	}
}

func usedWhen(at time.Duration, ever bool) string {
	if !ever {
		return "never"
	}
	return "at +" + at.String()
}
