package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// cgroupOrphanBound is how long a pod cgroup may outlive its pod (deleted
// or terminal, nothing running in it) while the agent runs: a few
// housekeeping rounds (2 s) and the terminated step.
const cgroupOrphanBound = 15 * time.Second

// cgroupChecks is what cgroups-match remembers.
type cgroupChecks struct {
	// pods: the latest API object of every pod (mirror pods aside) by UID.
	pods map[types.UID]*corev1.Pod
	// deleted: pods removed from the API.
	deleted map[types.UID]bool
	// orphanSince: when a pod cgroup was first seen outliving its pod.
	orphanSince map[string]time.Duration
	reported    map[string]bool
	// foreign: a ready sandbox was not the agent's at the last check.
	foreign bool
	// passed: per sandbox, what its cgroup last passed with.
	passed map[string]cgroupPass
}

// cgroupPass is a sandbox cgroup that passed cgroups-match: the same pod
// object with the same allocations and the same limits passes again.
type cgroupPass struct {
	pod    *corev1.Pod
	allocs uint64
	got    deps.CgroupResources
}

func newCgroupChecks() *cgroupChecks {
	return &cgroupChecks{pods: map[types.UID]*corev1.Pod{}, deleted: map[types.UID]bool{},
		orphanSince: map[string]time.Duration{}, reported: map[string]bool{}}
}

func (c *Checker) onWriteCgroups(r apiserver.Record) {
	if r.Pod == nil || r.Pod.Annotations[corev1.MirrorPodAnnotationKey] != "" {
		return
	}
	if _, seen := c.cg.pods[r.UID]; !seen && !c.cg.deleted[r.UID] {
		c.checkQOSReported(r.Pod)
	}
	c.cg.pods[r.UID] = r.Pod
	if r.Verb == apiserver.VerbDelete {
		c.cg.deleted[r.UID] = true
	}
}

// checkQOSReported checks qos-reported: the QoS class a pod's status
// reports when it is first written is the class its spec gives it by the
// reference model (later writes keep the class it was created with, even
// when a resize would give another).
func (c *Checker) checkQOSReported(p *corev1.Pod) {
	if got, want := p.Status.QOSClass, refmodel.QOSClass(p); got != "" && got != want {
		c.fail("qos-reported", "pod %s/%s reports QoS class %s, its spec gives %s", p.Namespace, p.Name, got, want)
	}
}

// checkCgroups checks cgroups-match: every ready sandbox the agent made sits in its pod's
// cgroup (kubepods[/<qos>]/pod<uid>), which exists with the limits the
// pod's requests and limits give it; and no pod cgroup outlives its pod
// (deleted from the API, or terminal, with nothing running in it) by more
// than cgroupOrphanBound while the agent runs and the runtime is healthy.
func (c *Checker) checkCgroups() {
	cfg := c.h.CgroupConfig()
	if !cfg.CgroupsPerQOS {
		return
	}
	// A sandbox's cgroup is judged again when the sandboxes, the pods,
	// the cgroup tree or the allocations changed (or a ready sandbox was
	// not known as the agent's yet).
	if c.due("cgroups", readsRuntime|readsAPI|readsCgroups, c.cg.foreign, durOf(c.allocationsGen())) {
		c.cg.foreign = false
		for _, sb := range c.truth().sandboxes {
			if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
				continue
			}
			if !c.h.AgentSandbox(sb.Id) {
				c.cg.foreign = true
				continue
			}
			c.checkSandboxCgroup(cfg, sb)
		}
	}
	now := c.h.K.Elapsed()
	paused := c.h.Agent() == nil || c.suite.runtimeImpaired > now
	if c.due("cgroups-orphans", readsRuntime|readsAPI|readsCgroups, c.orphanDeadlinePassed(), durOf(paused)) {
		c.checkOrphanCgroups(cfg)
	}
}

func (c *Checker) checkSandboxCgroup(cfg cgroups.Config, sb *runtimeapi.PodSandbox) {
	uid := types.UID(sb.Labels[podstate.LabelPodUID])
	sbc, _ := c.h.Runtime.TrueSandboxConfigView(sb.Id)
	parent := sbc.GetLinux().GetCgroupParent()
	report := func(format string, args ...any) {
		key := sb.Id + " " + format
		if !c.cg.reported[key] {
			c.cg.reported[key] = true
			c.fail("cgroups-match", format, args...)
		}
	}
	pod := c.cg.pods[uid]
	if pod == nil { // a static pod: its spec is not in the API
		if !strings.HasSuffix(parent, "/pod"+string(uid)) {
			report("sandbox %s of static pod %s has cgroup parent %q, not its pod cgroup", sb.Id, uid, parent)
		} else if _, ok := c.h.Cgroups.Get(parent); !ok {
			report("sandbox %s of static pod %s runs in cgroup %s, which does not exist", sb.Id, uid, parent)
		}
		return
	}
	want := cfg.PodName(uid, refmodel.QOSClass(pod)).Path(cfg.Driver)
	if parent != want {
		report("sandbox %s of pod %s/%s has cgroup parent %q, want %q", sb.Id, pod.Namespace, pod.Name, parent, want)
		return
	}
	got, ok := c.h.Cgroups.Get(want)
	if !ok {
		report("pod %s/%s runs (sandbox %s) but its cgroup %s does not exist", pod.Namespace, pod.Name, sb.Id, want)
		return
	}
	if p, ok := c.cg.passed[sb.Id]; ok && p.pod == pod && p.allocs == c.allocationsGen() && sameCgroup(p.got, got) {
		return
	}
	choices := c.podCgroupChoices(pod)
	for _, ok := range choices {
		if cmp.Equal(ok, got, cmpopts.EquateEmpty()) {
			if c.cg.passed == nil {
				c.cg.passed = map[string]cgroupPass{}
			}
			c.cg.passed[sb.Id] = cgroupPass{pod: pod, allocs: c.allocationsGen(), got: got}
			return
		}
	}
	diff := cmp.Diff(choices[0], got, cmpopts.EquateEmpty())
	report("cgroup %s of pod %s/%s has the wrong limits (-want +got):\n%s", want, pod.Namespace, pod.Name, diff)
}

