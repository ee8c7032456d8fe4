package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// start builds a simulated node for a test and starts its agent.
func start(t *testing.T, seed uint64) *harness.Harness {
	t.Helper()
	h := harness.New(harness.Config{
		Seed:   seed,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	return h
}

func runUntil(t *testing.T, h *harness.Harness, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	if err := h.K.RunUntil(cond, limit); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func mustCreate(t *testing.T, h *harness.Harness, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := Create(h, pod)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// summary is the part of a pod status the lifecycle tests compare.
type summary struct {
	Phase      corev1.PodPhase
	Conditions map[corev1.PodConditionType]corev1.ConditionStatus
	Containers map[string]string // name → state (running, waiting:Reason, terminated:Reason:code)
	Restarts   map[string]int32
}

func summarize(p *corev1.Pod) summary {
	s := summary{Phase: p.Status.Phase, Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{},
		Containers: map[string]string{}, Restarts: map[string]int32{}}
	for _, c := range p.Status.Conditions {
		s.Conditions[c.Type] = c.Status
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Running != nil:
			s.Containers[cs.Name] = "running"
		case cs.State.Waiting != nil:
			s.Containers[cs.Name] = "waiting:" + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			s.Containers[cs.Name] = fmt.Sprintf("terminated:%s:%d", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		s.Restarts[cs.Name] = cs.RestartCount
	}
	return s
}

var allTrue = map[corev1.PodConditionType]corev1.ConditionStatus{
	corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReadyToStartContainers: corev1.ConditionTrue,
	corev1.PodInitialized: corev1.ConditionTrue, corev1.ContainersReady: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionTrue,
}

func TestCreateRunDelete(t *testing.T) {
	h := start(t, 1)
	pod := mustCreate(t, h, NewPod("web", h.NodeName, Container("sidecar"), StopsAfter("app", 3*time.Second), Grace(20)))
	runUntil(t, h, "web Running and Ready", time.Minute, func() bool { return PodIs(h, "default", "web", corev1.PodRunning, true) })

	got, _ := APIPod(h, "default", "web")
	want := summary{Phase: corev1.PodRunning, Conditions: allTrue,
		Containers: map[string]string{"app": "running", "sidecar": "running"}, Restarts: map[string]int32{"app": 0, "sidecar": 0}}
	if diff := cmp.Diff(want, summarize(got)); diff != "" {
		t.Errorf("status when running (-want +got):\n%s", diff)
	}
	if got.Status.StartTime == nil || got.Status.PodIP == "" || got.Status.ContainerStatuses[0].State.Running.StartedAt.IsZero() {
		t.Errorf("start time, pod IP and container start times must be set: %+v", got.Status)
	}
	if n := len(PodContainers(h, pod.UID)); n != 2 {
		t.Errorf("runtime holds %d containers for the pod, want 2", n)
	}

	deletedAt := h.K.Now()
	if err := h.API.User().DeletePodGracefully("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "web deleted from the API", time.Minute, func() bool { _, ok := APIPod(h, "default", "web"); return !ok })
	if took := h.K.Since(deletedAt); took > 20*time.Second {
		t.Errorf("deletion took %v, more than the 20 s grace period", took)
	}
	// The app exits 3 s after SIGTERM; the sidecar exits at once: both
	// within the grace period, and the API object goes once both stopped.
	if took := h.K.Since(deletedAt); took < 3*time.Second {
		t.Errorf("the pod object was deleted after %v, before its app container could have stopped", took)
	}
	runUntil(t, h, "runtime objects removed", 10*time.Second, func() bool {
		return len(PodContainers(h, pod.UID)) == 0 && len(Sandboxes(h, pod.UID)) == 0
	})
}

func TestHundredPodsComeAndGo(t *testing.T) {
	h := start(t, 2)
	for i := range 100 {
		mustCreate(t, h, NewPod(fmt.Sprintf("pod-%03d", i), h.NodeName))
	}
	running := func() int {
		n := 0
		for _, p := range h.API.User().ListAllPods() {
			if p.Status.Phase == corev1.PodRunning && IsReady(p) {
				n++
			}
		}
		return n
	}
	runUntil(t, h, "100 pods Running", 2*time.Minute, func() bool { return running() == 100 })
	if n := len(Containers(h)); n != 100 {
		t.Errorf("%d containers in the runtime, want 100", n)
	}
	zero := int64(0)
	for i := range 100 {
		if err := h.API.User().DeletePodGracefully("default", fmt.Sprintf("pod-%03d", i), &zero); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, h, "every pod gone", 2*time.Minute, func() bool { return len(h.API.User().ListAllPods()) == 0 })
	runUntil(t, h, "runtime empty", 30*time.Second, func() bool { return len(Containers(h)) == 0 })
}

func TestInitContainersRunInOrder(t *testing.T) {
	h := start(t, 3)
	pod := mustCreate(t, h, NewPod("init", h.NodeName,
		Init("first", 2*time.Second, 0), Init("second", 2*time.Second, 0)))
	runUntil(t, h, "init pod Running", time.Minute, func() bool { return PodIs(h, "default", "init", corev1.PodRunning, true) })
	started := map[string]time.Time{}
	finished := map[string]time.Time{}
	for _, c := range PodContainers(h, pod.UID) {
		st, err := h.Runtime.ContainerStatus(context.Background(), c.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		started[c.Name] = time.Unix(0, st.Status.StartedAt)
		finished[c.Name] = time.Unix(0, st.Status.FinishedAt)
	}
	if started["second"].Before(finished["first"]) || started["app"].Before(finished["second"]) {
		t.Errorf("containers out of order: started %v, finished %v", started, finished)
	}

	failing := mustCreate(t, h, NewPod("init-fails", h.NodeName, Restart(corev1.RestartPolicyNever),
		Init("first", time.Second, 3), Init("second", time.Second, 0)))
	runUntil(t, h, "init-fails Failed", time.Minute, func() bool { return PodIs(h, "default", "init-fails", corev1.PodFailed, false) })
	for _, c := range PodContainers(h, failing.UID) {
		if c.Name != "first" {
			t.Errorf("container %q ran although the first init container failed", c.Name)
		}
	}
}

func TestRestartPolicies(t *testing.T) {
	cases := []struct {
		policy   corev1.RestartPolicy
		code     int
		phase    corev1.PodPhase
		restarts bool
	}{
		{corev1.RestartPolicyNever, 0, corev1.PodSucceeded, false},
		{corev1.RestartPolicyNever, 1, corev1.PodFailed, false},
		{corev1.RestartPolicyOnFailure, 0, corev1.PodSucceeded, false},
		{corev1.RestartPolicyOnFailure, 1, corev1.PodRunning, true},
		{corev1.RestartPolicyAlways, 0, corev1.PodRunning, true},
		{corev1.RestartPolicyAlways, 1, corev1.PodRunning, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-exit-%d", tc.policy, tc.code), func(t *testing.T) {
			h := start(t, 4)
			mustCreate(t, h, NewPod("job", h.NodeName, Restart(tc.policy), Exits("app", 2*time.Second, tc.code)))
			if err := h.K.RunFor(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			p, _ := APIPod(h, "default", "job")
			restarts := p.Status.ContainerStatuses[0].RestartCount
			if p.Status.Phase != tc.phase || (restarts > 0) != tc.restarts {
				t.Errorf("phase %s restarts %d; want phase %s, restarting %v\nstatus: %+v", p.Status.Phase, restarts, tc.phase, tc.restarts, summarize(p))
			}
			if tc.restarts && restarts < 3 {
				t.Errorf("only %d restarts in 2 minutes of a crash loop", restarts)
			}
		})
	}
}

// startTimes follows a pod's container starts by polling the runtime every
// virtual second for d.
func startTimes(t *testing.T, h *harness.Harness, uid types.UID, d time.Duration) []time.Time {
	t.Helper()
	seen := map[string]bool{}
	var starts []time.Time
	for end := h.K.Now().Add(d); h.K.Now().Before(end); {
		if err := h.K.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		for _, c := range PodContainers(h, uid) {
			if seen[c.ID] || c.State == runtimeapi.ContainerState_CONTAINER_CREATED {
				continue
			}
			seen[c.ID] = true
			st, err := h.Runtime.ContainerStatus(context.Background(), c.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			starts = append(starts, time.Unix(0, st.Status.StartedAt))
		}
	}
	return starts
}

func TestCrashLoopBackOff(t *testing.T) {
	h := start(t, 5)
	pod := mustCreate(t, h, NewPod("crasher", h.NodeName, Exits("app", 2*time.Second, 1)))
	starts := startTimes(t, h, pod.UID, 20*time.Minute)
	if len(starts) < 8 {
		t.Fatalf("only %d starts in 20 minutes", len(starts))
	}
	// Each instance runs 2 s; the back-off after it is measured from its
	// exit, as the kubelet's: the first exit restarts at once, then 10,
	// 20, 40, 80, 160, 300 s, give or take the 1 s relist and sync tick.
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300}
	for i, w := range want {
		gap := starts[i+1].Sub(starts[i]) - 2*time.Second
		if gap < w*time.Second || gap > w*time.Second+3*time.Second {
			t.Errorf("back-off before restart %d: %v, want %v (+≤3s)", i+1, gap, w*time.Second)
		}
	}
	p, _ := APIPod(h, "default", "crasher")
	cs := p.Status.ContainerStatuses[0]
	if cs.RestartCount < 7 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("status after the crash loop: restarts %d, last state %+v", cs.RestartCount, cs.LastTerminationState)
	}
}

func TestBackOffResetsAfterTenMinutesOfRunning(t *testing.T) {
	h := start(t, 6)
	// Runs 11 minutes each time: every failure comes more than 10 min
	// after the last restart, so the back-off starts again each time: as
	// the kubelet's, the restart goes at once.
	pod := mustCreate(t, h, NewPod("slow-crasher", h.NodeName, Exits("app", 11*time.Minute, 1)))
	starts := startTimes(t, h, pod.UID, 50*time.Minute)
	if len(starts) < 4 {
		t.Fatalf("only %d starts", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1]) - 11*time.Minute
		if gap < 0 || gap > 3*time.Second {
			t.Errorf("back-off before restart %d: %v, want none (reset after clean running)", i, gap)
		}
	}
}

func TestOOMKilledIsReported(t *testing.T) {
	h := start(t, 7)
	mustCreate(t, h, NewPod("leaky", h.NodeName, Restart(corev1.RestartPolicyNever), GrowsMemory("app", "10Mi", "10Mi/s", "64Mi")))
	runUntil(t, h, "leaky Failed", time.Minute, func() bool { return PodIs(h, "default", "leaky", corev1.PodFailed, false) })
	p, _ := APIPod(h, "default", "leaky")
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("container state %+v, want terminated OOMKilled 137", p.Status.ContainerStatuses[0].State)
	}
}

// TestEventedPLEG runs a pod's life with the PLEG fed by the runtime's
// container events (relisting only every 5 minutes): starts, crashes and
// deletions are seen within a second, not at the next relist.
func TestEventedPLEG(t *testing.T) {
	h := harness.New(harness.Config{Seed: 8, EventedPLEG: true})
	t.Cleanup(h.Close)
	h.StartAgent()
	if err := h.K.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	created := h.K.Now()
	mustCreate(t, h, NewPod("evented", h.NodeName, Container("crasher"), Exits("crasher", 5*time.Second, 1)))
	runUntil(t, h, "evented Running", time.Minute, func() bool {
		p, ok := APIPod(h, "default", "evented")
		return ok && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 2 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
	if took := h.K.Since(created); took > 3*time.Second {
		t.Errorf("Running after %v with evented PLEG", took)
	}
	runUntil(t, h, "crasher restarted", 2*time.Minute, func() bool {
		p, _ := APIPod(h, "default", "evented")
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "crasher" && cs.RestartCount >= 2 {
				return true
			}
		}
		return false
	})
	deleted := h.K.Now()
	if err := h.API.User().DeletePodGracefully("default", "evented", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "evented deleted", time.Minute, func() bool { _, ok := APIPod(h, "default", "evented"); return !ok })
	if took := h.K.Since(deleted); took > 5*time.Second {
		t.Errorf("deletion took %v with evented PLEG", took)
	}
}
