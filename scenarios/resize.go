package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/allocation"
	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// LabelResizable marks the pods of create-resizable: their containers run
// forever, so a new instance can only come from a resize (or a fault).
const LabelResizable = "lockstep.test/resizable"

// ResizePolicy sets container's resizePolicy for cpu and memory.
func ResizePolicy(container string, cpu, memory corev1.ResourceResizeRestartPolicy) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		c.ResizePolicy = []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: cpu},
			{ResourceName: corev1.ResourceMemory, RestartPolicy: memory},
		}
	}
}

// resizePolicies are create-resizable's policies: (cpu, memory).
var resizePolicies = [][2]corev1.ResourceResizeRestartPolicy{
	{corev1.NotRequired, corev1.NotRequired},
	{corev1.RestartContainer, corev1.NotRequired},
	{corev1.NotRequired, corev1.RestartContainer},
}

// ResizeLevel is the Burstable resources of level n (0–7): requests cpu
// 100m + 200m·n and memory 32 MiB + 16 MiB·n, limits twice as much. Level
// 7 asks 1.5 CPU of the simulated node's 2: two such pods do not fit.
func ResizeLevel(n int) corev1.ResourceRequirements {
	cpu, mem := int64(100+200*n), int64(32+16*n)
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(2*cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(2*mem<<20, resource.BinarySI)},
	}
}

// ResizablePod is a Burstable pod whose container "app" runs forever at
// ResizeLevel(level), with resize policy policy%3 (both NotRequired; cpu
// RestartContainer; memory RestartContainer).
func ResizablePod(name, node string, policy, level int) *corev1.Pod {
	pol := resizePolicies[pick(policy, len(resizePolicies))]
	p := NewPod(name, node, ResizePolicy("app", pol[0], pol[1]))
	p.Labels = map[string]string{LabelResizable: "true"}
	p.Spec.Containers[0].Resources = ResizeLevel(level % 8)
	return p
}

func opCreateResizable(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, ResizablePod(name, r.h.NodeName, a[0], a[1])); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// opResize resizes pod a's container "app" to ResizeLevel(b) through the
// resize subresource; the apiserver's refusals (not found, QoS change,
// beyond the node's allocatable) are part of the game.
func opResize(r *run, a [3]int) error {
	name := r.victim(a[0])
	if name == "" || r.deleted[name] {
		return nil
	}
	p, ok := APIPod(r.h, "default", name)
	if !ok || len(p.Spec.Containers) == 0 || p.Labels[LabelResizable] == "" {
		return nil
	}
	_, err := r.h.API.User().ResizePod("default", name, map[string]corev1.ResourceRequirements{"app": ResizeLevel(a[1])})
	if err != nil {
		r.fault("resize-refused", "error", err.Error())
	}
	return nil
}

// resizeChecks is what resize-in-place, resize-restarts-once and
// allocations-fit remember.
type resizeChecks struct {
	// resizes: resize writes per pod; pods: the latest resizable pods.
	resizes map[types.UID]int
	pods    map[types.UID]*corev1.Pod
	// checkpoint: the allocation checkpoint last read, and the pods'
	// allocations it held.
	checkpoint []byte
	allocs     map[types.UID]allocation.PodResources
	reported   map[string]bool
	// stopped: the instances the agent stopped for no other cause than a
	// resize, per pod UID/container; judged: the stopped instances seen.
	stopped map[string]map[string]bool
	judged  map[string]bool
	// prev: each pod's allocation before its last change.
	prev map[types.UID]allocation.PodResources
	// filesGen: the files' generation the checkpoint was last read at;
	// allocsGen counts the changes of allocs (allocationsGen).
	filesGen, allocsGen uint64
	read                bool
}

func newResizeChecks() *resizeChecks {
	return &resizeChecks{resizes: map[types.UID]int{}, pods: map[types.UID]*corev1.Pod{}, reported: map[string]bool{},
		stopped: map[string]map[string]bool{}, judged: map[string]bool{}, prev: map[types.UID]allocation.PodResources{}}
}

func (c *Checker) onWriteResize(r apiserver.Record) {
	if r.Pod == nil || r.Pod.Labels[LabelResizable] == "" {
		return
	}
	c.rz.pods[r.UID] = r.Pod
	if r.Verb == apiserver.VerbResize {
		c.rz.resizes[r.UID]++
	}
}

// checkResize remembers the instances of resizable pods' containers the
// agent stopped (for resize-in-place and resize-restarts-once, judged
// once the world has settled) and checks allocations-fit.
func (c *Checker) checkResize(truth []RuntimeContainer) {
	for _, ct := range truth {
		if _, ok := c.rz.pods[ct.PodUID]; !ok {
			continue
		}
		if c.rz.judged[ct.ID] {
			continue
		}
		asked, ok := c.h.Runtime.TrueStopAskedAt(ct.ID)
		if !ok {
			continue
		}
		c.rz.judged[ct.ID] = true
		if c.stopExcused(ct.ID, c.elapsedAt(asked)) {
			continue
		}
		key := string(ct.PodUID) + "/" + ct.Name
		if c.rz.stopped[key] == nil {
			c.rz.stopped[key] = map[string]bool{}
		}
		c.rz.stopped[key][ct.ID] = true
	}
	c.checkAllocationsFit(truth)
}

