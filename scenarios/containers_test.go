package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestCrashBetweenCreateAndStart crashes the agent right after it created
// a container and before it started it (StartContainer hangs, the agent
// dies): the restarted agent must start the next attempt and remove the
// stale Created instance, not retry the reserved name forever.
func TestCrashBetweenCreateAndStart(t *testing.T) {
	h := start(t, 41)
	c := NewChecker(h)
	pod := NewPod("web", h.NodeName)
	hang := h.Runtime.Hang("StartContainer", "")
	pod = mustCreate(t, h, pod)
	runUntil(t, h, "StartContainer caught", time.Minute, hang.Caught)
	h.CrashAgent()
	hang.Release()
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	runUntil(t, h, "web Running and Ready", 2*time.Minute, func() bool {
		c.Check()
		return PodIs(h, "default", "web", corev1.PodRunning, true)
	})
	if err := RunChecked(h, c, 30*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	var got []RuntimeContainer
	for _, ct := range PodContainers(h, pod.UID) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			t.Errorf("a Created instance is left: %+v", ct)
		}
		got = append(got, ct)
	}
	if len(got) != 1 || got[0].Attempt != 1 || got[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("runtime containers of web = %+v, want one running instance of attempt 1", got)
	}
}

// TestImageFixSkipsOldBackOff: a crash-looping container deep in its
// back-off gets a new image; the new image starts after a fresh back-off's
// first step (10 s after the last exit), not after the old one (160 s).
func TestImageFixSkipsOldBackOff(t *testing.T) {
	h := start(t, 42)
	pod := mustCreate(t, h, NewPod("crasher", h.NodeName, Exits("app", 2*time.Second, 1)))
	// Five crashes: the back-off after the fifth is 160 s.
	runUntil(t, h, "the fifth crash", 10*time.Minute, func() bool {
		for _, ct := range TrueContainers(h) {
			if ct.PodUID == pod.UID && ct.Attempt == 4 && ct.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				return true
			}
		}
		return false
	})
	if err := h.K.RunFor(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := h.API.User().UpdatePodSpec("default", "crasher", func(s *corev1.PodSpec) { s.Containers[0].Image = "nginx:latest" }); err != nil {
		t.Fatal(err)
	}
	edited := h.K.Now()
	runUntil(t, h, "the new image running", 3*time.Minute, func() bool {
		for _, ct := range TrueContainers(h) {
			if ct.PodUID == pod.UID && ct.Attempt == 5 {
				return true
			}
		}
		return false
	})
	if waited := h.K.Now().Sub(edited); waited > 15*time.Second {
		t.Errorf("the fixed image started %v after the edit, want ≤ 15 s (a fresh back-off)", waited)
	}
}

// readyToStart returns the pod's PodReadyToStartContainers condition.
func readyToStart(h *harness.Harness, name string) corev1.PodCondition {
	p, ok := APIPod(h, "default", name)
	if !ok {
		return corev1.PodCondition{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			return c
		}
	}
	return corev1.PodCondition{}
}

// TestSandboxWithoutIPIsRecreated: the CNI plugin gives a pod's sandbox no
// IP. The agent replaces the sandbox, so the pod runs with an IP; while
// the plugin keeps failing, PodReadyToStartContainers is False and says
// why.
func TestSandboxWithoutIPIsRecreated(t *testing.T) {
	h := start(t, 43)
	c := NewChecker(h)
	withIP := func(name string) func() bool {
		return func() bool {
			p, ok := APIPod(h, "default", name)
			return ok && PodIs(h, "default", name, corev1.PodRunning, true) && p.Status.PodIP != ""
		}
	}
	// One sandbox without IP: replaced at once.
	h.Runtime.DropSandboxIPs(1)
	web := mustCreate(t, h, NewPod("web", h.NodeName))
	runUntil(t, h, "web Running and Ready with an IP", time.Minute, withIP("web"))

	// Every sandbox without IP until the network is fixed.
	h.Runtime.DropSandboxIPs(0)
	mustCreate(t, h, NewPod("web2", h.NodeName))
	runUntil(t, h, "PodReadyToStartContainers False for the missing IP", time.Minute, func() bool {
		cond := readyToStart(h, "web2")
		return cond.Status == corev1.ConditionFalse && cond.Reason == "PodSandboxNotReady" && cond.Message == "pod sandbox has no IP address"
	})
	h.Runtime.ClearFaults()
	runUntil(t, h, "web2 Running and Ready with an IP", time.Minute, withIP("web2"))
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	web2, _ := APIPod(h, "default", "web2")
	for _, p := range []*corev1.Pod{web, web2} {
		if ready := readySandboxes(h, p.UID); len(ready) != 1 {
			t.Errorf("ready sandboxes of %s: %d, want 1", p.Name, len(ready))
		}
		if cond := readyToStart(h, p.Name); cond.Status != corev1.ConditionTrue || cond.Reason != "" {
			t.Errorf("PodReadyToStartContainers of %s = %+v, want True without reason", p.Name, cond)
		}
	}
}

