package status

import corev1 "k8s.io/api/core/v1"

// mountStatuses returns the status.volumeMounts of container c: one per
// spec mount, in spec order (the runtime does not know volume names, so
// they come from the spec, as upstream lists them). A read-only mount
// carries its resolved recursive read-only mode, Enabled or Disabled;
// supportsRRO says whether the runtime can mount recursively read-only.
func mountStatuses(c *corev1.Container, supportsRRO bool) []corev1.VolumeMountStatus {
	if len(c.VolumeMounts) == 0 {
		return nil
	}
	out := make([]corev1.VolumeMountStatus, 0, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		ms := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := corev1.RecursiveReadOnlyDisabled
			if RecursiveReadOnly(m, supportsRRO) {
				mode = corev1.RecursiveReadOnlyEnabled
			}
			ms.RecursiveReadOnly = &mode
		}
		out = append(out, ms)
	}
	return out
}

// RecursiveReadOnly reports whether mount m is made recursively read-only
// on a runtime that supports it or not (supportsRRO): only a read-only
// mount without propagation asking for Enabled (on a runtime that supports
// it) or IfPossible (when it does). A request the runtime cannot honour
// resolves to false here; refusing to start the container for it is the
// container's configuration's business, not the status's.
func RecursiveReadOnly(m corev1.VolumeMount, supportsRRO bool) bool {
	if m.RecursiveReadOnly == nil || !m.ReadOnly {
		return false
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		return false
	}
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		return supportsRRO
	}
	return false
}

// AsksRecursiveReadOnly reports whether a container of pod (init,
// regular or ephemeral) has a read-only mount asking for a recursive
// read-only mode other than Disabled: only then does its status depend on
// what the runtime supports.
func AsksRecursiveReadOnly(pod *corev1.Pod) bool {
	asks := func(ms []corev1.VolumeMount) bool {
		for _, m := range ms {
			if m.ReadOnly && m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled {
				return true
			}
		}
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if asks(c.VolumeMounts) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if asks(c.VolumeMounts) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if asks(c.VolumeMounts) {
			return true
		}
	}
	return false
}
