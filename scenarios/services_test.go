package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// putService creates or replaces a ClusterIP service of one TCP port.
func putService(h *harness.Harness, namespace, name, ip string, port int32) {
	h.API.User().PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}}})
}

// serviceRequests is the agent's requests about services so far.
func serviceRequests(h *harness.Harness) map[apiserver.Request]int {
	out := map[apiserver.Request]int{}
	for r, n := range h.API.Requests() {
		if r.Resource == "services" {
			out[r] = n
		}
	}
	return out
}

var serviceKeys = []string{"KUBERNETES_SERVICE_HOST", "WEB_SERVICE_HOST", "API_SERVICE_HOST", "API_PORT_9090_TCP_PORT"}

// TestServiceEnvFromTheWatch: containers get the variables of the
// services created before the agent started and of those created after
// (through the watch), and a deleted service is gone from the next pod's
// environment, all from one list and one watch of services for the
// node's lifetime: no service request per pod. Before, each container
// creation listed its namespace's services.
func TestServiceEnvFromTheWatch(t *testing.T) {
	h := harness.New(harness.Config{Seed: 181})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	putService(h, "default", "kubernetes", "10.96.0.1", 443)
	putService(h, "default", "web", "10.96.3.3", 8080)
	h.StartAgent()
	runFor(t, h, time.Second)
	putService(h, "default", "api", "10.96.5.5", 9090)
	runFor(t, h, time.Second)
	first := mustCreate(t, h, NewPod("first", h.NodeName))
	runUntil(t, h, "first Running", time.Minute, func() bool { return PodIs(h, "default", "first", corev1.PodRunning, true) })
	want := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "WEB_SERVICE_HOST": "10.96.3.3",
		"API_SERVICE_HOST": "10.96.5.5", "API_PORT_9090_TCP_PORT": "9090"}
	if d := cmp.Diff(want, pickKeys(envOf(t, h, first.UID), serviceKeys...)); d != "" {
		t.Errorf("services created before and after the agent started (-want +got):\n%s", d)
	}
	h.API.User().DeleteService("default", "web")
	putService(h, "default", "api", "10.96.5.6", 9090)
	runFor(t, h, time.Second)
	second := mustCreate(t, h, NewPod("second", h.NodeName))
	runUntil(t, h, "second Running", time.Minute, func() bool { return PodIs(h, "default", "second", corev1.PodRunning, true) })
	want = map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "API_SERVICE_HOST": "10.96.5.6", "API_PORT_9090_TCP_PORT": "9090"}
	if d := cmp.Diff(want, pickKeys(envOf(t, h, second.UID), serviceKeys...)); d != "" {
		t.Errorf("after web was deleted and api changed (-want +got):\n%s", d)
	}
	wantReqs := map[apiserver.Request]int{{Verb: apiserver.VerbList, Resource: "services"}: 1, {Verb: apiserver.VerbWatch, Resource: "services"}: 1}
	if d := cmp.Diff(wantReqs, serviceRequests(h)); d != "" {
		t.Errorf("requests about services for two pods (-want +got):\n%s", d)
	}
	if n := h.API.User().OpenServiceWatches(); n != 1 {
		t.Errorf("%d service watches open, want 1", n)
	}
	runChecked(t, h, c, 10*time.Second)
}

// TestServiceEnvAcrossAnOutage: a crashing container restarted while the
// apiserver is down gets the services as last watched (one created just
// before the outage included); a service deleted during the outage is
// gone from the instances started once the agent has listed again.
func TestServiceEnvAcrossAnOutage(t *testing.T) {
	h := start(t, 182)
	putService(h, "default", "kubernetes", "10.96.0.1", 443)
	pod := mustCreate(t, h, NewPod("crashy", h.NodeName, Exits("app", 5*time.Second, 1)))
	runUntil(t, h, "crashy's first instance", time.Minute, func() bool { return len(PodContainers(h, pod.UID)) >= 1 })
	putService(h, "default", "web", "10.96.3.3", 8080)
	runFor(t, h, time.Second)
	h.API.Down(true)
	restartsAfter := func(n int) func() bool {
		return func() bool {
			cs := PodContainers(h, pod.UID)
			return len(cs) > 0 && cs[len(cs)-1].Attempt >= uint32(n)
		}
	}
	runUntil(t, h, "two restarts with the apiserver down", 2*time.Minute, restartsAfter(2))
	want := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "WEB_SERVICE_HOST": "10.96.3.3"}
	if d := cmp.Diff(want, pickKeys(envOf(t, h, pod.UID), serviceKeys...)); d != "" {
		t.Errorf("instance started during the outage (-want +got):\n%s", d)
	}
	h.API.User().DeleteService("default", "web")
	cs := PodContainers(h, pod.UID)
	attempt := int(cs[len(cs)-1].Attempt)
	h.API.Down(false)
	runFor(t, h, time.Minute) // the relist under back-off (at most 30 s)
	runUntil(t, h, "a restart after the apiserver came back", 10*time.Minute, restartsAfter(attempt+2))
	want = map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}
	if d := cmp.Diff(want, pickKeys(envOf(t, h, pod.UID), serviceKeys...)); d != "" {
		t.Errorf("instance started after the outage (-want +got):\n%s", d)
	}
}

// TestStaticPodStartsBeforeServicesAreKnown: an agent that starts while
// the apiserver is unreachable runs its static pods without service
// variables (the apiserver may be one of them), as upstream does; once
// the apiserver answers, API pods get them.
func TestStaticPodStartsBeforeServicesAreKnown(t *testing.T) {
	h := harness.New(harness.Config{Seed: 183})
	t.Cleanup(h.Close)
	putService(h, "default", "kubernetes", "10.96.0.1", 443)
	h.API.Down(true)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	h.StartAgent()
	runUntil(t, h, "the static pod's container", time.Minute, func() bool { return len(Containers(h)) == 1 })
	static := Containers(h)[0]
	if got := pickKeys(envOf(t, h, static.PodUID), serviceKeys...); len(got) != 0 {
		t.Errorf("static pod started before the services were listed has service variables %v", got)
	}
	h.API.Down(false)
	pod := mustCreate(t, h, NewPod("web", h.NodeName))
	runUntil(t, h, "web Running", 2*time.Minute, func() bool { return PodIs(h, "default", "web", corev1.PodRunning, true) })
	if d := cmp.Diff(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, pickKeys(envOf(t, h, pod.UID), serviceKeys...)); d != "" {
		t.Errorf("API pod after the outage (-want +got):\n%s", d)
	}
}
