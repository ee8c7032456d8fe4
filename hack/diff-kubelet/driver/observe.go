package main

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// PodState is what a user sees of a pod's status at one moment, normalised:
// every field an agent writes, without timestamps (the recording keeps
// the time it was seen) or IDs.
type PodState struct {
	Phase      string           `json:"phase,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	Message    string           `json:"message,omitempty"`
	QOSClass   string           `json:"qosClass,omitempty"`
	HostIP     string           `json:"hostIP,omitempty"`
	PodIP      string           `json:"podIP,omitempty"`
	Resize     string           `json:"resize,omitempty"`
	ObservedGe int64            `json:"observedGeneration,omitempty"`
	Conditions []PodCondition   `json:"conditions,omitempty"`
	Init       []ContainerState `json:"initContainers,omitempty"`
	Containers []ContainerState `json:"containers,omitempty"`
	Ephemeral  []ContainerState `json:"ephemeralContainers,omitempty"`
	// Deleting: the object has a deletionTimestamp (its grace in seconds).
	Deleting string `json:"deleting,omitempty"`
	// Gone: the object was deleted from the API.
	Gone bool `json:"gone,omitempty"`
}

// PodCondition is a pod condition without its times.
type PodCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerState is one container's status, normalised.
type ContainerState struct {
	Name         string   `json:"name"`
	State        string   `json:"state"`
	LastState    string   `json:"lastState,omitempty"`
	Ready        bool     `json:"ready"`
	Started      string   `json:"started,omitempty"`
	RestartCount int32    `json:"restartCount"`
	Image        string   `json:"image,omitempty"`
	ImageID      string   `json:"imageID,omitempty"`
	ContainerID  string   `json:"containerID,omitempty"`
	VolumeMounts []string `json:"volumeMounts,omitempty"`
	Resources    string   `json:"resources,omitempty"`
	Allocated    string   `json:"allocatedResources,omitempty"`
	User         string   `json:"user,omitempty"`
	StopSignal   string   `json:"stopSignal,omitempty"`
}

// observePod reads p's observable state through n.
func observePod(p *v1.Pod, n *normaliser) PodState {
	s := p.Status
	st := PodState{
		Phase:      string(s.Phase),
		Reason:     n.String(s.Reason),
		Message:    n.String(s.Message),
		QOSClass:   string(s.QOSClass),
		HostIP:     n.String(s.HostIP),
		PodIP:      n.String(s.PodIP),
		Resize:     string(s.Resize), //nolint:staticcheck // still written by agents that set it
		ObservedGe: s.ObservedGeneration,
	}
	for _, c := range s.Conditions {
		st.Conditions = append(st.Conditions, PodCondition{
			Type: string(c.Type), Status: string(c.Status), Reason: n.String(c.Reason), Message: n.String(c.Message),
		})
	}
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	st.Init = observeContainers(s.InitContainerStatuses, n)
	st.Containers = observeContainers(s.ContainerStatuses, n)
	st.Ephemeral = observeContainers(s.EphemeralContainerStatuses, n)
	if p.DeletionTimestamp != nil {
		g := "?"
		if p.DeletionGracePeriodSeconds != nil {
			g = fmt.Sprintf("%ds", *p.DeletionGracePeriodSeconds)
		}
		st.Deleting = "grace " + g
	}
	return st
}

func observeContainers(cs []v1.ContainerStatus, n *normaliser) []ContainerState {
	if len(cs) == 0 {
		return nil
	}
	out := make([]ContainerState, 0, len(cs))
	for _, c := range cs {
		o := ContainerState{
			Name:         c.Name,
			State:        describeState(c.State, n),
			LastState:    describeState(c.LastTerminationState, n),
			Ready:        c.Ready,
			RestartCount: c.RestartCount,
			Image:        normaliseImage(c.Image),
			ImageID:      n.String(c.ImageID),
			ContainerID:  n.String(c.ContainerID),
			Resources:    describeResources(c.Resources),
			Allocated:    describeList(c.AllocatedResources),
		}
		if c.Started != nil {
			o.Started = fmt.Sprint(*c.Started)
		}
		for _, m := range c.VolumeMounts {
			d := m.Name + ":" + m.MountPath
			if m.ReadOnly {
				d += ":ro"
			}
			if m.RecursiveReadOnly != nil {
				d += ":rro=" + string(*m.RecursiveReadOnly)
			}
			o.VolumeMounts = append(o.VolumeMounts, d)
		}
		if c.User != nil && c.User.Linux != nil {
			o.User = fmt.Sprintf("uid=%d gid=%d groups=%v", c.User.Linux.UID, c.User.Linux.GID, c.User.Linux.SupplementalGroups)
		}
		if c.StopSignal != nil {
			o.StopSignal = string(*c.StopSignal)
		}
		out = append(out, o)
	}
	return out
}

// describeState is one line for a container state: its kind, reason,
// message and exit code; "" for none.
func describeState(s v1.ContainerState, n *normaliser) string {
	switch {
	case s.Waiting != nil:
		return strings.TrimSpace(fmt.Sprintf("waiting %s %s", s.Waiting.Reason, quoteIf(n.String(s.Waiting.Message))))
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		t := s.Terminated
		d := fmt.Sprintf("terminated %s exit=%d", t.Reason, t.ExitCode)
		if t.Signal != 0 {
			d += fmt.Sprintf(" signal=%d", t.Signal)
		}
		if t.Message != "" {
			d += " " + quoteIf(n.String(t.Message))
		}
		if t.ContainerID != "" {
			d += " (has ID)"
		}
		return d
	}
	return ""
}

func quoteIf(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

// normaliseImage drops the docker.io/library/ prefix and :latest tag the
// runtime may add (the image the user asked for reads the same).
func normaliseImage(img string) string {
	img = strings.TrimPrefix(img, "docker.io/")
	img = strings.TrimPrefix(img, "library/")
	return strings.TrimSuffix(img, ":latest")
}

func describeResources(r *v1.ResourceRequirements) string {
	if r == nil {
		return ""
	}
	var parts []string
	if l := describeList(r.Requests); l != "" {
		parts = append(parts, "requests "+l)
	}
	if l := describeList(r.Limits); l != "" {
		parts = append(parts, "limits "+l)
	}
	if len(parts) == 0 {
		return "{}"
	}
	return strings.Join(parts, "; ")
}

func describeList(l v1.ResourceList) string {
	if len(l) == 0 {
		return ""
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		q := l[v1.ResourceName(k)]
		parts[i] = k + "=" + q.String()
	}
	return strings.Join(parts, ",")
}

// NodeState is what a user sees of a node's status, normalised.
type NodeState struct {
	Conditions  []PodCondition `json:"conditions"`
	Taints      []string       `json:"taints,omitempty"`
	Unschedul   bool           `json:"unschedulable,omitempty"`
	Addresses   []string       `json:"addresses,omitempty"`
	Capacity    string         `json:"capacity,omitempty"`
	Allocatable string         `json:"allocatable,omitempty"`
	Labels      []string       `json:"labels,omitempty"`
	Info        string         `json:"nodeInfo,omitempty"`
	Images      int            `json:"images"`
	Handlers    []string       `json:"runtimeHandlers,omitempty"`
	Features    string         `json:"features,omitempty"`
	Endpoint    string         `json:"daemonEndpoint,omitempty"`
	Gone        bool           `json:"gone,omitempty"`
}

// observeNode reads a node's observable state through n.
func observeNode(no *v1.Node, n *normaliser) NodeState {
	st := NodeState{
		Unschedul:   no.Spec.Unschedulable,
		Capacity:    describeList(no.Status.Capacity),
		Allocatable: describeList(no.Status.Allocatable),
		Images:      len(no.Status.Images),
	}
	for _, c := range no.Status.Conditions {
		st.Conditions = append(st.Conditions, PodCondition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: n.String(c.Message)})
	}
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	for _, t := range no.Spec.Taints {
		st.Taints = append(st.Taints, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	for _, a := range no.Status.Addresses {
		st.Addresses = append(st.Addresses, string(a.Type)+"="+n.String(a.Address))
	}
	for k, v := range no.Labels {
		st.Labels = append(st.Labels, k+"="+n.String(v))
	}
	sort.Strings(st.Labels)
	i := no.Status.NodeInfo
	st.Info = fmt.Sprintf("os=%s arch=%s kubelet=%s runtime=%s", i.OperatingSystem, i.Architecture, i.KubeletVersion, i.ContainerRuntimeVersion)
	for _, h := range no.Status.RuntimeHandlers {
		d := h.Name
		if h.Features != nil {
			d += fmt.Sprintf("(rro=%v userns=%v)", ptrBool(h.Features.RecursiveReadOnlyMounts), ptrBool(h.Features.UserNamespaces))
		}
		st.Handlers = append(st.Handlers, d)
	}
	if f := no.Status.Features; f != nil {
		st.Features = fmt.Sprintf("supplementalGroupsPolicy=%v", ptrBool(f.SupplementalGroupsPolicy))
	}
	if no.Status.DaemonEndpoints.KubeletEndpoint.Port != 0 {
		st.Endpoint = "port set"
	}
	return st
}

func ptrBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}