// checkOrphanCgroups reports pod cgroups that outlive their pods.
func (c *Checker) checkOrphanCgroups(cfg cgroups.Config) {
	now := c.h.K.Elapsed()
	if c.h.Agent() == nil || c.suite.runtimeImpaired > now {
		clear(c.cg.orphanSince) // the agent cannot clean up meanwhile
		return
	}
	seen := map[string]bool{}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		parent := cfg.QOSParent(qos).Path(cfg.Driver)
		children, _ := c.h.Cgroups.List(parent)
		for _, child := range children {
			uid, ok := cfg.PodUID(child)
			if !ok {
				continue
			}
			pod := c.cg.pods[uid]
			if pod == nil || !c.cg.deleted[uid] && !isTerminalPhase(pod.Status.Phase) {
				continue // static, or may still run
			}
			path := cfg.PodName(uid, qos).Path(cfg.Driver)
			if len(c.h.Runtime.TrueCgroupUsers(path)) > 0 {
				continue
			}
			seen[path] = true
			since, ok := c.cg.orphanSince[path]
			if !ok {
				c.cg.orphanSince[path] = now
				continue
			}
			if now-since > cgroupOrphanBound && !c.cg.reported[path] {
				c.cg.reported[path] = true
				c.fail("cgroups-match", "cgroup %s of pod %s/%s (deleted %v, phase %s) outlived it by %v",
					path, pod.Namespace, pod.Name, c.cg.deleted[uid], pod.Status.Phase, now-since)
			}
		}
	}
	for _, p := range slices.Collect(maps.Keys(c.cg.orphanSince)) {
		if !seen[p] {
			delete(c.cg.orphanSince, p)
		}
	}
}

func isTerminalPhase(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}

// cgroupsSettled is the liveness side of cgroups-match, for the settled
// world: the pod cgroups are exactly those of the live pods (live: API
// pods neither deleted nor terminal; static pods that run), leaving aside
// the cgroups of other pods in which something still runs, and the
// Burstable cgroup's shares are those of the live Burstable pods' cpu
// requests.
func (c *Checker) cgroupsSettled(live []*corev1.Pod, static map[types.UID]string) []string {
	cfg := c.h.CgroupConfig()
	if !cfg.CgroupsPerQOS {
		return nil
	}
	var out []string
	want := map[string]bool{}
	for _, p := range live {
		want[cfg.PodName(p.UID, refmodel.QOSClass(p)).Path(cfg.Driver)] = true
	}
	got := map[string]bool{}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		parent := cfg.QOSParent(qos)
		children, _ := c.h.Cgroups.List(parent.Path(cfg.Driver))
		for _, child := range children {
			uid, ok := cfg.PodUID(child)
			if _, isStatic := static[uid]; !ok || isStatic {
				continue
			}
			path := parent.Child(child).Path(cfg.Driver)
			if !want[path] && len(c.h.Runtime.TrueCgroupUsers(path)) > 0 {
				continue // something still runs in it: not the cgroup manager's to remove
			}
			got[path] = true
		}
	}
	if !maps.Equal(want, got) {
		out = append(out, fmt.Sprintf("pod cgroups %v, want those of the live pods %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))))
	}
	allocated := make([]*corev1.Pod, 0, len(live))
	for _, p := range live {
		allocated = append(allocated, c.allocatedPod(p)) // the QoS cgroups count allocations
	}
	r, ok := c.h.Cgroups.Get(cfg.QOSParent(corev1.PodQOSBurstable).Path(cfg.Driver))
	if wantShares := refmodel.BurstableShares(allocated); !ok || r.CPUShares == nil || *r.CPUShares != wantShares {
		got := "unset"
		if r.CPUShares != nil {
			got = fmt.Sprint(*r.CPUShares)
		}
		var names []string
		for _, p := range live {
			names = append(names, p.Name+":"+string(refmodel.QOSClass(p)))
		}
		out = append(out, fmt.Sprintf("burstable cgroup shares %s, want %d for the live pods %v", got, wantShares, names))
	}
	return out
}
