package podutil

import corev1 "k8s.io/api/core/v1"

// The annotations that tell where a pod comes from. They are the upstream
// kubelet's keys.
const (
	// AnnotationConfigSource holds the source a pod came from (SourceAPI,
	// "file"). The agent's pod sources set it on every pod they hand out.
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigHash holds a static pod's UID, the hash of its
	// manifest.
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigMirror marks a mirror pod; its value is the config
	// hash (UID) of the static pod it mirrors.
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
)

// SourceAPI is the config source of pods that come from the apiserver.
const SourceAPI = "api"

// IsStaticPod reports whether pod came from a source other than the
// apiserver (a manifest file): its config source is set and is not
// SourceAPI. A mirror pod read from the API carries the source SourceAPI,
// so it is not static.
func IsStaticPod(pod *corev1.Pod) bool {
	src, ok := pod.Annotations[AnnotationConfigSource]
	return ok && src != SourceAPI
}

// IsMirrorPod reports whether pod is the API's mirror of a static pod.
func IsMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationConfigMirror]
	return ok
}
