package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// runtimeClass names the pod's RuntimeClass.
func runtimeClass(name string) PodOption {
	return func(p *corev1.Pod) { p.Spec.RuntimeClassName = &name }
}

// TestRuntimeClass: runtimeClassName is resolved through the RuntimeClass
// API into the sandbox's CRI handler. A pod naming a class that does not
// exist, or one whose handler the runtime lacks, gets no sandbox: it stays
// Pending (ContainerCreating) with a FailedCreatePodSandBox event saying
// why, and starts once its class appears. Before runtime classes were
// supported such pods failed admission.
func TestRuntimeClass(t *testing.T) {
	h := harness.New(harness.Config{
		Seed:    138,
		Replay:  func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Runtime: fakecri.Config{RuntimeHandlers: []string{"runc", "kata"}},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	u := h.API.User()
	u.PutRuntimeClass(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "kata"})
	u.PutRuntimeClass(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	kata := mustCreate(t, h, NewPod("kata", h.NodeName, runtimeClass("sandboxed")))
	plain := mustCreate(t, h, NewPod("plain", h.NodeName))
	mustCreate(t, h, NewPod("unknown-class", h.NodeName, runtimeClass("later")))
	mustCreate(t, h, NewPod("unknown-handler", h.NodeName, runtimeClass("gvisor")))

	runUntil(t, h, "kata and plain Running", time.Minute, func() bool {
		return PodIs(h, "default", "kata", corev1.PodRunning, true) && PodIs(h, "default", "plain", corev1.PodRunning, true)
	})
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	for pod, handler := range map[*corev1.Pod]string{kata: "kata", plain: ""} {
		if got := handlerOf(t, h, pod); got != handler {
			t.Errorf("%s: sandbox handler %q, want %q", pod.Name, got, handler)
		}
	}
	for name, why := range map[string]string{
		"unknown-class":   `runtimeClass "later": runtimeclasses.node.k8s.io "later" not found`,
		"unknown-handler": `no runtime for "runsc" is configured`,
	} {
		if r, _ := waitingReason(h, name); r != "ContainerCreating" {
			t.Errorf("%s: waiting reason %q, want ContainerCreating", name, r)
		}
		if ev := eventsAbout(h, "default", name); !hasEvent(ev, "Warning FailedCreatePodSandBox: ", why) {
			t.Errorf("%s: no FailedCreatePodSandBox event saying %q; events: %q", name, why, ev)
		}
		if p, _ := APIPod(h, "default", name); p.Status.Phase != corev1.PodPending || len(Sandboxes(h, p.UID)) != 0 {
			t.Errorf("%s: phase %s with %d sandboxes; want Pending without one", name, p.Status.Phase, len(Sandboxes(h, p.UID)))
		}
	}

	u.PutRuntimeClass(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Handler: "runc"})
	runUntil(t, h, "unknown-class Running once its class exists", time.Minute, func() bool {
		return PodIs(h, "default", "unknown-class", corev1.PodRunning, true)
	})
	p, _ := APIPod(h, "default", "unknown-class")
	if got := handlerOf(t, h, p); got != "runc" {
		t.Errorf("unknown-class: sandbox handler %q, want runc", got)
	}
}

// handlerOf returns the runtime handler of a pod's only sandbox.
func handlerOf(t *testing.T, h *harness.Harness, pod *corev1.Pod) string {
	t.Helper()
	sbs := Sandboxes(h, pod.UID)
	if len(sbs) != 1 {
		t.Fatalf("%s: %d sandboxes, want 1", pod.Name, len(sbs))
	}
	return strings.TrimSpace(sbs[0].RuntimeHandler)
}
