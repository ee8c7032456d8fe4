package nodestatus

import corev1 "k8s.io/api/core/v1"

// The node's own events, with the kubelet's reasons (pkg/kubelet/events and
// nodestatus/setters.go). A condition event's message is "Node <node>
// status is now: <reason>".
const (
	EventNodeReady    = "NodeReady"
	EventNodeNotReady = "NodeNotReady"

	EventSufficientMemory   = "NodeHasSufficientMemory"
	EventInsufficientMemory = "NodeHasInsufficientMemory"
	EventNoDiskPressure     = "NodeHasNoDiskPressure"
	EventDiskPressure       = "NodeHasDiskPressure"
	EventSufficientPID      = "NodeHasSufficientPID"
	EventInsufficientPID    = "NodeHasInsufficientPID"

	// EventStarting is sent once when the agent starts, with
	// MessageStarting (the kubelet's BirthCry).
	EventStarting   = "Starting"
	MessageStarting = "Starting kubelet."
)

// pressureEvents names, per pressure condition, the event of its True and
// of its False status, in the kubelet's setter order.
var pressureEvents = []struct {
	t           corev1.NodeConditionType
	true, false string
}{
	{corev1.NodeMemoryPressure, EventInsufficientMemory, EventSufficientMemory},
	{corev1.NodeDiskPressure, EventDiskPressure, EventNoDiskPressure},
	{corev1.NodePIDPressure, EventInsufficientPID, EventSufficientPID},
}

// conditionChanges returns the events of the condition changes from
// before (nil for a node just created) to after, in the kubelet's order:
// each pressure condition that is new or changed status (the kubelet's
// setters start a missing condition as Unknown, so a new one always
// counts), then the Ready condition when it is new or changed status.
func conditionChanges(before, after *corev1.NodeStatus) []string {
	var out []string
	status := func(s *corev1.NodeStatus, t corev1.NodeConditionType) corev1.ConditionStatus {
		if s == nil {
			return ""
		}
		if c := findCondition(s, t); c != nil {
			return c.Status
		}
		return ""
	}
	for _, p := range pressureEvents {
		now := status(after, p.t)
		if now == "" || now == status(before, p.t) {
			continue
		}
		switch now {
		case corev1.ConditionTrue:
			out = append(out, p.true)
		case corev1.ConditionFalse:
			out = append(out, p.false)
		}
	}
	if now := status(after, corev1.NodeReady); now != "" && now != status(before, corev1.NodeReady) {
		if now == corev1.ConditionTrue {
			out = append(out, EventNodeReady)
		} else {
			out = append(out, EventNodeNotReady)
		}
	}
	return out
}
