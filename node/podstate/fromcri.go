package podstate

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxStateFromCRI maps a CRI sandbox state; anything but READY is
// NotReady.
func SandboxStateFromCRI(s runtimeapi.PodSandboxState) SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return SandboxReady
	}
	return SandboxNotReady
}

// ContainerStateFromCRI maps a CRI container state; a value this code does
// not know is Unknown.
func ContainerStateFromCRI(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerExited
	}
	return ContainerUnknown
}

// SandboxFromCRI converts a CRI sandbox status.
func SandboxFromCRI(s *runtimeapi.PodSandboxStatus) Sandbox {
	return Sandbox{
		ID:          s.GetId(),
		State:       SandboxStateFromCRI(s.GetState()),
		CreatedAt:   TimeFromCRI(s.GetCreatedAt()),
		Attempt:     s.GetMetadata().GetAttempt(),
		IP:          s.GetNetwork().GetIp(),
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
}

// ContainerFromCRI converts the CRI status of a container that lives in
// sandbox sandboxID (a container status does not name its sandbox; the
// container list does). The name comes from the metadata, else from the
// container-name label; the restart count and spec hash come from the
// annotations the agent put on the container.
func ContainerFromCRI(s *runtimeapi.ContainerStatus, sandboxID string) Container {
	name := s.GetMetadata().GetName()
	if name == "" {
		name = s.GetLabels()[LabelContainerName]
	}
	return Container{
		ID:           s.GetId(),
		Name:         name,
		SandboxID:    sandboxID,
		State:        ContainerStateFromCRI(s.GetState()),
		CreatedAt:    TimeFromCRI(s.GetCreatedAt()),
		StartedAt:    TimeFromCRI(s.GetStartedAt()),
		FinishedAt:   TimeFromCRI(s.GetFinishedAt()),
		ExitCode:     s.GetExitCode(),
		Reason:       s.GetReason(),
		Message:      s.GetMessage(),
		Image:        s.GetImage().GetImage(),
		ImageRef:     s.GetImageRef(),
		RestartCount: RestartCountFromAnnotations(s.GetAnnotations()),
		Hash:         s.GetAnnotations()[AnnotationContainerHash],
		Resources:    ResourcesFromCRI(s.GetResources().GetLinux()),
	}
}

// ResourcesFromCRI converts the resources a runtime reports; nil stays nil.
func ResourcesFromCRI(r *runtimeapi.LinuxContainerResources) *Resources {
	if r == nil {
		return nil
	}
	return &Resources{CPUShares: r.GetCpuShares(), CPUQuota: r.GetCpuQuota(), CPUPeriod: r.GetCpuPeriod(), MemoryLimit: r.GetMemoryLimitInBytes()}
}

// TimeFromCRI converts a CRI timestamp (nanoseconds since the Unix epoch,
// 0 meaning unset) to a UTC time; 0 gives the zero time.
func TimeFromCRI(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