// checkAllocationsFit checks allocations-fit: the requests the agent's
// checkpoint allocates to the pods that run (not being deleted, not
// critical) never exceed the node's allocatable cpu and memory; and
// allocation-checkpointed: every API pod that runs a container and is
// neither being deleted nor terminal has its allocation in the checkpoint.
func (c *Checker) checkAllocationsFit(truth []RuntimeContainer) {
	c.refreshAllocations()
	nodes := c.apiNodes()
	if len(nodes) == 0 {
		return
	}
	allocatable := nodes[0].Status.Allocatable
	running := map[types.UID]bool{}
	for _, ct := range truth {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[ct.PodUID] = true
		}
	}
	var pods []*corev1.Pod
	for _, uid := range slices.Sorted(maps.Keys(running)) {
		api, ok := c.cg.pods[uid]
		a, allocated := c.rz.allocs[uid]
		if ok && !allocated && !c.deleting(uid) && !c.cg.deleted[uid] {
			// The agent writes a pod's allocation before it creates a
			// container sized by it, and removes it only once the pod has
			// ended: a restarted agent must find it.
			c.failOnce("allocation-checkpointed", string(uid), "pod %s/%s (%s) has a running container but no allocation in the checkpoint", api.Namespace, api.Name, uid)
		}
		if !ok || !allocated || c.deleting(uid) || refmodel.IsCritical(api) {
			// A critical pod is admitted by preempting others, which
			// still run for their grace period.
			continue
		}
		p, _ := allocation.Apply(api, a)
		pods = append(pods, p)
	}
	used := corev1.ResourceList{}
	for _, p := range pods {
		for rn, q := range refmodel.AdmissionRequests(p) {
			sum := used[rn]
			sum.Add(q)
			used[rn] = sum
		}
	}
	for _, rn := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		u, a := used[rn], allocatable[rn]
		if !a.IsZero() && u.Cmp(a) > 0 {
			c.failOnce("allocations-fit", string(rn)+u.String(), "the running pods are allocated %s of %s, more than the node's allocatable %s", u.String(), rn, a.String())
		}
	}
}

// refreshAllocations reads the agent's allocation checkpoint again when
// it changed, remembering each pod's previous allocation.
func (c *Checker) refreshAllocations() {
	root := c.h.AgentConfig().Node.RootDir
	if root == "" {
		root = podspec.DefaultRootDir
	}
	if g := c.h.Files.Generation(); c.rz.read && g == c.rz.filesGen {
		return // no file changed since
	} else {
		c.rz.read, c.rz.filesGen = true, g
	}
	store := allocation.NewStore(c.h.Files, root)
	data, err := c.h.Files.ReadFile(store.Path())
	if err != nil || string(data) == string(c.rz.checkpoint) {
		return
	}
	c.rz.checkpoint = data
	c.rz.allocsGen++
	if err := store.Load(); err != nil {
		c.failOnce("allocations-fit", "corrupt", "the allocation checkpoint cannot be read: %v", err)
		return
	}
	allocs := map[types.UID]allocation.PodResources{}
	for _, uid := range store.UIDs() {
		allocs[uid], _ = store.Get(uid)
		if old, ok := c.rz.allocs[uid]; ok && !equality.Semantic.DeepEqual(old, allocs[uid]) {
			c.rz.prev[uid] = old
		}
	}
	c.rz.allocs = allocs
}

// allocatedPod is pod with the resources the agent's checkpoint allocates
// it (pod itself without one).
func (c *Checker) allocatedPod(pod *corev1.Pod) *corev1.Pod {
	c.refreshAllocations()
	a, ok := c.rz.allocs[pod.UID]
	if !ok {
		return pod
	}
	out, _ := allocation.Apply(pod, a)
	return out
}

// podCgroupChoices are the limits pod's cgroup may hold: those of its
// allocation, and while a resize of it may be in flight those of its
// previous allocation and the widest of both (a resize grows the pod
// cgroup before its containers, shrinks it after).
func (c *Checker) podCgroupChoices(pod *corev1.Pod) []deps.CgroupResources {
	cur := cgroups.PodResources(c.allocatedPod(pod))
	out := []deps.CgroupResources{cur}
	if prev, ok := c.rz.prev[pod.UID]; ok {
		p, _ := allocation.Apply(pod, prev)
		old := cgroups.PodResources(p)
		out = append(out, old, cgroups.Widest(old, cur))
	}
	return out
}

