package scenarios

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/regress"
)

// TestFaultPointsFireInMixed: plans drawn by Generate turn the agent's
// fault points on; in a few seeds of mixed they fire (many of them), the
// checker finds nothing, the same plan replays with the same trace and
// the same firings, and the plan without fault points fires none.
func TestFaultPointsFireInMixed(t *testing.T) {
	t.Parallel()
	sc, err := Lookup("mixed")
	if err != nil {
		t.Fatal(err)
	}
	sc.Steps = 8
	points := map[string]bool{}
	var first Result
	for seed := uint64(1); seed <= 3; seed++ {
		plan := Generate(sc, seed, SeededDrawer(seed))
		if !plan.Faults {
			t.Fatalf("seed %d: a drawn plan without fault points", seed)
		}
		res := Execute(plan, Options{})
		if res.Failed() {
			t.Fatal(res.Report())
		}
		if len(res.FaultsFired) == 0 {
			t.Errorf("seed %d: no fault point fired", seed)
		}
		for p := range res.FaultsFired {
			points[p] = true
		}
		if seed == 1 {
			first = res
		}
	}
	if len(points) < 10 {
		t.Errorf("3 seeds of mixed fired %d distinct fault points, want at least 10: %v", len(points), points)
	}

	again := Execute(first.Plan, Options{})
	if again.Hash != first.Hash {
		t.Errorf("seed 1 replayed with trace hash %s, first %s", again.Hash, first.Hash)
	}
	if diff := cmp.Diff(first.FaultsFired, again.FaultsFired); diff != "" {
		t.Errorf("seed 1 replayed with other firings (-first +again):\n%s", diff)
	}

	plain := first.Plan
	plain.Faults = false
	res := Execute(plain, Options{})
	if res.FaultsFired != nil {
		t.Errorf("a plan without fault points fired %v", res.FaultsFired)
	}
	if res.Hash == first.Hash {
		t.Error("the plan ran the same with and without fault points")
	}
}

// TestReplayCommandTurnsFaultsOn: a plan with fault points replays with
// --faults, one without does not.
func TestReplayCommandTurnsFaultsOn(t *testing.T) {
	if len(regress.Tags()) > 0 {
		t.Skip("a deliberately broken build replays with its tags")
	}
	p := Plan{Scenario: "mixed", Seed: 4, Actions: []Action{{Op: "wait", RunMS: 100}}}
	want := "go run ./cmd/lockstep sim run --scenario mixed --seed 4 --plan 'wait:0,0,0@100'"
	if got := p.ReplayCommand(); got != want {
		t.Errorf("ReplayCommand() = %q, want %q", got, want)
	}
	p.Faults = true
	want = "go run ./cmd/lockstep sim run --scenario mixed --seed 4 --faults --plan 'wait:0,0,0@100'"
	if got := p.ReplayCommand(); got != want {
		t.Errorf("ReplayCommand() = %q, want %q", got, want)
	}
}

// TestFaultPointsDocumented: docs/checker.md's table has a row for every
// fault point, with its package.
func TestFaultPointsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/checker.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range deps.Points() {
		if row := "| `" + p.Name + "` | `" + p.Package + "` |"; !strings.Contains(doc, row) {
			t.Errorf("docs/checker.md has no row %q", row)
		}
	}
}

