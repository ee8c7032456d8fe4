package scenarios

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// podKinds are the behaviours the property scenario draws pods from.
var podKinds = []func(name, node string) *corev1.Pod{
	func(n, node string) *corev1.Pod { return NewPod(n, node) },
	func(n, node string) *corev1.Pod { return NewPod(n, node, Exits("app", 2*time.Second, 1)) },
	func(n, node string) *corev1.Pod {
		return NewPod(n, node, Restart(corev1.RestartPolicyNever), Exits("app", 3*time.Second, 0))
	},
	func(n, node string) *corev1.Pod {
		return NewPod(n, node, Restart(corev1.RestartPolicyOnFailure), Exits("app", time.Second, 2))
	},
	func(n, node string) *corev1.Pod {
		return NewPod(n, node, Restart(corev1.RestartPolicyNever), GrowsMemory("app", "10Mi", "20Mi/s", "64Mi"))
	},
	func(n, node string) *corev1.Pod {
		return NewPod(n, node, Init("setup", time.Second, 0), IgnoresSIGTERM("app"), Grace(5))
	},
	func(n, node string) *corev1.Pod { return NewPod(n, node, IgnoresSIGTERM("app"), Grace(60)) },
	func(n, node string) *corev1.Pod { return volumePod(n, node) }, // see volumes_test.go
}

// TestPropertyAgentUnderFaults: for any sequence of pod creations and
// deletions (second deletes with a shorter grace, forced ones), static
// manifest edits, user deletions of mirror pods, agent crashes (also inside
// a sync, just before any of its CRI calls), stale relists, apiserver
// conflicts and watch drops, the safety invariants hold throughout, and
// once the faults stop the node converges: deleted pods disappear from the
// API and the runtime, running statuses match running containers, the
// static pods of the manifests present run once each with their mirror
// pods (mirror-present). rapid shrinks a failing
// sequence to a minimal one; the kernel's seed is one of its draws.
func TestPropertyAgentUnderFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		h := harness.New(harness.Config{Seed: seed})
		defer h.Close()
		h.StartAgent()
		c := NewChecker(h)
		created, deleted := []string{}, map[string]bool{}
		manifests := map[string]bool{}
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for i := range steps {
			switch action := rapid.IntRange(0, 14).Draw(rt, "action"); action {
			case 0, 1, 2, 3:
				kind := rapid.IntRange(0, len(podKinds)-1).Draw(rt, "kind")
				name := fmt.Sprintf("p%d", i)
				if _, err := Create(h, podKinds[kind](name, h.NodeName)); err != nil {
					rt.Fatal(err)
				}
				created = append(created, name)
			case 4:
				if len(created) > 0 {
					name := created[rapid.IntRange(0, len(created)-1).Draw(rt, "victim")]
					if _, ok := APIPod(h, "default", name); ok && !deleted[name] {
						if err := h.API.User().DeletePodGracefully("default", name, nil); err != nil {
							rt.Fatal(err)
						}
						deleted[name] = true
					}
				}
			case 5:
				h.CrashAgent()
				if err := RunChecked(h, c, time.Duration(rapid.IntRange(0, 5000).Draw(rt, "downtime-ms"))*time.Millisecond, 100*time.Millisecond); err != nil {
					rt.Fatal(err)
				}
				h.StartAgent()
			case 6:
				h.Runtime.SetListStaleness(time.Duration(rapid.IntRange(0, 3000).Draw(rt, "staleness-ms")) * time.Millisecond)
			case 7:
				h.API.Conflicts(rapid.IntRange(1, 5).Draw(rt, "conflicts"))
			case 8:
				h.API.DropWatches()
			case 9:
				// just time passing
			case 10:
				crashInSync(rt, h, c)
			case 11, 12:
				// A delete with a long grace, then a second one with a
				// shorter grace, or a forced one.
				if len(created) > 0 {
					name := created[rapid.IntRange(0, len(created)-1).Draw(rt, "victim")]
					shortenGrace(rt, h, c, name, action == 12)
					deleted[name] = true
				}
			case 13:
				editManifest(rt, h, manifests, i)
			case 14:
				deleteMirror(rt, h)
			}
			if err := RunChecked(h, c, time.Duration(rapid.IntRange(100, 20000).Draw(rt, "run-ms"))*time.Millisecond, 100*time.Millisecond); err != nil {
				rt.Fatal(err)
			}
		}
		// Heal and settle.
		h.Runtime.SetListStaleness(0)
		h.API.ClearFaults()
		if err := RunChecked(h, c, 3*time.Minute, time.Second); err != nil {
			rt.Fatal(err)
		}
		for _, v := range c.Violations() {
			rt.Errorf("%s", v)
		}
		checkConverged(rt, h, created, deleted)
		checkStaticConverged(rt, h, c, manifests)
	})
}

// crashPoints are the CRI calls of a sync an agent crash can land just
// before: before StartContainer is between CreateContainer and
// StartContainer; before RemoveContainer, between stopping and removing.
var crashPoints = []string{
	"RunPodSandbox", "PodSandboxStatus", "ImageStatus", "CreateContainer", "StartContainer",
	"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "ListContainers",
}

// crashInSync crashes the agent inside a sync: the next call of a drawn
// CRI method hangs, the agent dies while it hangs (the call never takes
// effect), and a new agent starts after a drawn downtime. If no such call
// comes within 30 s, nothing crashes.
func crashInSync(rt *rapid.T, h *harness.Harness, c *Checker) {
	method := rapid.SampledFrom(crashPoints).Draw(rt, "crash-before")
	hang := h.Runtime.Hang(method, "")
	defer hang.Release()
	for end := h.K.Elapsed() + 30*time.Second; !hang.Caught() && h.K.Elapsed() < end; {
		if err := RunChecked(h, c, 100*time.Millisecond, 100*time.Millisecond); err != nil {
			rt.Fatal(err)
		}
	}
	if !hang.Caught() {
		return
	}
	h.CrashAgent()
	hang.Release()
	if err := RunChecked(h, c, time.Duration(rapid.IntRange(0, 5000).Draw(rt, "crash-downtime-ms"))*time.Millisecond, 100*time.Millisecond); err != nil {
		rt.Fatal(err)
	}
	h.StartAgent()
}

// checkConverged is the liveness half: deleted-disappears, converges and
// status-matches.
func checkConverged(rt *rapid.T, h *harness.Harness, created []string, deleted map[string]bool) {
	apiUIDs := map[types.UID]bool{}
	for _, name := range created {
		p, ok := APIPod(h, "default", name)
		if deleted[name] {
			if ok {
				rt.Errorf("deleted-disappears: pod %s still in the API (phase %s, deletion %v)", name, p.Status.Phase, p.DeletionTimestamp)
			}
			continue
		}
		if !ok {
			rt.Errorf("pod %s vanished from the API without being deleted", name)
			continue
		}
		apiUIDs[p.UID] = true
		running := map[string]bool{}
		for _, ct := range TrueContainers(h) {
			if ct.PodUID == p.UID && ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running["fakecri://"+ct.ID] = true
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !running[cs.ContainerID] {
				rt.Errorf("status-matches: pod %s reports container %s running as %s, which is not running", name, cs.Name, cs.ContainerID)
			}
		}
	}
	static := staticSandboxes(h.Runtime.TrueSandboxes())
	for _, ct := range TrueContainers(h) {
		if _, ok := static[ct.PodUID]; !apiUIDs[ct.PodUID] && !ok {
			rt.Errorf("converges: container %s/%s of a pod no longer in the API is still in the runtime (%v)", ct.PodUID, ct.Name, ct.State)
		}
	}
}
