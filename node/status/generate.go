// Package status turns what the runtime holds for a pod into the pod's API
// status and keeps that status written to the apiserver.
//
// Generation is pure: Generate, Phase and Terminate read a pod, the runtime's
// view of it (podstate.PodStatus) and the previous status, and return the
// next status; they never look at a clock or the world. The Manager caches
// the newest status per pod, writes it through deps.PodAPI from a single
// writer task, never lets a terminal phase regress, and performs the final
// grace-0 delete of a pod once the agent says it is safe.
package status

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Upstream's messages for a container whose end is unknown
// (kubelet_pods.go convertToAPIContainerStatuses, status_manager.go
// TerminatePod), word for word: tools match on them.
const (
	// MessageUnknownAtTermination: the runtime no longer knows the state
	// of a container, or the pod ended with it not seen to finish.
	MessageUnknownAtTermination = "The container could not be located when the pod was terminated"
	// MessageUnknownRunning: a container that was running is gone from
	// the runtime.
	MessageUnknownRunning = "The container could not be located when the pod was deleted.  The container used to be Running"
)

// ExitCodeUnknown is the exit code reported for a container whose final
// state is unknown: a failure (SIGKILL's code), never a success, so a lost
// container can never turn a Failed pod into a Succeeded one (upstream
// kubernetes #58711).
const ExitCodeUnknown = 137

// DefaultRuntimeType is the ContainerID scheme used when NodeAddrs does not
// name the runtime.
const DefaultRuntimeType = "cri"

// Waiting is what the last sync learned that the runtime cannot tell: why a
// container is waiting (CrashLoopBackOff, ErrImagePull, ImagePullBackOff,
// CreateContainerError, CreateContainerConfigError, …).
type Waiting struct {
	Reason, Message string
}

// Probes gives the latest readiness and startup results of a container
// instance, keyed by the runtime's container ID (podstate.Container.ID). A
// nil Probes means the pod has no probes: running means ready and started.
type Probes interface {
	Ready(containerID string) bool
	Started(containerID string) bool
}

// NodeAddrs is what the node contributes to a pod's status.
type NodeAddrs struct {
	// HostIP is the node's primary IP.
	HostIP string
	// HostIPs are the node's IPs, primary first (HostIP alone when empty).
	HostIPs []string
	// RuntimeType is the ContainerID scheme ("containerd" gives
	// "containerd://<id>"); empty means DefaultRuntimeType.
	RuntimeType string
	// RecursiveReadOnlyMounts says whether the runtime's handler mounts
	// recursively read-only: it resolves each read-only mount's
	// status.volumeMounts[].recursiveReadOnly to Enabled or Disabled.
	RecursiveReadOnlyMounts bool
}

// Generate computes a pod's status from the runtime's view rs (nil: nothing
// in the runtime yet), the waiting reasons the last sync recorded, the probe
// results and the node's addresses, at time now.
//
// pod.Status is taken as the previous status: pass the pod carrying the
// status the Manager last cached (Manager.WithCachedStatus) so that
// transition times, start time and terminal phases are stable. A pod whose
// previous phase is Succeeded or Failed keeps it, and all its containers are
// reported terminated.
func Generate(pod *corev1.Pod, rs *podstate.PodStatus, waiting map[string]Waiting, probes Probes, node NodeAddrs, now time.Time) corev1.PodStatus {
	prev := &pod.Status
	g := generator{pod: pod, rs: rs, waiting: waiting, probes: probes, scheme: node.RuntimeType, rro: node.RecursiveReadOnlyMounts}
	if g.scheme == "" {
		g.scheme = DefaultRuntimeType
	}

	var s corev1.PodStatus
	s.ObservedGeneration = pod.Generation
	s.QOSClass = podspec.QOSClass(pod)

	// A container not yet created waits as ContainerCreating, or as
	// PodInitializing in a pod with init containers (init containers
	// included), as upstream reports them.
	waitDefault := podutil.ReasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		waitDefault = podutil.ReasonPodInitializing
	}
	s.InitContainerStatuses = g.statuses(pod.Spec.InitContainers, prev.InitContainerStatuses, true, waitDefault)
	s.ContainerStatuses = g.statuses(pod.Spec.Containers, prev.ContainerStatuses, false, waitDefault)
	s.EphemeralContainerStatuses = g.ephemeralStatuses(prev.EphemeralContainerStatuses)

	if podutil.IsTerminal(prev.Phase) {
		s.Phase = prev.Phase
		finalizeAll(pod, &s, prev)
	} else {
		s.Phase = Phase(pod, s.InitContainerStatuses, s.ContainerStatuses)
	}
	if s.Phase == prev.Phase {
		s.Reason, s.Message = prev.Reason, prev.Message
	}

	sandbox, hasSandbox := rs.LatestSandbox()
	s.Conditions = conditions(pod, &s, rs.SandboxChange(pod.Spec.HostNetwork), now)

	s.HostIP, s.HostIPs = prev.HostIP, slices.Clone(prev.HostIPs)
	if node.HostIP != "" {
		s.HostIP = node.HostIP
		s.HostIPs = hostIPs(node)
	}
	switch {
	case pod.Spec.HostNetwork && s.HostIP != "":
		s.PodIP = s.HostIP
		for _, ip := range s.HostIPs {
			s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip.IP})
		}
	case hasSandbox && sandbox.IP != "":
		s.PodIP = sandbox.IP
		s.PodIPs = []corev1.PodIP{{IP: sandbox.IP}}
	default:
		// Pod IPs never change once set: keep them after the sandbox is gone.
		s.PodIP, s.PodIPs = prev.PodIP, slices.Clone(prev.PodIPs)
	}

	if prev.StartTime != nil {
		st := *prev.StartTime
		s.StartTime = &st
	} else {
		s.StartTime = &metav1.Time{Time: now}
	}
	return s
}