// readySandboxes lists the pod's READY sandboxes.
func readySandboxes(h *harness.Harness, uid types.UID) []*runtimeapi.PodSandbox {
	var out []*runtimeapi.PodSandbox
	for _, sb := range Sandboxes(h, uid) {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			out = append(out, sb)
		}
	}
	return out
}

// TestTwoReadySandboxesAreReconciled: the runtime holds two ready sandboxes
// for one pod (left by another agent, or by a crash mid-re-creation); the
// agent kills both and runs the pod in one new sandbox.
func TestTwoReadySandboxesAreReconciled(t *testing.T) {
	h := start(t, 44)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("web", h.NodeName))
	runUntil(t, h, "web Running and Ready", time.Minute, func() bool {
		return PodIs(h, "default", "web", corev1.PodRunning, true)
	})
	sbs := readySandboxes(h, pod.UID)
	if len(sbs) != 1 {
		t.Fatalf("ready sandboxes: %d, want 1", len(sbs))
	}
	// A second ready sandbox of the same pod, one attempt later.
	old := sbs[0].Metadata
	md := &runtimeapi.PodSandboxMetadata{Name: old.Name, Namespace: old.Namespace, Uid: old.Uid, Attempt: old.Attempt + 1}
	cfg := &runtimeapi.PodSandboxConfig{Metadata: md, Labels: sbs[0].Labels, LogDirectory: "/var/log/pods/other"}
	if _, err := h.Runtime.RunPodSandbox(context.Background(), cfg, ""); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "one ready sandbox again, web Running and Ready", time.Minute, func() bool {
		c.Check()
		return len(readySandboxes(h, pod.UID)) == 1 && PodIs(h, "default", "web", corev1.PodRunning, true)
	})
	reportViolations(t, c)
	if got := readySandboxes(h, pod.UID)[0].Metadata.Attempt; got != 2 {
		t.Errorf("the surviving sandbox has attempt %d, want 2 (a new one)", got)
	}
}

// TestNetworkModeChangeRecreatesSandbox: the pod's network namespace mode
// changes (hostNetwork flips; the real apiserver forbids it for API pods,
// but an agent switch or a runtime left by another agent can show it):
// the agent replaces the sandbox with one in the pod's mode.
func TestNetworkModeChangeRecreatesSandbox(t *testing.T) {
	h := start(t, 45)
	pod := mustCreate(t, h, NewPod("web", h.NodeName))
	runUntil(t, h, "web Running and Ready", time.Minute, func() bool {
		return PodIs(h, "default", "web", corev1.PodRunning, true)
	})
	if _, err := h.API.User().UpdatePodSpec("default", "web", func(s *corev1.PodSpec) { s.HostNetwork = true }); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "one ready host-network sandbox", time.Minute, func() bool {
		ready := readySandboxes(h, pod.UID)
		if len(ready) != 1 {
			return false
		}
		st, err := h.Runtime.PodSandboxStatus(context.Background(), ready[0].Id, false)
		return err == nil && st.GetStatus().GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	})
	runUntil(t, h, "web Running and Ready", time.Minute, func() bool {
		return PodIs(h, "default", "web", corev1.PodRunning, true)
	})
}

