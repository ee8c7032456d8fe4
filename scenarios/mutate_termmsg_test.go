package scenarios

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestTerminationMessagesShareThePodsBudget: a pod's termination messages
// share 12 KiB, divided among its containers of every kind — init and
// ephemeral ones too — as the kubelet caps them before it writes a status
// (kuberuntime's maxPodTerminationMessageLogLength): with an init
// container, two containers and a debug container, each keeps the first
// 3 KiB of its 4 KiB message. Written for mutants of node/termmsg that
// survived the scenario suite (init or ephemeral containers subtracted
// from the count instead of added, no share at all: docs/mutation.md).
func TestTerminationMessagesShareThePodsBudget(t *testing.T) {
	h := start(t, 2801)
	msg := strings.Repeat("0123456789abcdef", 256) // 4 KiB, the most a file gives
	opts := []PodOption{Restart(corev1.RestartPolicyNever), Init("setup", time.Second, 0), TerminationMessage("setup", msg)}
	for _, name := range []string{"app", "b"} {
		opts = append(opts, TerminationMessage(name, msg), Exits(name, 30*time.Second, 0))
	}
	mustCreate(t, h, NewPod("chatty", h.NodeName, opts...))
	runUntil(t, h, "chatty Running", time.Minute, func() bool { return PodIs(h, "default", "chatty", corev1.PodRunning, true) })
	p, _ := APIPod(h, "default", "chatty")
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
	}}}
	if _, err := h.API.User().UpdateEphemeralContainers(p); err != nil {
		t.Fatal(err)
	}
	terminated := func() map[string]*corev1.ContainerStateTerminated {
		p, _ := APIPod(h, "default", "chatty")
		out := map[string]*corev1.ContainerStateTerminated{}
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.State.Terminated != nil {
				out[cs.Name] = cs.State.Terminated
			}
		}
		return out
	}
	runUntil(t, h, "the three containers terminated", 2*time.Minute, func() bool { return len(terminated()) == 3 })
	want := msg[:(12<<10)/4]
	for name, term := range terminated() {
		if term.Message != want {
			t.Errorf("%s's message: %d bytes, want its first %d (12 KiB shared by 4 containers)", name, len(term.Message), len(want))
		}
	}
}

// TestTerminationMessageOfALostLog: a container whose message falls back
// to its log, and whose log file is gone when it fails (removed on the
// host after the log manager's last look, which would have had the
// runtime reopen it), reports why its message is missing, as the kubelet
// does ("Error on reading termination message from logs: …") rather than
// an empty message. Written for a mutant of node/termmsg that survived every
// other test (the read error dropped: docs/mutation.md).
func TestTerminationMessageOfALostLog(t *testing.T) {
	h := start(t, 2802)
	pod := mustCreate(t, h, NewPod("lost", h.NodeName, Restart(corev1.RestartPolicyNever), MessageFromLogs("app"),
		Exits("app", 15*time.Second, 1)))
	runUntil(t, h, "lost running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	// Half a second before the exit, between two of the log manager's
	// looks (every 10 s).
	if err := h.K.RunFor(14500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sbs := Sandboxes(h, pod.UID)
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(sbs))
	}
	sb, _ := h.Runtime.TrueSandboxConfig(sbs[0].Id)
	for _, c := range TrueContainers(h) {
		if c.PodUID != pod.UID {
			continue
		}
		cfg, _ := h.Runtime.TrueContainerConfig(c.ID)
		if err := h.Files.Remove(filepath.Join(sb.GetLogDirectory(), cfg.GetLogPath())); err != nil {
			t.Fatalf("removing the log of %s: %v", c.Name, err)
		}
	}
	var term *corev1.ContainerStateTerminated
	runUntil(t, h, "the container reported terminated", time.Minute, func() bool {
		term = apiContainer(t, h, "lost", "app").State.Terminated
		return term != nil
	})
	if want := "Error on reading termination message from logs: "; !strings.HasPrefix(term.Message, want) {
		t.Errorf("terminated message = %q, want one that begins %q", term.Message, want)
	}
}