func hostIPs(node NodeAddrs) []corev1.HostIP {
	ips := node.HostIPs
	if len(ips) == 0 {
		ips = []string{node.HostIP}
	}
	out := make([]corev1.HostIP, 0, len(ips))
	for _, ip := range ips {
		out = append(out, corev1.HostIP{IP: ip})
	}
	return out
}

// generator holds Generate's inputs while it converts container statuses.
type generator struct {
	pod     *corev1.Pod
	rs      *podstate.PodStatus
	waiting map[string]Waiting
	probes  Probes
	scheme  string
	rro     bool
}

// statuses returns one status per spec container, in spec order.
func (g *generator) statuses(specs []corev1.Container, prev []corev1.ContainerStatus, isInit bool, defaultReason string) []corev1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		cs := g.status(c, findStatus(prev, c.Name), isInit, defaultReason)
		cs.VolumeMounts = mountStatuses(c, g.rro)
		out = append(out, cs)
	}
	return out
}

// ephemeralStatuses returns one status per ephemeral container, in spec
// order: like a regular container's, never ready and with started unset
// (ephemeral containers have no probes and serve nothing; upstream's
// prober sets started and ready for init and regular containers only).
func (g *generator) ephemeralStatuses(prev []corev1.ContainerStatus) []corev1.ContainerStatus {
	specs := EphemeralSpecs(g.pod)
	out := g.statuses(specs, prev, false, podutil.ReasonContainerCreating)
	for i := range out {
		out[i].Ready, out[i].Started = false, nil
	}
	return out
}

// EphemeralSpecs returns the common part of pod's ephemeral containers as
// plain containers.
func EphemeralSpecs(pod *corev1.Pod) []corev1.Container {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return nil
	}
	out := make([]corev1.Container, 0, len(pod.Spec.EphemeralContainers))
	for _, ec := range pod.Spec.EphemeralContainers {
		out = append(out, corev1.Container(ec.EphemeralContainerCommon))
	}
	return out
}

func (g *generator) containerID(id string) string {
	if id == "" {
		return ""
	}
	return g.scheme + "://" + id
}

