package scenarios

import (
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// truthSnap is the runtime's truth as the checker sees it at one instant,
// shared by every invariant: built from fakecri's read-only views (no
// copies) once per runtime generation, so a check of an unchanged runtime
// costs one counter read. Nothing in it may be modified.
type truthSnap struct {
	gen uint64
	// raw: the containers as fakecri lists them (creation order).
	raw []*runtimeapi.Container
	// containers: the same as RuntimeContainers, sorted as TrueContainers
	// sorts them; byPod: those of each pod, in that order.
	containers []RuntimeContainer
	byPod      map[types.UID][]RuntimeContainer
	sandboxes  []*runtimeapi.PodSandbox
	// used: the image references and IDs the containers use (imagesUsed).
	used map[string]bool
}

// imagesUsed is the set of image references (as created, and resolved)
// and IDs of every container of the snapshot, whatever its state.
func (s *truthSnap) imagesUsed() map[string]bool {
	if s.used == nil {
		s.used = map[string]bool{}
		for _, ct := range s.raw {
			s.used[ct.GetImageRef()] = true
			s.used[ct.GetImageId()] = true
			s.used[ct.GetImage().GetImage()] = true
		}
	}
	return s.used
}

// truth returns the runtime's truth now. Like every truth read it first
// brings the runtime up to the clock's now (scripted exits due by now
// happen), as the checker's reads always have: the simulation sees the
// checker's reads at the same instants as before it shared them.
func (c *Checker) truth() *truthSnap {
	g := c.h.Runtime.TrueGeneration()
	if c.snap != nil && c.snap.gen == g {
		return c.snap
	}
	raw := c.h.Runtime.TrueContainersView()
	s := &truthSnap{gen: g, raw: raw, containers: toRuntimeContainers(raw), byPod: map[types.UID][]RuntimeContainer{},
		sandboxes: c.h.Runtime.TrueSandboxesView()}
	for _, ct := range s.containers {
		s.byPod[ct.PodUID] = append(s.byPod[ct.PodUID], ct)
	}
	c.snap = s
	return s
}

// trueMounts are the mounts container id was created with (shared with
// the runtime: read-only), none when it is gone.
func (c *Checker) trueMounts(id string) []*runtimeapi.Mount {
	cfg, _ := c.h.Runtime.TrueContainerConfigView(id)
	return cfg.GetMounts()
}