// TestFoundWithFaultPoints replays plans that sweeps with the agent's
// fault points on found failing, each fixed since: they must pass.
func TestFoundWithFaultPoints(t *testing.T) {
	t.Parallel()
	replayFound(t, true, []foundPlan{
		// make sim (swarm): an eviction cycle ran a period late
		// (eviction-tick-late), so the eviction manager's last sample of
		// memory over its threshold was 18 s before the signal went
		// under, and MemoryPressure cleared the transition period after
		// that sample, as upstream's would: the checker's slack for the
		// sampling was one period short (pressure-conditions).
		{"late eviction cycle before memory pressure ended", "eviction", 115, "node-pids:1,0,0@666;create-storage:1,1,3@11101;node-memory:2,0,0@15738;wait:0,0,0@6073;node-memory:2,0,0@18723;create-storage:1,0,3@17922;create-storage:0,1,1@7953;node-memory:0,0,0@100"},
		// make sim (swarm): two StartContainer failures in a row, then a
		// sandbox without an IP: the status written before the sync's
		// actions showed the container waiting with no last termination
		// (the two newest instances never ran), so Pending after Running,
		// as upstream's getPhase gives for that status (legal-phases
		// allowed only Pending → Running).
		{"two failed starts, Running to Pending", "runtime-faults", 633, "sandbox-no-ip:3,0,0@4702;cri-latency:3,2362,1@9760;create:0,0,0@2031;pull-fail:2,0,0@10257;cri-error:0,3,4@381;cri-hang:4,2514,0@2964;cri-error:6,3,2@5354;sandbox-no-ip:1,0,0@17710"},
		// make sim (swarm): a slow StartContainer under lagging lists: the
		// agent took the started instance for one left Created and killed
		// it, running its preStop hook first (4 s), so the runtime saw the
		// stop 6.4 s after the start, past the stale view's excuse
		// (previous-kept: the excuse now counts the hook's grace).
		{"stale Created kill after a preStop hook", "relist-race", 1654, "stale-list:573,0,0@9498;create:12,0,0@3767;delete:22,0,0@7206;stale-list:1128,0,0@2401;cri-latency:6,1143,6@11070;delete:12,0,0@8351;cri-latency:6,968,3@12125;delete:2,0,0@16427;create:17,0,0@3634"},
		// make sim (swarm): a slow StartContainer under lagging lists: the
		// next sync's view showed the just-started instance still Created,
		// and the unseen tracker took any sight of its ID as the view
		// having caught up, so the agent killed it as left Created and
		// started another: a restartPolicy Never container ran twice
		// (never-restart). A view showing it Created is now stale.
		{"started instance seen Created, Never pod", "relist-race", 2685, "wait:0,0,0@19135;stale-list:563,0,0@5111;cri-latency:6,2898,6@100;cri-latency:9,1069,1@13298;crash:581,0,0@7297;stale-list:1147,0,0@11570;crash:4104,0,0@18122;create:2,0,0@4022"},
		{"the same with a hung StartContainer", "runtime-faults", 2209, "stale-list:2438,0,0@4894;network-not-ready:23848,0,0@3062;create:2,0,0@1039;cri-hang:6,24655,0@693"},
		// make sim (swarm): a node status patch applied but its reply lost
		// (node-status-reply-lost); the retry built its patch on the node
		// as last written before it, found nothing to change against that
		// base and sent nothing, so the API kept the applied patch's
		// MemoryPressure False for 150 s while the agent's was True
		// (pressure-conditions). A try after a failed patch now reads the
		// node again.
		{"node status reply lost, pressure set meanwhile", "oom", 2519, "node-memory:4,0,0@18077;node-memory:0,0,0@17059;delete:2,0,0@17421;node-memory:3,0,0@14880;create-oom:0,1,1@590;create-oom:0,0,2@100"},
		// make sim (swarm): an image collection round ran a period late
		// (image-gc-late), so the collector first detected an image two
		// periods after it came; the eviction manager's reclaim then
		// kept it as younger than the minimum age (counted from
		// detection, as upstream's) and evicted a pod: the checker's
		// slack was one detection period (reclaim-first).
		{"late image collection round before disk pressure", "image-gc", 2245, "crash:318,0,0@100;crash:3991,0,0@2069;create-image:2,1,0@3992;image-disk:3,0,0@8593;image-disk:0,0,0@6948;create-image:3,0,0@14210;create-image:1,1,0@12526;wait:0,0,0@17393;wait:0,0,0@16702;delete:0,0,0@6617;create-image:1,1,0@13833;image-disk:3,0,0@100"},
		// make test: a probed pod's container killed by its liveness
		// probe a fourth time while the third instance's exit was 20 s
		// old: the crash-loop back-off held the start (as upstream's
		// doBackOff on the newest exited instance), and the container
		// GC removed that instance as soon as the killed one exited,
		// before the checker saw the exit, which then found no earlier
		// exit and owed a restart at once (probe-restarts now judges
		// from the instances the runtime held at the kill).
		{"earlier instance collected before the kill's exit was seen", "probe-failure", 4, "create-probed:8484,0,0@1519;crash:7,0,0@104;create-probed:13,0,0@854;create-probed:39,0,0@100"},
		{"late eviction cycle, QoS pods", "eviction", 209, "create-qos:0,2,3@15149;create-qos:1,1,5@4610;create-qos:2,1,0@8693;node-pids:0,0,0@12729;create-qos:1,2,5@4678;node-memory:1,0,0@16970;node-memory:1,0,0@3919;create-qos:3,0,4@13685;create-qos:2,0,4@1897;create-qos:3,0,5@16491;node-memory:0,0,0@100"},
		// make test (device-faults seed 26): a device pod admitted whose
		// first sync failed (allocation-checkpoint-fails) before its
		// plugin died; past the grace the agent restarted, and the
		// runtime's view of the pod's sandbox reached the PLEG before
		// the API source's add reached admission: the PLEG's sync started
		// a worker, whose sync (its rejection read while admission had
		// not decided yet) created the container after admission refused
		// the pod (OutOfexample.com/foo, the Node's 0), without devices
		// (devices-once). A resync now never starts a worker, as the
		// kubelet's PLEG syncs only pods its config loop added and
		// admitted.
		// make test (device-faults seed 26, the unshrunk draw): a pod
		// held a device whose plugin was removed past its grace; the
		// plugin came back after a restart with a stream that failed
		// before listing it, and at the next restart admission counted
		// only the devices listed since, 0, so the pod that ran was
		// refused OutOfexample.com/foo (devices-once). The devices pods
		// hold now count, as upstream's sanitizeNodeAllocatable.
		{"held device unlisted after the plugin came back", "device-faults", 26, "create-devices:2,0,0@100;create-devices:0,0,0@15002;plugin-gone-restart:2,0,0@100;plugin-fail-list:1,0,0@100;crash:2196,0,0@100"},
		{"PLEG sync before admission after a restart", "device-faults", 26, "wait:0,0,0@100;create-devices:0,0,0@15002;plugin-gone-restart:2,5,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100;wait:0,0,0@100"},
	})
}
