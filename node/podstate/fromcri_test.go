package podstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxFromCRI(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 1, 5, time.UTC)
	tests := []struct {
		name string
		in   *runtimeapi.PodSandboxStatus
		want Sandbox
	}{{
		name: "ready pod network",
		in: &runtimeapi.PodSandboxStatus{
			Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: at.UnixNano(),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Attempt: 2},
			Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.7"},
		},
		want: Sandbox{ID: "sb1", State: SandboxReady, CreatedAt: at, Attempt: 2, IP: "10.0.0.7"},
	}, {
		name: "not ready host network",
		in: &runtimeapi.PodSandboxStatus{
			Id: "sb2", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
			Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
				Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
		},
		want: Sandbox{ID: "sb2", State: SandboxNotReady, HostNetwork: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SandboxFromCRI(tc.in)); diff != "" {
				t.Errorf("SandboxFromCRI (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerFromCRI(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	started := created.Add(time.Second)
	finished := started.Add(time.Minute)
	tests := []struct {
		name string
		in   *runtimeapi.ContainerStatus
		want Container
	}{{
		name: "exited with annotations",
		in: &runtimeapi.ContainerStatus{
			Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 9},
			State:     runtimeapi.ContainerState_CONTAINER_EXITED,
			CreatedAt: created.UnixNano(), StartedAt: started.UnixNano(), FinishedAt: finished.UnixNano(),
			ExitCode: 137, Reason: "OOMKilled", Message: "oom",
			Image: &runtimeapi.ImageSpec{Image: "busybox:1"}, ImageRef: "sha256:abc",
			Annotations: ContainerAnnotations("h1", 3),
		},
		want: Container{
			ID: "c1", Name: "app", SandboxID: "sb", State: ContainerExited,
			CreatedAt: created, StartedAt: started, FinishedAt: finished,
			ExitCode: 137, Reason: "OOMKilled", Message: "oom", Image: "busybox:1", ImageRef: "sha256:abc",
			RestartCount: 3, Hash: "h1",
		},
	}, {
		name: "name from label, running, no annotations",
		in: &runtimeapi.ContainerStatus{
			Id: "c2", State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: created.UnixNano(),
			Labels: ContainerLabels(PodRef{UID: "u"}, "side"),
		},
		want: Container{ID: "c2", Name: "side", SandboxID: "sb", State: ContainerRunning, CreatedAt: created},
	}, {
		name: "created and unknown states",
		in:   &runtimeapi.ContainerStatus{Id: "c3", State: runtimeapi.ContainerState_CONTAINER_UNKNOWN},
		want: Container{ID: "c3", SandboxID: "sb", State: ContainerUnknown},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ContainerFromCRI(tc.in, "sb")); diff != "" {
				t.Errorf("ContainerFromCRI (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatesFromCRI(t *testing.T) {
	containers := map[runtimeapi.ContainerState]ContainerState{
		runtimeapi.ContainerState_CONTAINER_CREATED: ContainerCreated,
		runtimeapi.ContainerState_CONTAINER_RUNNING: ContainerRunning,
		runtimeapi.ContainerState_CONTAINER_EXITED:  ContainerExited,
		runtimeapi.ContainerState_CONTAINER_UNKNOWN: ContainerUnknown,
		runtimeapi.ContainerState(42):               ContainerUnknown,
	}
	for in, want := range containers {
		if got := ContainerStateFromCRI(in); got != want {
			t.Errorf("ContainerStateFromCRI(%v) = %v, want %v", in, got, want)
		}
	}
	if got := SandboxStateFromCRI(runtimeapi.PodSandboxState_SANDBOX_READY); got != SandboxReady {
		t.Errorf("ready sandbox: got %v", got)
	}
	if got := SandboxStateFromCRI(runtimeapi.PodSandboxState(7)); got != SandboxNotReady {
		t.Errorf("unknown sandbox state: got %v", got)
	}
	if !TimeFromCRI(0).IsZero() {
		t.Errorf("TimeFromCRI(0) is not the zero time")
	}
}
