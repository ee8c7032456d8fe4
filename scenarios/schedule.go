package scenarios

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// inputs are the generations of what the invariants read: the runtime's
// truth (fakecri: containers and sandboxes created, started, exited,
// stopped, removed, resized, asked to stop), the apiserver's committed
// writes (every kind: pods, nodes, leases, events…), the node's files
// (memfs) and the cgroup tree, and the agent (its starts, and whether one
// runs). Two checks that see the same inputs see the same world but for
// the time.
type inputs struct {
	runtime, api, files, cgroups uint64
	restarts                     int
	agentUp                      bool
}

// inputsNow reads the inputs' generations (the runtime's through the
// shared truth snapshot, which brings it up to now first).
func (c *Checker) inputsNow() inputs {
	in := inputs{runtime: c.truth().gen, api: c.apiGen, files: c.h.Files.Generation(), restarts: c.h.Restarts(), agentUp: c.h.Agent() != nil}
	if c.h.Cgroups != nil {
		in.cgroups = c.h.Cgroups.Generation()
	}
	return in
}

// schedule is when each family of invariants is evaluated: a family
// whose inputs did not change since it last ran, and whose next deadline
// has not come, is skipped (it would see what it saw); every evaluation
// is counted by invariant name.
type schedule struct {
	// in is the current check's inputs; last the inputs (and the values
	// of the checker's own excuses a family reads, as key) each family
	// last ran with.
	in   inputs
	last map[string]familyKey
	// evaluated counts evaluations by family (Evaluated names them).
	evaluated map[string]int
}

// familyKey is what a family's evaluation depends on besides time.
type familyKey struct {
	in     inputs
	extra  [4]time.Duration
	extraN int
}

// The inputs a family reads, for due.
const (
	readsRuntime = 1 << iota
	readsAPI
	readsFiles
	readsCgroups
	readsAgent
)

// families names the invariants each family of checks evaluates, for
// Evaluated.
var families = map[string][]string{
	"containers":       {"no-stuck-created", "previous-kept"},
	"backoff":          {"backoff-respected"},
	"instances":        {"one-instance", "never-restart"},
	"sigterm-first":    {"sigterm-first"},
	"lease-fresh":      {"lease-fresh"},
	"client-cert":      {"client-cert-valid"},
	"service-env":      {"service-env"},
	"node-ready":       {"node-ready"},
	"termination":      {"grace-honoured", "deleted-stops", "static-exclusive"},
	"static":           {"static-removal-stops", "static-superseded-never-starts"},
	"terminal":         {"terminal-after-stopped"},
	"volumes":          {"volumes-kept"},
	"propagation":      {"propagation-shared", "propagation-privileged"},
	"volstatus":        {"volume-wait-status"},
	"tokens":           {"token-valid"},
	"probes":           {"liveness-restarts", "startup-protects", "probe-restarts", "readiness-at-once"},
	"sidecars":         {"sidecar-order"},
	"pulls":            {"pull-backoff"},
	"imagegc":          {"image-gc-safe", "image-gc-lru"},
	"logs":             {"log-bounded", "log-lines-once"},
	"hooks":            {"prestop-before-stop"},
	"prestop":          {"prestop-abandoned-runs-on"},
	"sidecar-stops":    {"sidecars-stop-together"},
	"cgroups":          {"cgroups-match"},
	"cgroups-orphans":  {"cgroups-match"},
	"cpus":             {"exclusive-cpus"},
	"numa":             {"numa-aligned"},
	"pressure":         {"pressure-conditions"},
	"evicted":          {"evicted-stays-dead"},
	"admission":        {"admission"},
	"local-storage":    {"local-storage-evicted"},
	"oom":              {"oom-reported"},
	"shutdown":         {"shutdown-grace", "shutdown-not-ready"},
	"resize":           {"allocations-fit", "allocation-checkpointed"},
	"devices":          {"devices-once", "device-plugin-down"},
	"stats-rate":       {"stats-rate", "stats-memory-limit"},
	"status-prompt":    {"status-prompt"},
	"sandbox":          {"sandbox-reported"},
	"features":         {"features-declared"},
	"liveness":         {"deleted-disappears", "converges", "status-matches", "mirror-present", "static-latest", "resize-in-place", "resize-restarts-once", "resize-converges"},
	"apparmor":         {"apparmor-refused"},
	"fqdn":             {"fqdn-too-long"},
	"on-write":         {"legal-phases", "terminal-is-final", "restart-count-monotone", "ready-is-true", "fresh-probe-results", "poststart-before-started", "qos-reported", "oom-reported", "critical-survives", "one-eviction-per-cycle", "eviction-order", "reclaim-first", "local-storage-kept", "pressure-conditions", "devices-once", "mirror-follows-current"},
	"on-shutdown-stop": {"shutdown-order", "shutdown-grace"},
}

// evaluate counts one evaluation of family's invariants.
func (c *Checker) evaluate(family string) {
	if c.sched.evaluated == nil {
		c.sched.evaluated = map[string]int{}
	}
	c.sched.evaluated[family]++
}

