package podstate

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// The label and annotation keys lockstep puts on CRI sandboxes and
// containers. They are the upstream kubelet's keys, so crictl users and
// tools that read them see what they expect, and they are all the agent
// needs to rebuild its state from the runtime after a restart.
const (
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelManaged marks objects this agent made, so that housekeeping
	// never touches containers it does not own.
	LabelManaged = "lockstep.dev/managed"

	AnnotationContainerHash         = "io.kubernetes.container.hash"
	AnnotationRestartCount          = "io.kubernetes.container.restartCount"
	AnnotationTerminationGrace      = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationTerminationMessagePth = "io.kubernetes.container.terminationMessagePath"
	// AnnotationTerminationMessagePolicy is the container's
	// terminationMessagePolicy (File or FallbackToLogsOnError).
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
)

// PodRef identifies the pod an object belongs to.
type PodRef struct {
	UID       types.UID
	Name      string
	Namespace string
}

// SandboxLabels returns the labels of a pod's sandbox.
func SandboxLabels(ref PodRef) map[string]string {
	return map[string]string{
		LabelPodUID:       string(ref.UID),
		LabelPodName:      ref.Name,
		LabelPodNamespace: ref.Namespace,
		LabelManaged:      "true",
	}
}

// ContainerLabels returns the labels of one of a pod's containers.
func ContainerLabels(ref PodRef, container string) map[string]string {
	l := SandboxLabels(ref)
	l[LabelContainerName] = container
	return l
}

// ContainerAnnotations returns the annotations carrying what the agent
// must know about a container instance after a restart.
func ContainerAnnotations(hash string, restartCount int) map[string]string {
	return map[string]string{
		AnnotationContainerHash: hash,
		AnnotationRestartCount:  strconv.Itoa(restartCount),
	}
}

// PodRefFromLabels reads a pod's identity from sandbox or container labels.
func PodRefFromLabels(labels map[string]string) (PodRef, error) {
	uid := labels[LabelPodUID]
	if uid == "" {
		return PodRef{}, fmt.Errorf("label %s missing", LabelPodUID)
	}
	return PodRef{UID: types.UID(uid), Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace]}, nil
}

// RestartCountFromAnnotations reads a container's restart attempt (0 when
// absent or malformed: the agent then counts from the exited instances).
func RestartCountFromAnnotations(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[AnnotationRestartCount])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
