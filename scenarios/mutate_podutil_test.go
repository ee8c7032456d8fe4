package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestClusterCriticalPodPreempts: a pod of priority exactly 2,000,000,000
// (system-cluster-critical, the lowest critical priority) is critical
// (upstream's IsCriticalPod: priority >= SystemCriticalPriority): on a
// full node it is admitted by preempting a BestEffort pod, as a
// system-node-critical one is in TestCriticalPodPreempts. Written for a
// mutant of node/podutil that survived the scenario suite (> for >=:
// docs/mutation.md).
func TestClusterCriticalPodPreempts(t *testing.T) {
	h := startEviction(t, 6)
	fillNode(t, h)
	prio := int32(2_000_000_000)
	mustCreate(t, h, NewPod("critical", h.NodeName, Env("app", "FAKECRI_MEMORY", fmt.Sprintf("%dMi", 16)), Grace(10),
		func(p *corev1.Pod) { p.Spec.PriorityClassName, p.Spec.Priority = "system-cluster-critical", &prio }))
	runUntil(t, h, "the critical pod running", time.Minute, func() bool { return PodIs(h, "default", "critical", corev1.PodRunning, false) })
	p, _ := APIPod(h, "default", "be0")
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Preempting" {
		t.Errorf("BestEffort pod: %s %q %q, want Failed by preemption", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
}

// TestPullPolicyDefaults: a container without an imagePullPolicy gets the
// API's default from its image reference (pkg/apis/core/v1/defaults.go):
// Always for ":latest" or no tag and no digest, IfNotPresent for another
// tag or a digest. The simulated apiserver defaults through the agent's
// own podutil.DefaultPullPolicy (sim/apiserver/defaults.go), so no
// invariant can see a bug there; this states the rule from upstream.
// Written for a mutant of node/podutil that survived the scenario suite
// (any tag taken for ":latest": docs/mutation.md).
func TestPullPolicyDefaults(t *testing.T) {
	h := start(t, 2803)
	for i, tc := range []struct {
		image  string
		policy corev1.PullPolicy
	}{
		{"busybox:1.37", corev1.PullIfNotPresent},
		{"busybox:latest", corev1.PullAlways},
		{"busybox", corev1.PullAlways},
		{"registry:5000/busybox", corev1.PullAlways},
		{"busybox@sha256:" + hex64, corev1.PullIfNotPresent},
		{"busybox:latest@sha256:" + hex64, corev1.PullAlways},
	} {
		name := fmt.Sprintf("pull%d", i)
		mustCreate(t, h, NewPod(name, h.NodeName, func(p *corev1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = tc.image, ""
		}))
		p, _ := APIPod(h, "default", name)
		if got := p.Spec.Containers[0].ImagePullPolicy; got != tc.policy {
			t.Errorf("image %s: imagePullPolicy defaulted to %q, want %q", tc.image, got, tc.policy)
		}
	}
}

// hex64 is a digest's 64 hex digits.
const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestRunOncePodGetsNoNewSandbox: the sandbox of a running pod whose
// container may not run again (restartPolicy Never, the pod's or the
// container's own) dies, its container with it: the container ran, so the
// kubelet gives the pod no new sandbox (computePodActions: a pod that
// runs once and has a container that ran keeps its dead sandbox) and the
// pod fails. Written for mutants of node/podutil that survived the
// scenario suite (RunsOnce always false; a container's own Never read as
// Always: docs/mutation.md).
func TestRunOncePodGetsNoNewSandbox(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	for name, opt := range map[string]PodOption{
		"pod's policy":       Restart(corev1.RestartPolicyNever),
		"container's policy": func(p *corev1.Pod) { p.Spec.Containers[0].RestartPolicy = &never },
	} {
		t.Run(name, func(t *testing.T) {
			h := start(t, 2804)
			pod := mustCreate(t, h, NewPod("once", h.NodeName, opt))
			runUntil(t, h, "once running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
			for _, sb := range Sandboxes(h, pod.UID) {
				if err := h.Runtime.StopPodSandbox(context.Background(), sb.Id); err != nil {
					t.Fatal(err)
				}
			}
			// The checker is left out: the runtime's own SIGKILL of the
			// sandbox's container would read as the agent's (sigterm-first).
			if err := h.K.RunFor(30 * time.Second); err != nil {
				t.Fatal(err)
			}
			if sbs := Sandboxes(h, pod.UID); len(sbs) != 1 {
				t.Errorf("%d sandboxes of a pod whose container ran and may not run again, want its dead one only", len(sbs))
			}
			if !PodIs(h, "default", "once", corev1.PodFailed, false) {
				p, _ := APIPod(h, "default", "once")
				t.Errorf("pod %s, want Failed", p.Status.Phase)
			}
		})
	}
}

// TestEphemeralContainerEventsNameIt: the events about a debug container
// (Pulled, Created, Started) point at it as upstream's references do,
// with the field path spec.ephemeralContainers{name}. Written for a
// mutant of node/podutil that survived the scenario suite (an empty field
// path for ephemeral containers: docs/mutation.md).
func TestEphemeralContainerEventsNameIt(t *testing.T) {
	h := start(t, 2805)
	mustCreate(t, h, NewPod("debugged", h.NodeName))
	runUntil(t, h, "debugged Running", time.Minute, func() bool { return PodIs(h, "default", "debugged", corev1.PodRunning, true) })
	p, _ := APIPod(h, "default", "debugged")
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
	}}}
	if _, err := h.API.User().UpdateEphemeralContainers(p); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range h.API.User().Events() {
		t.Logf("%s %s %s %q", e.Object.Kind, e.Object.FieldPath, e.Reason, e.Message)
		if e.Object.Kind == "Pod" && e.Object.Name == "debugged" && strings.Contains(e.Object.FieldPath, "{debugger}") {
			seen[e.Reason] = e.Object.FieldPath
		}
	}
	for _, reason := range []string{"Pulled", "Created", "Started"} {
		if _, ok := seen[reason]; !ok {
			t.Errorf("no %s event of the debug container", reason)
		}
	}
	for reason, path := range seen {
		if path != "spec.ephemeralContainers{debugger}" {
			t.Errorf("%s event of the debug container: field path %q, want spec.ephemeralContainers{debugger}", reason, path)
		}
	}
}

// TestStaticPodPreempts: a static pod is critical whatever its priority
// (upstream's IsCriticalPod: static, mirror, or priority at least
// system-critical), so on a full node it is admitted by preempting a
// BestEffort pod, as the cluster-critical pod above is. Written for a
// mutant of node/podutil that survived the scenario suite (static and
// mirror for static or mirror: docs/mutation.md).
func TestStaticPodPreempts(t *testing.T) {
	h := startEviction(t, 7)
	fillNode(t, h)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	runUntil(t, h, "the static pod's mirror Running", time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodRunning
	})
	p, _ := APIPod(h, "default", "be0")
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Preempting" {
		t.Errorf("BestEffort pod: %s %q %q, want Failed by preemption", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
}

// fillNode fills the eviction scenario's node to its pod limit with five
// Guaranteed pods and one BestEffort pod, be0, the one a critical pod
// preempts.
func fillNode(t *testing.T, h *harness.Harness) {
	t.Helper()
	for _, n := range []string{"g0", "g1", "g2", "be0", "g3", "g4"} {
		class := 2
		if strings.HasPrefix(n, "be") {
			class = 0
		}
		qosPod(t, h, n, class, 0)
		if err := h.K.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, h, "six pods running", time.Minute, func() bool { return PodIs(h, "default", "g4", corev1.PodRunning, false) })
}
