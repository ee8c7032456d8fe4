package runtimesync

import (
	"fmt"
	"strings"
)

// Op is one call a Plan asks its Executor to make: a CRI call with its
// arguments, with the local work that belongs to it (a config built, a
// log link made, a hook run). The types below are the whole set; the
// configs built by SandboxConfigOp and ContainerConfigOp are kept by the
// executor for the calls that follow them in the same sync.
type Op interface {
	fmt.Stringer
	isOp()
}

// KillPodOp stops every container of the pod, then its ready sandboxes
// (Executor.KillPod).
type KillPodOp struct {
	Grace int64
}

// KillContainerOp stops one container instance: its preStop hook, then
// CRI StopContainer with what is left of Grace.
type KillContainerOp struct {
	ID, Name string
	// Reason is why (for the log).
	Reason string
	Grace  int64
	// PodIP is the default host of an HTTP preStop hook.
	PodIP string
}

// RemoveContainerOp removes a stopped instance (CRI RemoveContainer) and
// its log file and link.
type RemoveContainerOp struct {
	ID, Name     string
	RestartCount int
}

// SandboxConfigOp builds the pod's sandbox config for attempt Attempt:
// a new sandbox's, or the running one's for its new containers.
type SandboxConfigOp struct {
	Attempt uint32
}

// LogDirectoryOp creates the pod's log directory.
type LogDirectoryOp struct {
	Path string
}

// RunPodSandboxOp resolves the pod's runtime handler and user namespace
// (checked against the runtime's Status) and runs its sandbox (CRI
// RunPodSandbox); the outcome's ID is the new sandbox.
type RunPodSandboxOp struct {
	Attempt uint32
	// Reason is why a new sandbox is needed (for the log).
	Reason string
}

// SandboxStatusOp reads sandbox ID's IP (CRI PodSandboxStatus).
type SandboxStatusOp struct {
	ID string
}

// UserNamespaceOp puts the pod's user namespace into the sandbox config
// (the running sandbox's, for its new containers).
type UserNamespaceOp struct{}

// EnsureImageOp makes Image present as the container's pull policy asks
// (node/images).
type EnsureImageOp struct {
	Container ContainerStart
	Image     string
}

// ContainerConfigOp builds the container's config: its environment
// (configMaps, secrets, services), mounts, devices, cpuset, and for an
// ephemeral container the process namespace of TargetID.
type ContainerConfigOp struct {
	Container ContainerStart
	PodIPs    []string
	TargetID  string
}

// CreateContainerOp creates the container in sandbox SandboxID (CRI
// CreateContainer) and links its log; the outcome's ID is the instance.
type CreateContainerOp struct {
	Container ContainerStart
	SandboxID string
}

// StartContainerOp starts instance ID (CRI StartContainer).
type StartContainerOp struct {
	Container ContainerStart
	ID        string
}

// PostStartOp runs the container's postStart hook on instance ID.
type PostStartOp struct {
	Container ContainerStart
	ID        string
	PodIP     string
}

func (KillPodOp) isOp()         {}
func (KillContainerOp) isOp()   {}
func (RemoveContainerOp) isOp() {}
func (SandboxConfigOp) isOp()   {}
func (LogDirectoryOp) isOp()    {}
func (RunPodSandboxOp) isOp()   {}
func (SandboxStatusOp) isOp()   {}
func (UserNamespaceOp) isOp()   {}
func (EnsureImageOp) isOp()     {}
func (ContainerConfigOp) isOp() {}
func (CreateContainerOp) isOp() {}
func (StartContainerOp) isOp()  {}
func (PostStartOp) isOp()       {}

func (o KillPodOp) String() string { return fmt.Sprintf("KillPod grace=%d", o.Grace) }
func (o KillContainerOp) String() string {
	return fmt.Sprintf("KillContainer %s %s grace=%d ip=%s reason=%q", o.Name, o.ID, o.Grace, o.PodIP, o.Reason)
}
func (o RemoveContainerOp) String() string {
	return fmt.Sprintf("RemoveContainer %s %s attempt=%d", o.Name, o.ID, o.RestartCount)
}
func (o SandboxConfigOp) String() string { return fmt.Sprintf("SandboxConfig attempt=%d", o.Attempt) }
func (o LogDirectoryOp) String() string  { return "LogDirectory " + o.Path }
func (o RunPodSandboxOp) String() string {
	return fmt.Sprintf("RunPodSandbox attempt=%d reason=%q", o.Attempt, o.Reason)
}
func (o SandboxStatusOp) String() string { return "SandboxStatus " + o.ID }
func (UserNamespaceOp) String() string   { return "UserNamespace" }
func (o EnsureImageOp) String() string   { return fmt.Sprintf("EnsureImage %s %s", o.Container, o.Image) }
func (o ContainerConfigOp) String() string {
	s := fmt.Sprintf("ContainerConfig %s ips=[%s]", o.Container, strings.Join(o.PodIPs, ","))
	if o.TargetID != "" {
		s += " target=" + o.TargetID
	}
	return s
}
func (o CreateContainerOp) String() string {
	return fmt.Sprintf("CreateContainer %s in %s", o.Container, o.SandboxID)
}
func (o StartContainerOp) String() string {
	return fmt.Sprintf("StartContainer %s %s", o.Container, o.ID)
}
func (o PostStartOp) String() string {
	return fmt.Sprintf("PostStart %s %s ip=%s", o.Container, o.ID, o.PodIP)
}

// String names the container to start: "init/i1#0", "app#2",
// "ephemeral/debug#0" (# the attempt).
func (s ContainerStart) String() string {
	kind := ""
	switch {
	case s.Ephemeral:
		kind = "ephemeral/"
	case s.Init:
		kind = "init/"
	}
	return fmt.Sprintf("%s%s#%d", kind, s.Name, s.RestartCount)
}
