package scenarios

import (
	"testing"
)

// TestFoundBySweeps replays plans that sweeps of the registry found
// failing, each fixed since: they must pass, with the trace every run of
// them gives.
func TestFoundBySweeps(t *testing.T) {
	t.Parallel()
	replayFound(t, false, []foundPlan{
		// A pod that finished (OOMKilled, restartPolicy Never) while its
		// final status write was slow, then deleted by a user: its worker
		// had nothing more to do, so nobody told the status manager the
		// pod could go, and it stayed in the API for good.
		{"deleted after it finished, status write slow", "api-faults", 27, "api-latency:5,4002,0@2208;create:4,0,0@5622;delete:1,0,0@1169"},
		// A watch drop under stale reads: the relist answered from a
		// lagging cache lacked two running pods, which the agent then
		// stopped with grace 0 (sigterm-first). Relists now ask for a list
		// no older than what the source has seen.
		{"stale relist after a watch drop", "api-faults", 0, "wait:0,0,0@100;api-fail-writes:2,0,0@102;create:7,0,0@110;api-conflicts:5,0,0@100;create:2,0,0@103;api-fail-writes:1,0,0@3437;wait:0,0,0@113;api-stale-reads:4956,0,0@103;api-drop-watches:0,0,0@111;api-stale-reads:4366,0,0@100;wait:0,0,0@100"},
		// StopContainer failed four times from the delete on, each retry a
		// back-off (10-15 s) apart, and the next retry stopped the
		// container with its full grace, as the kubelet's does: the
		// fault's excuse ran from when the errors were injected, not from
		// when the agent's calls used them up (grace-honoured).
		{"stop errors used up late", "runtime-faults", 243, "create:6,0,0@100;cri-error:7,1,5@4881;delete:8,0,0@100;cri-hang:1,24502,0@15717"},
		// A probed pod's first sandbox came up without an IP: the agent
		// replaced it, stopping its container 1 s after it started, as the
		// kubelet does (a sandbox without an IP has changed); the checker
		// took that stop for an early liveness kill (liveness-restarts).
		{"sandbox without an IP replaced", "mixed", 102, "sandbox-no-ip:1,0,0@100;create-probed:60478,0,0@1010"},
		// An OnFailure pod with an init container and a sidecar: its app
		// succeeded, the agent stopped the sidecar and the sandbox, and the
		// next sync made a new sandbox and ran the init container again
		// (StartContainer then failed, leaving it Created for good:
		// no-stuck-created). Like the kubelet, no new sandbox now for a pod
		// whose regular containers all finished for good.
		{"no new sandbox for a finished OnFailure pod", "runtime-faults", 293, "delete:23,0,0@781;create:9,0,0@2499;cri-error:6,2,5@3888"},
		// A sidecar's StartContainer failed, then its Created instance's
		// status call hung: the agent could not see it for the 2 minutes
		// it bounds that refresh at (no-stuck-created, now counted from
		// the end of the runtime impairment).
		{"created instance behind a hung status call", "runtime-faults", 151, "create:12,0,0@100;cri-error:6,1,2@100;status-hang:248937,0,0@100"},
		// A failing postStart hook: the agent ran the preStop hook and
		// asked to stop the container at once, but that StopContainer
		// call hung for 32 s, so SIGTERM came late (prestop-before-stop
		// now judges when the agent asked, not when the runtime obeyed).
		{"stop call hung after the preStop hook", "runtime-faults", 60, "create:16,0,0@100;cri-hang:7,32675,0@100"},
		// A static pod's manifest edited and then restored (same UID): the
		// first life's container was removed with its sandbox while the
		// other version ran, and the new life's attempt 1 (after a Created
		// attempt 0 left by a crash) was judged against it (previous-kept).
		{"static pod restored after an edit", "static-pods", 167, "manifest:0,1,0@100;manifest:0,2,0@978;crash-in-sync:4,3361,0@100;manifest:0,1,0@1741;crash-in-sync:4,2979,0@100"},
		// A slow StartContainer under lagging lists: the relist after it
		// still showed the instance Created, stamped later than the start,
		// so the agent cleared it away as left Created by a crash and made
		// attempt 1 (previous-kept, now excused for an instance stopped
		// within the lists' lag of its start while they lagged).
		{"started instance still Created in a lagging list", "relist-race", 46, "wait:0,0,0@5552;cri-latency:6,2362,5@2976;stale-list:642,0,0@17338;create:5,0,0@2427"},
		// relist-race seed 0's plan ("stale-list:1607,0,0@100;create:0,0,0@900;
		// crash:0,0,0@100;delete:0,0,0@900") with a pod with volumes: the
		// agent crashed right after starting its containers, the new one's
		// lagging lists did not show them, so it finished the deleted pod
		// and tore its volumes down while they ran (volumes-kept, excused
		// now for containers a lagging list may not have shown).
		{"volumes of a deleted pod unseen after a crash", "mixed", 0, "stale-list:1607,0,0@100;create-volumes:0,0,0@900;crash:0,0,0@100;delete:0,0,0@900"},
		// A pod deleted, then force-deleted, just after a 33 s API outage:
		// the agent's pod source was still backing off its relists (up to
		// 30 s, like client-go's reflector), learned of the deletion late,
		// and meanwhile started the pod's containers (grace-honoured; the
		// outage's excuse now covers the source's recovery).
		{"deletion after an outage learned at the next relist", "volumes", 261, "create-volumes:0,0,0@100;api-outage:33014,0,0@100;delete-force:12,3805,0@100"},
		// The same with a watch drop after the outage: the new watch had
		// not proved healthy, so the relist came after the back-off.
		{"watch drop while the source backs off", "volumes", 221, "create-volumes:1,0,0@802;api-outage:35862,0,0@8294;api-drop-watches:0,0,0@100;delete-force:3,6568,0@100"},
		// Five lease conflicts injected at once, before a 39 s outage: the
		// lease writes used them up only after it, one renewal back-off
		// (7 s) apart, past the excuse counted from the injection
		// (lease-fresh; now excused until they are used up).
		{"lease conflicts used up after an outage", "mixed", 563, "api-conflicts:5,0,0@713;api-outage:38781,0,0@6969;sandbox-no-ip:2,0,0@18391"},
		// A startup probe failed its threshold while the sync loop was
		// stalled (its relist hung 50 s): the agent killed the container
		// as soon as the stall ended, when the endpoint had turned
		// healthy again (liveness-restarts; the verdict now counts from
		// the stall's start).
		{"startup kill carried out after a stalled relist", "mixed", 511, "stale-list:1201,0,0@3214;api-latency:0,809,0@2462;sandbox-no-ip:3,0,0@5978;cri-latency:1,2201,6@238;create-probed:32861,0,0@17025;sync-stall:50494,0,0@100"},
		// After a 43 s outage, under flaky calls and stale reads: the pod
		// source's first relist (after its back-off) read a list from
		// before a deletion, then its watch failed (flaky), and the next
		// relist came a back-off later, so the agent started the deleted
		// pod and stopped it late (grace-honoured; api-flaky's excuse now
		// covers the source's recovery after the heal).
		{"flaky watch after an outage", "api-faults", 430, "delete:23,0,0@9277;api-compact:0,0,0@1117;delete:11,0,0@5878;api-conflicts:1,0,0@3735;api-latency:5,3987,0@5331;api-drop-watches:0,0,0@14391;api-latency:0,3667,0@5329;api-compact:0,0,0@3095;update:23,0,0@18714;api-flaky:36,0,0@13864;api-stale-reads:2359,0,0@2412;api-stale-reads:4251,0,0@11875;api-compact:0,0,0@3539;api-compact:0,0,0@18454;api-flaky:40,0,0@18604;api-outage:43105,0,0@613;wait:0,0,0@10440;create:6,0,0@13077;delete:23,0,0@4348"},
		// A restartPolicy Never pod's first sandbox came up without an IP
		// and StartContainer failed, leaving its container Created; the
		// next sync replaced the sandbox but, the pod's container having
		// an instance, gave it no new one, and the Created instance stayed
		// for good with the pod Pending (no-stuck-created; upstream's
		// kubernetes#118321). An instance never started has not run: a
		// new sandbox now runs it.
		{"Never pod's container Created when its sandbox died", "runtime-faults", 0, "sandbox-no-ip:3,0,0@100;cri-error:6,0,4@1173;create:2,0,0@100"},
		// A pod whose containers' StartContainer failed (Created) hit its
		// activeDeadlineSeconds while its sandbox without an IP could not
		// be stopped: Failed, with its Created instances kept as dead ones
		// until the pod is deleted, as the kubelet keeps them
		// (no-stuck-created no longer judges a finished pod's instances).
		{"finished pod's Created instances kept", "runtime-faults", 0, "create:4,0,0@100;sandbox-no-ip:3,0,0@100;runtime-restart:802,0,0@3591;wait:0,0,0@109;delete:12,0,0@100;cri-latency:4,102,6@100;create:17,0,0@212;cri-error:1,1,4@8715;cri-error:6,0,4@18778;create:14,0,0@100;create:2,0,0@100"},
		// A pod created and deleted within 3 s, then disk pressure: the
		// eviction reclaim removed busybox (used by that pod) before
		// nginx (never used). The collector records uses only when it
		// detects images (every 5 min, and at each reclaim), as the
		// kubelet's, and the pod came and went between two detections
		// (image-gc-lru now judges only uses the collector must have
		// seen).
		{"image used between two detections", "mixed", 0, "create:3,0,0@100;api-compact:0,0,0@1122;delete:6,0,0@100;node-disk:1,1,0@100"},
		// Memory crossed the notifier's threshold 1.2 s after a periodic
		// cycle: the notifier's cycle evicted one pod at once, the next
		// periodic cycle (8.8 s later) another, as the kubelet's notifier
		// handler and periodic loop do (one-eviction-per-cycle now counts
		// the notifier's cycles).
		{"notifier cycle between two periodic ones", "eviction", 0, "create-qos:2,3,0@100;create-qos:2,2,2@960;wait:0,0,0@10000;node-disk:2,0,0@100;node-memory:4,0,0@100"},
		// An emptyDir pod's first sandbox came up without an IP: the agent
		// replaced it, stopping the container's first instance at +1 s;
		// the second instance wrote 8Mi and was evicted for it. The
		// checker judged the usage as of the first instance's stop, long
		// before anything was written (local-storage-kept now judges only
		// each container's latest instance: the eviction stopped those).
		{"emptyDir eviction after its sandbox was recreated", "mixed", 7008, "sandbox-no-ip:2,0,0@168;create-storage:0,1,3@880"},
		// A pod created 100 ms before the node's shutdown was announced:
		// its container ran, but no relist had shown it yet, so the
		// shutdown manager, asking the runtime cache whether the group's
		// pods still ran, moved on to the critical group at once
		// (shutdown-order). It now waits for the pods' kills to complete,
		// as the kubelet's waits for killPodNow.
		{"shutdown of a pod started since the last relist", "node-shutdown", 7009, "create-qos:3,0,0@2421;create:20,0,0@100;node-shutdown:1276,0,0@100"},
		// A crash-looping pod's instance exited and was shown terminated,
		// then two more came and went and housekeeping removed it: the
		// checker could no longer read when it had started, so could not
		// tell that the later instance the API showed superseded it
		// (status-prompt now keeps each instance's start with its event).
		{"instance removed before status-prompt judged its exit", "runtime-faults", 7196, "network-not-ready:14318,0,0@19234;create:19,0,0@7998;cri-hang:8,19466,0@100;sandbox-no-ip:3,0,0@14718;cri-hang:7,21521,0@7208;delete:12,0,0@14231;create:3,0,0@1353"},
		// A delete while the runtime restarted: StopContainer failed
		// before any SIGTERM, and the retry after the restart gave the
		// container only what was left of the grace counted from the
		// delete (2 s of 10): it needed 4 s and was SIGKILLed
		// (sigterm-first). A retried kill now gets the whole grace again,
		// as the kubelet's.
		{"kill retried after a runtime restart", "runtime-faults", 2, "create:12,0,0@100;create:20,0,0@100;create:6,0,0@100;create:4,0,0@100;create:7,0,0@11337;delete:23,0,0@4074;create:18,0,0@5836;runtime-restart:9371,0,0@100;delete:4,0,0@100"},
		// The same, as the checker saw it once the retry got its whole
		// grace: a delete during a second runtime restart, the retry 14 s
		// later (the pod worker's back-off, not the restart's end), the
		// container stopped 4 s after its SIGTERM, past a grace counted
		// from the restart's end (grace-honoured). A runtime restart now
		// impairs the runtime until the retry after it (stepRetry).
		{"kill retried a back-off after a runtime restart", "runtime-faults", 2, "create:12,0,0@100;create:20,0,0@6496;create:6,0,0@1247;runtime-restart:6885,0,0@15077;create:4,0,0@7576;create:7,0,0@16088;pull-fail:1,0,0@16168;pull-fail:3,0,0@9183;pull-fail:1,0,0@18432;delete:23,0,0@2037;pull-fail:1,0,0@12391;cri-hang:1,8417,0@7717;runtime-restart:9371,0,0@3079;delete:4,0,0@531"},
	})
}

// foundPlan is a plan a sweep found failing, fixed since.
type foundPlan struct {
	name, scenario string
	seed           uint64
	actions        string
}

// replayFound runs each plan (with the agent's fault points drawn from its
// seed when faults) and requires it to pass.
func replayFound(t *testing.T, faults bool, plans []foundPlan) {
	t.Helper()
	for _, tc := range plans {
		t.Run(tc.name, func(t *testing.T) {
			actions, err := ParseActions(tc.actions)
			if err != nil {
				t.Fatal(err)
			}
			res := Execute(Plan{Scenario: tc.scenario, Seed: tc.seed, Actions: actions, Faults: faults}, Options{})
			if res.Failed() {
				t.Errorf("%s", res.Report())
			}
		})
	}
}
