package scenarios

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Scenario is a named property over a complete simulated node: a weighted
// mix of actions (pod creations, deletions, faults, crashes, time passing)
// drawn into a plan, run against the real agent with every invariant
// checked after each step, then healed and checked for convergence.
type Scenario struct {
	// Name is how the command line and the tests name it.
	Name string
	// Doc says in one line what it exercises.
	Doc string
	// Mix weighs the operations (names from Ops) the plan is drawn from.
	Mix map[string]int
	// MaxSteps bounds the number of actions of a drawn plan (default 25).
	MaxSteps int
	// Steps, when positive, is the exact number of actions drawn.
	Steps int
	// Configure, when set, tunes the simulated node before it starts (the
	// agent's configuration, the runtime's images).
	Configure func(*harness.Config)
	// Setup, when set, prepares the cluster before the agent first starts
	// (objects the node should find there).
	Setup func(*harness.Harness)
}

// Scenarios lists every named scenario; registering one is one line here.
func Scenarios() []Scenario {
	return []Scenario{
		relistRace(),
		crashRestart(),
		apiFaults(),
		runtimeFaults(),
		staticPods(),
		podRefusals(),
		termination(),
		probeFailure(),
		imagePulls(),
		volumes(),
		mixed(),
		cgroupsChurn(),
		evictionScenario(),
		oomScenario(),
		shutdownScenario(),
		certsScenario(),
		resizeScenario(),
		cpuManagerScenario(),
		numaScenario(),
		imageGCScenario(),
		logRotationScenario(),
		devicesScenario(),
		deviceFaultsScenario(),
		statsScenario(),
		servicesScenario(),
		watchBurstScenario(),
	}
}

func numaScenario() Scenario {
	return Scenario{Name: "numa", Doc: "Guaranteed pods asking for whole CPUs and memory come and go through crashes under the single-numa-node topology manager with the static CPU and Static memory managers on a 2-socket 4-NUMA-node machine: CPUs and memory of a container on one node (numa-aligned), exclusive CPUs never shared (exclusive-cpus)",
		Mix:       map[string]int{"create-pinned": 5, "create-sized": 3, "delete": 3, "delete-force": 1, "crash": 1, "crash-in-sync": 1, "wait": 3},
		Configure: NUMANode(topologymanager.PolicySingleNUMANode)}
}

func cpuManagerScenario() Scenario {
	return Scenario{Name: "cpumanager", Doc: "Guaranteed pods asking for whole CPUs come and go beside shared ones, through crashes, on a 2-socket 4-NUMA-node machine under the static CPU manager policy: exclusive CPUs never overlap, shared containers leave them within the reconcile period, the shared pool never empties (exclusive-cpus)",
		Mix: map[string]int{"create-pinned": 5, "create-sized": 3, "delete": 3, "delete-force": 1, "crash": 1, "crash-in-sync": 1,
			"runtime-restart": 1, "wait": 3},
		Configure: StaticCPUNode}
}

func cgroupsChurn() Scenario {
	return Scenario{Name: "cgroups", Doc: "pods of every QoS class come and go through crashes and runtime restarts: the cgroup tree follows (cgroups-match)",
		Mix: map[string]int{"create-sized": 5, "create": 1, "delete": 3, "delete-force": 1, "crash": 1, "crash-in-sync": 1,
			"runtime-restart": 1, "wait": 2}}
}

// Lookup finds a named scenario.
func Lookup(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(names, ", "))
}

func relistRace() Scenario {
	return Scenario{Name: "relist-race", Doc: "stale relists, slow lists and crashes racing pod churn",
		Mix: map[string]int{"create": 4, "delete": 2, "stale-list": 2, "cri-latency": 1, "crash": 1, "wait": 1}}
}

func crashRestart() Scenario {
	return Scenario{Name: "crash-restart", Doc: "agent crashes anywhere (inside syncs, while the API is down) and runtime restarts",
		Mix: map[string]int{"create": 4, "delete": 2, "crash": 2, "crash-in-sync": 2, "crash-during-outage": 1,
			"runtime-restart": 1, "wait": 1}}
}