// stopExcused reports whether the agent's stop of instance id, asked at
// at, has a cause other than a resize: it never started (a stale created
// instance), its sandbox got no IP (replaced with it), or the runtime was
// impaired or its view stale then (an unknown state is killed).
func (c *Checker) stopExcused(id string, at time.Duration) bool {
	if _, started := c.h.Runtime.TrueStartedAt(id); !started || c.h.Runtime.TrueSandboxLacksIP(id) {
		return true
	}
	if _, impaired := c.impairedAround(at, stepRetry); impaired {
		return true
	}
	return at <= c.suite.runtimeImpaired || at <= c.suite.viewStale
}

// deleting reports whether the API pod uid is being deleted or done.
func (c *Checker) deleting(uid types.UID) bool {
	p, ok := c.cg.pods[uid]
	return !ok || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// resizeSettled checks resize-converges once the world has settled: every
// running container of a live resizable pod without a pending resize runs
// (in the runtime's truth) with the resources its spec gives it, and its
// status reports them, with no resize condition left.
func (c *Checker) resizeSettled(live []*corev1.Pod, truth []RuntimeContainer) [][2]string {
	var out [][2]string
	for _, p := range live {
		if p.Labels[LabelResizable] == "" {
			continue
		}
		out = append(out, c.resizeRestarts(p)...)
		if hasCondition(p, corev1.PodResizePending) {
			continue
		}
		if hasCondition(p, corev1.PodResizeInProgress) {
			out = append(out, [2]string{"resize-converges", fmt.Sprintf("pod %s still reports PodResizeInProgress", p.Name)})
		}
		for i := range p.Spec.Containers {
			spec := &p.Spec.Containers[i]
			want := podspec.ContainerResources(p, spec, podspec.NodeInfo{})
			for _, ct := range truth {
				if ct.PodUID != p.UID || ct.Name != spec.Name || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
					continue
				}
				have, ok := c.h.Runtime.TrueContainerResources(ct.ID)
				if !ok || have.CpuShares != want.CpuShares || have.CpuQuota != want.CpuQuota || have.MemoryLimitInBytes != want.MemoryLimitInBytes {
					out = append(out, [2]string{"resize-converges", fmt.Sprintf("container %s/%s runs with shares %d quota %d memory %d, its spec asks %d, %d, %d",
						p.Name, spec.Name, have.GetCpuShares(), have.GetCpuQuota(), have.GetMemoryLimitInBytes(), want.CpuShares, want.CpuQuota, want.MemoryLimitInBytes)})
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == spec.Name && cs.State.Running != nil && (cs.Resources == nil || !sameQuantities(cs.Resources.Limits, spec.Resources.Limits)) {
					out = append(out, [2]string{"resize-converges", fmt.Sprintf("pod %s reports container %s's resources %v, its spec asks %v", p.Name, spec.Name, cs.Resources, spec.Resources)})
				}
			}
		}
	}
	return out
}

// resizeRestarts checks resize-in-place and resize-restarts-once on a
// live resizable pod (its containers never exit and have no probes, so
// the agent stops them only to resize them): a container whose
// resizePolicy never asks for a restart was never stopped; one whose
// policy may was stopped at most once per resize of its pod.
func (c *Checker) resizeRestarts(p *corev1.Pod) [][2]string {
	var out [][2]string
	for _, ct := range p.Spec.Containers {
		key := string(p.UID) + "/" + ct.Name
		n := len(c.rz.stopped[key])
		restarts := slices.ContainsFunc(ct.ResizePolicy, func(rp corev1.ContainerResizePolicy) bool { return rp.RestartPolicy == corev1.RestartContainer })
		switch {
		case !restarts && n > 0:
			out = append(out, [2]string{"resize-in-place", fmt.Sprintf("container %s/%s (resizePolicy NotRequired) was stopped %d times by the agent (%d resizes)",
				p.Name, ct.Name, n, c.rz.resizes[p.UID])})
		case restarts && n > c.rz.resizes[p.UID]:
			out = append(out, [2]string{"resize-restarts-once", fmt.Sprintf("container %s/%s was stopped %d times by the agent for %d resizes",
				p.Name, ct.Name, n, c.rz.resizes[p.UID])})
		}
	}
	return out
}

func hasCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
}

// sameQuantities reports whether two resource lists hold equal amounts.
func sameQuantities(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for rn, q := range a {
		if o, ok := b[rn]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

func resizeScenario() Scenario {
	return Scenario{Name: "resize", Doc: "resizable pods (in place or with a restart) resized up and down, beyond what the node has left, through agent crashes: resize-in-place, resize-restarts-once, allocations-fit, resize-converges",
		Mix: map[string]int{"create-resizable": 4, "resize": 5, "delete": 2, "crash": 1, "crash-in-sync": 1, "api-drop-watches": 1, "wait": 2}}
}