// due reports whether family must run at this check: when it never ran,
// when the inputs it reads (a mask of reads* bits) or the excuses it
// reads (extra) changed since it last ran, or when force (a deadline that came, state that moves with time)
// says so. A family that runs is counted (Evaluated).
func (c *Checker) due(family string, reads int, force bool, extra ...time.Duration) bool {
	if !c.changed(family, reads, force, extra...) {
		return false
	}
	c.evaluate(family)
	return true
}

// changed is due without the count, for a part of a family whose other
// part runs at every check (and is counted there).
func (c *Checker) changed(family string, reads int, force bool, extra ...time.Duration) bool {
	k := familyKey{extraN: len(extra)}
	in := c.sched.in
	if reads&readsRuntime != 0 {
		k.in.runtime = in.runtime
	}
	if reads&readsAPI != 0 {
		k.in.api = in.api
	}
	if reads&readsFiles != 0 {
		k.in.files = in.files
	}
	if reads&readsCgroups != 0 {
		k.in.cgroups = in.cgroups
	}
	if reads&readsAgent != 0 {
		k.in.restarts, k.in.agentUp = in.restarts, in.agentUp
	}
	copy(k.extra[:], extra)
	if c.sched.last == nil {
		c.sched.last = map[string]familyKey{}
	}
	if last, ran := c.sched.last[family]; ran && last == k && !force && !c.Exhaustive {
		return false
	}
	c.sched.last[family] = k
	return true
}

// Evaluated returns how many times each invariant was evaluated so far
// (by name; an invariant checked by several families counts each): a
// family runs when what it reads changed, or a deadline of its came
// (docs/checker.md, "When invariants are evaluated").
func (c *Checker) Evaluated() map[string]int {
	out := map[string]int{}
	for family, n := range c.sched.evaluated {
		names, ok := families[family]
		if !ok {
			names = []string{family}
		}
		for _, name := range names {
			out[name] += n
		}
	}
	return out
}

// apiNodes are the apiserver's nodes, read again only after a write.
func (c *Checker) apiNodes() []*corev1.Node {
	if c.nodes == nil || c.nodesGen != c.apiGen {
		c.nodes, c.nodesGen = c.h.API.User().Nodes(), c.apiGen
	}
	return c.nodes
}

// durOf turns a flag or a generation into a key value for due.
func durOf[T ~bool | ~uint64](v T) time.Duration {
	switch x := any(v).(type) {
	case bool:
		if x {
			return 1
		}
		return 0
	case uint64:
		return time.Duration(x)
	}
	return 0
}

// graceDeadlinePassed reports whether a deleted pod not yet reported
// still runs a container past its grace-honoured deadline: the time at
// which termination must run although nothing else changed.
func (c *Checker) graceDeadlinePassed() bool {
	now, byPod := c.h.K.Elapsed(), c.truth().byPod
	for uid, d := range c.term.deletions {
		if d.reported || now <= d.deadline {
			continue
		}
		for _, ct := range byPod[uid] {
			if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return true
			}
		}
	}
	return false
}

// orphanDeadlinePassed reports whether a pod cgroup seen outliving its
// pod, not yet reported, has done so for longer than cgroupOrphanBound.
func (c *Checker) orphanDeadlinePassed() bool {
	now := c.h.K.Elapsed()
	for path, since := range c.cg.orphanSince {
		if now-since > cgroupOrphanBound && !c.cg.reported[path] {
			return true
		}
	}
	return false
}

// allocationsGen is a counter that moves whenever the agent's allocation
// checkpoint, as the checker reads it, changed.
func (c *Checker) allocationsGen() uint64 {
	c.refreshAllocations()
	return c.rz.allocsGen
}

// hasLocalStorageLimit reports whether pod has a local storage limit at
// all: an emptyDir size limit, or an ephemeral-storage limit of a
// container or init container. A pod without one is never over one.
func hasLocalStorageLimit(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if ed := pod.Spec.Volumes[i].EmptyDir; ed != nil && ed.SizeLimit != nil {
			return true
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
				return true
			}
		}
	}
	return false
}

// sameCgroup reports whether two cgroups hold exactly the same limits.
func sameCgroup(a, b deps.CgroupResources) bool {
	return samePtr(a.CPUShares, b.CPUShares) && samePtr(a.CPUQuota, b.CPUQuota) && samePtr(a.CPUPeriod, b.CPUPeriod) &&
		samePtr(a.Memory, b.Memory) && maps.Equal(a.HugePageLimits, b.HugePageLimits) && (a.HugePageLimits == nil) == (b.HugePageLimits == nil)
}

func samePtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// tokenExpired reports whether a token token-valid last found unexpired
// may have expired since (a review says Expired once now is after its
// expiry).
func (c *Checker) tokenExpired() bool {
	return !c.tokensExpire.IsZero() && c.h.K.Now().After(c.tokensExpire)
}