func apiFaults() Scenario {
	return Scenario{Name: "api-faults", Doc: "apiserver conflicts, latency, outages, watch drops, stale reads, flaky and failed writes",
		Mix: map[string]int{"create": 4, "delete": 2, "update": 1, "api-conflicts": 1, "api-drop-watches": 1,
			"api-outage": 1, "api-latency": 1, "api-stale-reads": 1, "api-flaky": 1, "api-fail-writes": 1,
			"api-compact": 1, "wait": 1}}
}

func runtimeFaults() Scenario {
	return Scenario{Name: "runtime-faults", Doc: "CRI latency, errors, hung calls, stale lists, not-ready, restarts, failed pulls, sandboxes without IPs, sync-loop stalls",
		Mix: map[string]int{"create": 4, "delete": 2, "cri-latency": 1, "cri-error": 1, "cri-hang": 1,
			"stale-list": 1, "cri-not-ready": 1, "network-not-ready": 1, "runtime-restart": 1, "pull-fail": 1,
			"sandbox-no-ip": 1, "sync-stall": 1, "status-hang": 1, "wait": 1}}
}

func staticPods() Scenario {
	return Scenario{Name: "static-pods", Doc: "manifests added, edited, removed and re-added (also at once), rewritten many times in a row; mirror pods deleted; pods needing a node feature the node does not declare; crashes and outages",
		Mix: map[string]int{"manifest": 5, "manifest-readd": 2, "manifest-burst": 2, "mirror-delete": 2, "create": 1, "create-restart-all": 1, "crash": 1, "crash-in-sync": 1,
			"api-outage": 1, "wait": 1}}
}

func podRefusals() Scenario {
	return Scenario{Name: "pod-refusals", Doc: "pods the node must refuse or cannot start beside ordinary ones: pods asking for AppArmor on a host without it (apparmor-refused), pods whose FQDN hostname is longer than 64 bytes (fqdn-too-long, cluster domain cluster.local), with crashes, outages and deletions",
		Mix:       map[string]int{"create-apparmor": 4, "create-fqdn": 3, "create": 2, "delete": 1, "crash": 1, "crash-in-sync": 1, "api-outage": 1, "wait": 1},
		Configure: func(c *harness.Config) { c.Agent.Node.ClusterDomain = "cluster.local" }}
}

func termination() Scenario {
	return Scenario{Name: "termination", Doc: "graceful, shorter-grace and forced deletes of every pod kind, with crashes and stalls",
		Mix: map[string]int{"create": 4, "delete": 2, "delete-shorter": 2, "delete-force": 1, "crash": 1, "cri-latency": 1,
			"sync-stall": 1, "wait": 1}}
}

func probeFailure() Scenario {
	return Scenario{Name: "probe-failure", Doc: "pods with liveness, readiness and startup probes whose endpoints turn healthy, unhealthy, hanging and flapping; deletes and crashes",
		Mix: map[string]int{"create-probed": 4, "create": 1, "delete": 1, "crash": 1, "wait": 1}, MaxSteps: 12}
}

func imagePulls() Scenario {
	return Scenario{Name: "images", Doc: "pods whose images fail to pull, need pull secrets or may never be pulled; registry outages, slow pulls, crashes, deletions in back-off",
		Mix: map[string]int{"create": 5, "delete": 2, "image-fail": 2, "cri-latency": 1, "crash": 1, "crash-in-sync": 1, "wait": 1}}
}

func volumes() Scenario {
	return Scenario{Name: "volumes", Doc: "pods with configMap, secret, token and emptyDir volumes (fsGroup or not), mounts with Bidirectional and HostToContainer propagation, pods whose volume source does not exist, config updates, watch drops, outages and crashes",
		Mix: map[string]int{"create-volumes": 4, "create-propagation": 1, "create-missing-vol": 2, "create": 1, "delete": 2, "delete-force": 1, "update-config": 2, "api-drop-watches": 1,
			"api-outage": 1, "crash": 1, "crash-in-sync": 1, "crash-during-outage": 1, "wait": 1}}
}

// mixed weighs every operation alike, pod creations more.
func mixed() Scenario {
	mix := map[string]int{}
	for name := range Ops() {
		mix[name] = 1
	}
	mix["create"] = 6
	mix["delete"] = 2
	return Scenario{Name: "mixed", Doc: "everything: every pod kind, every fault, crashes, time passing", Mix: mix}
}

