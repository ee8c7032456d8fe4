package status

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func mt(s int) metav1.Time { return metav1.Time{Time: at(s)} }

var node = NodeAddrs{HostIP: "10.0.0.1", HostIPs: []string{"10.0.0.1", "fd00::1"}, RuntimeType: "containerd"}

// newPod returns a pod with regular containers named names.
func newPod(policy corev1.RestartPolicy, names ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("uid-web"), Generation: 1},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "img-" + n})
	}
	return p
}

func withInit(p *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "img-" + n})
	}
	return p
}

// world builds the runtime's view: a ready sandbox (unless sandbox is
// false) and the given container instances.
func world(sandbox bool, cs ...podstate.Container) *podstate.PodStatus {
	s := &podstate.PodStatus{UID: "uid-web", Name: "web", Namespace: "ns", Containers: cs}
	if sandbox {
		s.Sandboxes = []podstate.Sandbox{{ID: "sb1", State: podstate.SandboxReady, CreatedAt: at(0), IP: "10.1.0.5"}}
	}
	s.Sort()
	return s
}

func running(name, id string, restart, started int) podstate.Container {
	return podstate.Container{
		ID: id, Name: name, SandboxID: "sb1", State: podstate.ContainerRunning,
		CreatedAt: at(started), StartedAt: at(started), Image: "img-" + name, ImageRef: "sha256:" + name,
		RestartCount: restart,
	}
}

func exited(name, id string, restart, started, finished int, code int32, reason string) podstate.Container {
	c := running(name, id, restart, started)
	c.State, c.FinishedAt, c.ExitCode, c.Reason = podstate.ContainerExited, at(finished), code, reason
	return c
}

func unknown(name, id string, restart, started int) podstate.Container {
	c := running(name, id, restart, started)
	c.State = podstate.ContainerUnknown
	return c
}

func created(name, id string, restart, createdAt int) podstate.Container {
	c := running(name, id, restart, createdAt)
	c.State, c.StartedAt = podstate.ContainerCreated, time.Time{}
	return c
}

// probes is a fake Probes: the IDs listed are ready / started.
type probes struct{ ready, started map[string]bool }

func (p probes) Ready(id string) bool   { return p.ready[id] }
func (p probes) Started(id string) bool { return p.started[id] }

// stateOf summarises a container status as "running", "terminated:<code>:<reason>"
// or "waiting:<reason>", with "/last:<code>:<reason>" when a last
// termination is recorded.
func stateOf(cs corev1.ContainerStatus) string {
	s := "none"
	switch st := cs.State; {
	case st.Running != nil:
		s = "running"
	case st.Terminated != nil:
		s = "terminated:" + itoa(st.Terminated.ExitCode) + ":" + st.Terminated.Reason
	case st.Waiting != nil:
		s = "waiting:" + st.Waiting.Reason
	}
	if t := cs.LastTerminationState.Terminated; t != nil {
		s += "/last:" + itoa(t.ExitCode) + ":" + t.Reason
	}
	return s
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// states summarises a list of statuses.
func states(list []corev1.ContainerStatus) []string {
	var out []string
	for _, cs := range list {
		out = append(out, cs.Name+"="+stateOf(cs))
	}
	return out
}

func condStatus(s corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}
