// Package podstate is the runtime's view of a pod, rebuilt from CRI
// sandboxes and containers and their labels alone: what the PLEG caches,
// what runtime sync and status generation read. Nothing here is kept in the
// agent's memory that the runtime could not give back after a restart.
package podstate

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// SandboxState is a pod sandbox's CRI state.
type SandboxState string

// Sandbox states.
const (
	SandboxReady    SandboxState = "Ready"
	SandboxNotReady SandboxState = "NotReady"
)

// ContainerState is a container's CRI state.
type ContainerState string

// Container states, in the CRI's lifecycle order.
const (
	ContainerCreated ContainerState = "Created"
	ContainerRunning ContainerState = "Running"
	ContainerExited  ContainerState = "Exited"
	ContainerUnknown ContainerState = "Unknown"
)

// Sandbox is one pod sandbox instance.
type Sandbox struct {
	ID        string
	State     SandboxState
	CreatedAt time.Time
	// Attempt counts the sandboxes created for this pod before this one.
	Attempt uint32
	// IP is the pod IP; empty for host-network pods.
	IP string
	// HostNetwork reports whether the sandbox shares the node's network.
	HostNetwork bool
}

// Container is one container instance (a container name may have several:
// the running one and exited ones kept for logs and status).
type Container struct {
	ID         string
	Name       string
	SandboxID  string
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	Reason     string
	Message    string
	Image      string
	ImageRef   string
	// RestartCount is the container's restart attempt, from its labels.
	RestartCount int
	// Hash is the hash of the container spec it was created from.
	Hash string
	// Resources are the cgroup resources the runtime reports the instance
	// runs with (nil: the runtime reports none).
	Resources *Resources
}

// Resources are the resizable cgroup settings of a container instance as
// the runtime reports them (CRI LinuxContainerResources).
type Resources struct {
	CPUShares   int64
	CPUQuota    int64
	CPUPeriod   int64
	MemoryLimit int64
}

// PodStatus is everything the runtime holds for one pod UID.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes, newest first.
	Sandboxes []Sandbox
	// Containers, all instances, newest first.
	Containers []Container
	// Timestamp is when the runtime was read for this status (the PLEG
	// cache's "newer than" rule compares it with a worker's last action).
	Timestamp time.Time
}

// Sort orders sandboxes and containers newest first, ties by ID, so a
// status built from any list order is the same.
func (s *PodStatus) Sort() {
	slices.SortStableFunc(s.Sandboxes, func(a, b Sandbox) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if a.Attempt != b.Attempt {
			return int(b.Attempt) - int(a.Attempt)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	slices.SortStableFunc(s.Containers, func(a, b Container) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if a.RestartCount != b.RestartCount {
			return b.RestartCount - a.RestartCount
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// LatestSandbox returns the newest sandbox, if any.
func (s *PodStatus) LatestSandbox() (Sandbox, bool) {
	if s == nil || len(s.Sandboxes) == 0 {
		return Sandbox{}, false
	}
	return s.Sandboxes[0], true
}

// Latest returns the newest instance of the named container, if any.
func (s *PodStatus) Latest(name string) (Container, bool) {
	if s == nil {
		return Container{}, false
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return Container{}, false
}

// Instance returns the container instance with the given ID, if any.
func (s *PodStatus) Instance(id string) (Container, bool) {
	if s == nil {
		return Container{}, false
	}
	for _, c := range s.Containers {
		if c.ID == id {
			return c, true
		}
	}
	return Container{}, false
}

// Previous returns the instance of the named container before the newest.
func (s *PodStatus) Previous(name string) (Container, bool) {
	if s == nil {
		return Container{}, false
	}
	seen := false
	for _, c := range s.Containers {
		if c.Name != name {
			continue
		}
		if seen {
			return c, true
		}
		seen = true
	}
	return Container{}, false
}

// Running returns the running container instances.
func (s *PodStatus) Running() []Container {
	if s == nil {
		return nil
	}
	var out []Container
	for _, c := range s.Containers {
		if c.State == ContainerRunning {
			out = append(out, c)
		}
	}
	return out
}
