package scenarios

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestTerminationMessagesShareThePodsBudget: a pod's termination messages
// share 12 KiB, divided among its containers of every kind — ephemeral
// ones too — as the kubelet caps them before it writes a status
// (kuberuntime's maxPodTerminationMessageLogLength): with three
// containers and a debug container, each keeps the first 3 KiB of its
// 4 KiB message. Written for a mutant of node/termmsg that survived every
// other test (an ephemeral container subtracted from the count instead of
// added: docs/mutation.md).
func TestTerminationMessagesShareThePodsBudget(t *testing.T) {
	h := start(t, 2801)
	msg := strings.Repeat("0123456789abcdef", 256) // 4 KiB, the most a file gives
	opts := []PodOption{Restart(corev1.RestartPolicyNever)}
	for _, name := range []string{"app", "b", "c"} {
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
	runUntil(t, h, "the three containers terminated", 2*time.Minute, func() bool {
		for _, name := range []string{"app", "b", "c"} {
			if apiContainer(t, h, "chatty", name).State.Terminated == nil {
				return false
			}
		}
		return true
	})
	want := msg[:(12<<10)/4]
	for _, name := range []string{"app", "b", "c"} {
		if got := apiContainer(t, h, "chatty", name).State.Terminated.Message; got != want {
			t.Errorf("%s's message: %d bytes, want its first %d (12 KiB shared by 4 containers)", name, len(got), len(want))
		}
	}
}
