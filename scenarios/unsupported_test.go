package scenarios

import (
	"context"
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

// TestUnsupportedFieldIsNamed: a pod with a resize policy (not supported
// yet) runs without it, and says so: a Warning event and a status message
// name the field.
func TestUnsupportedFieldIsNamed(t *testing.T) {
	h := start(t, 131)
	mustCreate(t, h, NewPod("probed", h.NodeName, func(p *corev1.Pod) {
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	}))
	runUntil(t, h, "probed Running", time.Minute, func() bool { return PodIs(h, "default", "probed", corev1.PodRunning, true) })
	const field = "spec.containers[0].resizePolicy"
	if ev := eventsAbout(h, "default", "probed"); !hasEvent(ev, "Warning UnsupportedPodField: ", field) {
		t.Errorf("no Warning UnsupportedPodField event naming %s; events: %q", field, ev)
	}
	if p, _ := APIPod(h, "default", "probed"); !strings.Contains(p.Status.Message, field) {
		t.Errorf("status message %q does not name %s", p.Status.Message, field)
	}
}

// TestUnenforceableSecurityFailsAdmission: a pod asking for a user
// namespace (hostUsers: false), which the agent cannot enforce yet, is not run with less protection: it
// fails admission (Failed, UnsupportedSecurityContext, the field named)
// and no sandbox or container is ever created for it. A static pod too.
func TestUnenforceableSecurityFailsAdmission(t *testing.T) {
	h := start(t, 132)
	no := false
	mustCreate(t, h, NewPod("nonroot", h.NodeName, func(p *corev1.Pod) {
		p.Spec.HostUsers = &no
	}))
	h.Files.WriteFile(manifestDir+"/etcd.yaml", []byte(`apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  hostUsers: false
  containers:
  - name: etcd
    image: busybox:latest
    imagePullPolicy: IfNotPresent
`))
	const field, staticField = "spec.hostUsers", "spec.hostUsers"
	runUntil(t, h, "nonroot Failed", time.Minute, func() bool { return PodIs(h, "default", "nonroot", corev1.PodFailed, false) })
	runUntil(t, h, "the static pod's mirror Failed", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodFailed
	})
	if err := h.K.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ns, name, field string }{{"default", "nonroot", field}, {"kube-system", "etcd-" + h.NodeName, staticField}} {
		p, _ := APIPod(h, tc.ns, tc.name)
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "UnsupportedSecurityContext" || !strings.Contains(p.Status.Message, tc.field) {
			t.Errorf("%s: phase %s reason %q message %q; want Failed, UnsupportedSecurityContext, a message naming %s",
				tc.name, p.Status.Phase, p.Status.Reason, p.Status.Message, tc.field)
		}
		if len(p.Status.ContainerStatuses) != 0 {
			t.Errorf("%s: container statuses %+v for a pod that never ran", tc.name, p.Status.ContainerStatuses)
		}
	}
	if ev := eventsAbout(h, "default", "nonroot"); !hasEvent(ev, "Warning UnsupportedSecurityContext: ", field) {
		t.Errorf("no Warning UnsupportedSecurityContext event naming %s; events: %q", field, ev)
	}
	if cs := TrueContainers(h); len(cs) != 0 {
		t.Errorf("containers were created for refused pods: %+v", cs)
	}
	if sbs, _ := h.Runtime.ListPodSandbox(context.Background(), nil); len(sbs) != 0 {
		t.Errorf("sandboxes were created for refused pods: %d", len(sbs))
	}

	// The refused pod goes away as any other when deleted.
	if err := h.API.User().DeletePodGracefully("default", "nonroot", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "nonroot deleted from the API", time.Minute, func() bool { _, ok := APIPod(h, "default", "nonroot"); return !ok })
}