// status converts the newest instance of container c (or its absence).
func (g *generator) status(c *corev1.Container, old *corev1.ContainerStatus, isInit bool, defaultReason string) corev1.ContainerStatus {
	w, hasWaiting := g.waiting[c.Name]
	latest, ok := g.rs.Latest(c.Name)
	if !ok {
		return g.noInstance(c, old, isInit, w, hasWaiting, defaultReason)
	}

	cs := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        latest.Image,
		ImageID:      latest.ImageRef,
		ContainerID:  g.containerID(latest.ID),
		RestartCount: int32(latest.RestartCount),
	}
	if cs.Image == "" {
		cs.Image = c.Image
	}
	if old != nil && old.RestartCount > cs.RestartCount {
		// The restart count never goes down, even if the runtime lost the
		// instances it was counted from.
		cs.RestartCount = old.RestartCount
	}

	switch latest.State {
	case podstate.ContainerRunning:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: latest.StartedAt}}
		started := g.probes == nil || g.probes.Started(latest.ID)
		cs.Started = ptr(started)
		cs.Ready = started && (g.probes == nil || g.probes.Ready(latest.ID))
	case podstate.ContainerExited, podstate.ContainerUnknown:
		term := g.terminated(latest)
		if hasWaiting && podutil.ShouldRestart(g.pod, c, isInit, term.ExitCode) {
			// Waiting to be restarted (back-off, image pull, …): the instance
			// that just finished is the last termination.
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			cs.LastTerminationState.Terminated = term
		} else {
			cs.State.Terminated = term
		}
	default: // Created: made but not started yet.
		reason, msg := defaultReason, ""
		if hasWaiting {
			reason, msg = w.Reason, w.Message
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
	}
	if cs.Started == nil {
		cs.Started = ptr(false)
	}
	if isInit && !podutil.IsSidecar(c) {
		// A completed init container counts as ready.
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	}
	if cs.LastTerminationState.Terminated == nil {
		cs.LastTerminationState.Terminated = g.lastTermination(c.Name, cs.ContainerID, old)
	}
	return cs
}

// noInstance is the status of a container the runtime holds no instance of:
// not created yet, or removed after it ran.
func (g *generator) noInstance(c *corev1.Container, old *corev1.ContainerStatus, isInit bool, w Waiting, hasWaiting bool, defaultReason string) corev1.ContainerStatus {
	if old != nil && old.State.Terminated != nil {
		// It finished and was removed since: what it finished with stays
		// true, unless the sync says it is waiting to run again.
		cs := *old.DeepCopy()
		cs.Ready = isInit && !podutil.IsSidecar(c) && old.State.Terminated.ExitCode == 0
		cs.Started = ptr(false)
		if hasWaiting && podutil.ShouldRestart(g.pod, c, isInit, old.State.Terminated.ExitCode) {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		}
		return cs
	}
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr(false)}
	reason, msg := defaultReason, ""
	if hasWaiting {
		reason, msg = w.Reason, w.Message
	}
	cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
	if old != nil {
		cs.RestartCount = old.RestartCount
		if t := old.LastTerminationState.Terminated; t != nil {
			cs.LastTerminationState.Terminated = t.DeepCopy()
		}
		if old.State.Running != nil && cs.LastTerminationState.Terminated == nil {
			// It was running and vanished: it terminated, how is unknown.
			// Without this it would look never started (Pending) or, worse,
			// count as a success.
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				ExitCode:    ExitCodeUnknown,
				Reason:      podutil.ReasonContainerStatusUnknown,
				Message:     MessageUnknownRunning,
				StartedAt:   old.State.Running.StartedAt,
				ContainerID: old.ContainerID,
			}
		}
	}
	return cs
}

// terminated converts a finished (or unknown) instance.
func (g *generator) terminated(c podstate.Container) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      c.Reason,
		Message:     c.Message,
		StartedAt:   metav1.Time{Time: c.StartedAt},
		FinishedAt:  metav1.Time{Time: c.FinishedAt},
		ContainerID: g.containerID(c.ID),
	}
	if c.State == podstate.ContainerUnknown {
		t.ExitCode = ExitCodeUnknown
		t.Reason = podutil.ReasonContainerStatusUnknown
		t.Message = MessageUnknownAtTermination
		return t
	}
	if t.Reason == "" {
		t.Reason = podutil.ReasonCompleted
		if t.ExitCode != 0 {
			t.Reason = podutil.ReasonError
		}
	}
	return t
}

// lastTermination finds how the instance before the current one (whose
// ContainerID is currentID) ended: from the runtime if it still holds it,
// else from the previous status.
func (g *generator) lastTermination(name, currentID string, old *corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if p, ok := g.rs.Previous(name); ok {
		if p.State == podstate.ContainerExited || p.State == podstate.ContainerUnknown {
			return g.terminated(p)
		}
		return nil
	}
	if old == nil {
		return nil
	}
	for _, t := range []*corev1.ContainerStateTerminated{old.State.Terminated, old.LastTerminationState.Terminated} {
		if t != nil && t.ContainerID != "" && t.ContainerID != currentID {
			return t.DeepCopy()
		}
	}
	return nil
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
