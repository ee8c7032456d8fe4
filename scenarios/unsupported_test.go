package scenarios

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// eventsAbout returns the reason and message of each event about the
// named object, in order.
func eventsAbout(h *harness.Harness, namespace, name string) []string {
	var out []string
	for _, e := range h.API.User().Events() {
		if e.Object.Namespace == namespace && e.Object.Name == name {
			out = append(out, e.Type+" "+e.Reason+": "+e.Message)
		}
	}
	return out
}

func hasEvent(events []string, prefix, field string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) && strings.Contains(e, field) {
			return true
		}
	}
	return false
}

// TestUnsupportedFieldIsNamed: a pod with a field the agent does not
// honour (a container's Windows options) runs without it, and says so: a
// Warning event and a status message name the field, and only it: the
// resize policy beside it is honoured (in-place resize), so not named.
func TestUnsupportedFieldIsNamed(t *testing.T) {
	h := start(t, 131)
	mustCreate(t, h, NewPod("probed", h.NodeName, func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	}))
	runUntil(t, h, "probed Running", time.Minute, func() bool { return PodIs(h, "default", "probed", corev1.PodRunning, true) })
	const field = "spec.containers[0].securityContext.windowsOptions"
	ev := eventsAbout(h, "default", "probed")
	if !hasEvent(ev, "Warning UnsupportedPodField: ", field) {
		t.Errorf("no Warning UnsupportedPodField event naming %s; events: %q", field, ev)
	}
	if hasEvent(ev, "Warning UnsupportedPodField: ", "resizePolicy") {
		t.Errorf("a Warning UnsupportedPodField event names the honoured resizePolicy; events: %q", ev)
	}
	p, _ := APIPod(h, "default", "probed")
	if !strings.Contains(p.Status.Message, field) || strings.Contains(p.Status.Message, "resizePolicy") {
		t.Errorf("status message %q: want it to name %s and not resizePolicy", p.Status.Message, field)
	}
}