// TestPreviousInstanceKept: a crash-looping container keeps its previous
// instance and that instance's log (what kubectl logs --previous reads, at
// the path the HTTP server computes from restartCount-1); older instances
// go with their logs and /var/log/containers symlinks; the live ones have
// a symlink to their log. Deleting the pod removes its log directory and
// every symlink.
func TestPreviousInstanceKept(t *testing.T) {
	h := start(t, 46)
	c := NewChecker(h)
	// Each instance runs 90 s: longer than a GC period.
	pod := mustCreate(t, h, NewPod("crasher", h.NodeName, Exits("app", 90*time.Second, 1)))
	ref := podspec.RefOf(pod)
	runUntil(t, h, "restartCount 3 running", 10*time.Minute, func() bool {
		p, ok := APIPod(h, "default", "crasher")
		return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 3 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
	// Let a GC period pass with the new instance running.
	if err := RunChecked(h, c, containerGCWait, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	var attempts []uint32
	for _, ct := range PodContainers(h, pod.UID) {
		attempts = append(attempts, ct.Attempt)
		link := podspec.ContainerLogSymlink("", ref, "app", ct.ID)
		if target, err := h.Files.Readlink(link); err != nil || target != podspec.ContainerLogFile("", ref, "app", int(ct.Attempt)) {
			t.Errorf("symlink %s of attempt %d → %q, %v", link, ct.Attempt, target, err)
		}
	}
	if diff := cmp.Diff([]uint32{2, 3}, attempts); diff != "" {
		t.Errorf("instances kept (-want +got):\n%s", diff)
	}
	p, _ := APIPod(h, "default", "crasher")
	previous := podspec.ContainerLogFile("", ref, "app", int(p.Status.ContainerStatuses[0].RestartCount)-1)
	if !h.Files.Exists(previous) {
		t.Errorf("the previous instance's log %s is gone", previous)
	}
	for _, old := range []int{0, 1} {
		if f := podspec.ContainerLogFile("", ref, "app", old); h.Files.Exists(f) {
			t.Errorf("the log %s of a collected instance is still there", f)
		}
	}
	links, _ := h.Files.ReadDir(podspec.DefaultContainerLogsDir)
	if len(links) != 2 {
		t.Errorf("symlinks in %s: %v, want the two kept instances'", podspec.DefaultContainerLogsDir, links)
	}

	if err := h.API.User().DeletePodGracefully("default", "crasher", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "crasher gone from the runtime", 2*time.Minute, func() bool { return len(PodContainers(h, pod.UID)) == 0 })
	if entries, err := h.Files.ReadDir(podspec.LogDirectory("", ref)); err == nil {
		t.Errorf("the pod's log directory is still there: %v", entries)
	}
	if links, _ := h.Files.ReadDir(podspec.DefaultContainerLogsDir); len(links) != 0 {
		t.Errorf("symlinks left after the pod is gone: %v", links)
	}
}

// containerGCWait is longer than the agent's container GC period.
const containerGCWait = 61 * time.Second

// TestNeverPodCreatedInDeadSandbox: the agent dies between creating the
// container of a restartPolicy Never pod and starting it, and the pod's
// sandbox dies meanwhile (the node went down): the restarted agent runs
// the container, which never ran, in a new sandbox, and the pod succeeds.
// (Upstream's kubernetes#118321: the kubelet gives such a pod no new
// sandbox, since it has a container, and it stays Pending for good.)
func TestNeverPodCreatedInDeadSandbox(t *testing.T) {
	h := start(t, 43)
	c := NewChecker(h)
	pod := NewPod("job", h.NodeName, Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 0))
	hang := h.Runtime.Hang("StartContainer", "")
	pod = mustCreate(t, h, pod)
	runUntil(t, h, "StartContainer caught", time.Minute, hang.Caught)
	h.CrashAgent()
	hang.Release()
	for _, sb := range h.Runtime.TrueSandboxes() {
		if err := h.Runtime.StopPodSandbox(context.Background(), sb.Id); err != nil {
			t.Fatal(err)
		}
	}
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	runUntil(t, h, "job Succeeded", 2*time.Minute, func() bool {
		c.Check()
		return PodIs(h, "default", "job", corev1.PodSucceeded, false)
	})
	if err := RunChecked(h, c, 30*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	want := []RuntimeContainer{{PodUID: pod.UID, Name: "app", Attempt: 1, State: runtimeapi.ContainerState_CONTAINER_EXITED}}
	got := PodContainers(h, pod.UID)
	for i := range got {
		got[i].ID = ""
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runtime containers of job (-want +got):\n%s", diff)
	}
	sandboxes := map[uint32]runtimeapi.PodSandboxState{}
	for _, sb := range h.Runtime.TrueSandboxes() {
		if types.UID(sb.Metadata.GetUid()) == pod.UID {
			sandboxes[sb.Metadata.GetAttempt()] = sb.State
		}
	}
	if _, ok := sandboxes[1]; !ok {
		t.Errorf("sandboxes of job by attempt: %v, want one of attempt 1", sandboxes)
	}
}