// Drawer is where a plan's choices come from: rapid (which shrinks them) in
// tests, a seeded generator on the command line.
type Drawer interface {
	// Int draws an integer in [lo, hi].
	Int(label string, lo, hi int) int
}

// RapidDrawer draws from a rapid test case.
func RapidDrawer(t *rapid.T) Drawer { return rapidDrawer{t} }

type rapidDrawer struct{ t *rapid.T }

func (d rapidDrawer) Int(label string, lo, hi int) int {
	return rapid.IntRange(lo, hi).Draw(d.t, label)
}

// SeededDrawer draws from a generator seeded with seed: the same seed gives
// the same plan.
func SeededDrawer(seed uint64) Drawer {
	return seededDrawer{rand.New(rand.NewPCG(seed, 0x10c5_7e9))}
}

type seededDrawer struct{ r *rand.Rand }

func (d seededDrawer) Int(_ string, lo, hi int) int { return lo + d.r.IntN(hi-lo+1) }

// Generate draws a plan of sc from d; seed is the kernel's seed.
func Generate(sc Scenario, seed uint64, d Drawer) Plan {
	ops := Ops()
	// "wait" first: rapid shrinks draws towards 0, so towards doing nothing.
	names := slices.SortedFunc(maps.Keys(sc.Mix), func(a, b string) int {
		if (a == "wait") != (b == "wait") {
			if a == "wait" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	total := 0
	for _, n := range names {
		total += sc.Mix[n]
	}
	maxSteps := sc.MaxSteps
	if maxSteps == 0 {
		maxSteps = 25
	}
	p := Plan{Scenario: sc.Name, Seed: seed, Faults: true}
	steps := sc.Steps
	if steps <= 0 {
		steps = d.Int("steps", 1, maxSteps)
	}
	for range steps {
		w := d.Int("op", 0, total-1)
		name := names[len(names)-1]
		for _, n := range names {
			if w < sc.Mix[n] {
				name = n
				break
			}
			w -= sc.Mix[n]
		}
		a := Action{Op: name}
		if g := ops[name].gen; g != nil {
			a.Args = g(d)
		}
		a.RunMS = d.Int("run-ms", 100, 20000)
		p.Actions = append(p.Actions, a)
	}
	return p
}

// Invariants names every invariant a scenario run checks, safety first,
// then liveness (checked once the world has healed and settled).
func Invariants() []string {
	return []string{
		"one-instance", "never-restart", "no-stuck-created", "previous-kept", "terminal-is-final",
		"legal-phases", "restart-count-monotone", "backoff-respected", "ready-is-true", "grace-honoured", "deleted-stops", "static-exclusive",
		"static-removal-stops", "static-superseded-never-starts", "mirror-follows-current", "terminal-after-stopped", "sigterm-first", "lease-fresh", "node-ready", "liveness-restarts", "startup-protects", "probe-restarts", "fresh-probe-results", "sidecar-order", "pull-backoff", "image-gc-safe", "image-gc-lru", "log-bounded", "log-lines-once",
		"prestop-before-stop", "prestop-abandoned-runs-on", "sidecars-stop-together", "readiness-at-once", "poststart-before-started", "volumes-kept", "volume-wait-status", "token-valid", "client-cert-valid", "cgroups-match", "qos-reported", "exclusive-cpus", "numa-aligned", "devices-once", "device-plugin-down",
		"eviction-order", "critical-survives", "evicted-stays-dead",
		"one-eviction-per-cycle", "reclaim-first", "local-storage-evicted", "local-storage-kept", "pressure-conditions", "admission", "oom-reported", "stats-rate", "stats-memory-limit",
		"shutdown-order", "shutdown-grace", "shutdown-not-ready", "status-prompt", "sandbox-reported", "features-declared", "apparmor-refused", "fqdn-too-long",
		"allocations-fit", "allocation-checkpointed", "service-env",
		"deleted-disappears", "converges", "status-matches", "mirror-present", "static-latest", "resize-in-place", "resize-restarts-once", "resize-converges",
	}
}
