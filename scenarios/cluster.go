package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Create creates pod in the simulated apiserver (as a user would) and
// returns the stored object.
func Create(h *harness.Harness, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := h.API.User().CreatePod(pod)
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// APIPod reads a pod from the simulated apiserver; ok is false once it is
// gone.
func APIPod(h *harness.Harness, namespace, name string) (*corev1.Pod, bool) {
	p, err := h.API.User().GetPod(namespace, name)
	if apierrors.IsNotFound(err) || err != nil {
		return nil, false
	}
	return p, true
}

// PodIs reports whether the API pod has the phase and, when ready is true,
// the Ready condition.
func PodIs(h *harness.Harness, namespace, name string, phase corev1.PodPhase, ready bool) bool {
	p, ok := APIPod(h, namespace, name)
	if !ok || p.Status.Phase != phase {
		return false
	}
	return !ready || IsReady(p)
}

// IsReady reports the pod's Ready condition.
func IsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RuntimeContainer is one container as the fake runtime holds it.
type RuntimeContainer struct {
	ID      string
	PodUID  types.UID
	Name    string
	Attempt uint32
	State   runtimeapi.ContainerState
}

// Containers lists the runtime's containers (all pods) as its List call
// answers (stale when the stale-list fault is on), sorted by pod UID, name
// and attempt.
func Containers(h *harness.Harness) []RuntimeContainer {
	cs, err := h.Runtime.ListContainers(context.Background(), nil)
	if err != nil {
		panic(fmt.Sprintf("list containers: %v", err))
	}
	return toRuntimeContainers(cs)
}

// TrueContainers lists the runtime's containers as they are now, whatever
// faults the runtime's List calls are under.
func TrueContainers(h *harness.Harness) []RuntimeContainer {
	return toRuntimeContainers(h.Runtime.TrueContainers())
}

func toRuntimeContainers(cs []*runtimeapi.Container) []RuntimeContainer {
	out := make([]RuntimeContainer, 0, len(cs))
	for _, c := range cs {
		out = append(out, RuntimeContainer{
			ID: c.Id, PodUID: types.UID(c.Labels[podstate.LabelPodUID]), Name: c.Metadata.GetName(),
			Attempt: c.Metadata.GetAttempt(), State: c.State,
		})
	}
	slices.SortFunc(out, func(a, b RuntimeContainer) int {
		if c := strings.Compare(string(a.PodUID), string(b.PodUID)); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Attempt) - int(b.Attempt)
	})
	return out
}

// Sandboxes lists the runtime's sandboxes of a pod.
func Sandboxes(h *harness.Harness, uid types.UID) []*runtimeapi.PodSandbox {
	sbs, err := h.Runtime.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podstate.LabelPodUID: string(uid)},
	})
	if err != nil {
		panic(fmt.Sprintf("list sandboxes: %v", err))
	}
	return sbs
}

// PodContainers returns the runtime containers of one pod.
func PodContainers(h *harness.Harness, uid types.UID) []RuntimeContainer {
	var out []RuntimeContainer
	for _, c := range Containers(h) {
		if c.PodUID == uid {
			out = append(out, c)
		}
	}
	return out
}
