// Package admission holds the agent's decisions about whether it can run a
// pod as asked, made from the pod alone (pure functions, no I/O).
//
// Today it holds the unsupported-field check: the fields of a pod spec the
// agent does not honour yet. Nothing is dropped silently: a pod that uses an
// ignored field runs without it, with a Warning event and a status message
// naming the field (ReasonUnsupportedPodField). A field whose loss would
// weaken a pod's protection is never ignored: until its feature is built
// the pod must fail admission instead (the last such field, hostUsers:
// false, is built: node/userns; the refusal list went with it, and a
// feature that needs one again brings it back with its first field). The
// container security context is honoured in full (node/podspec).
//
// Each category is one list (ignoredPodFields, ignoredContainerFields,
// ignoredVolumeFields). The issue that builds a feature removes its fields
// from these lists, and their table tests, in the same change.
package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Event and status reasons.
const (
	// ReasonUnsupportedPodField is the reason of the Warning event about
	// ignored fields.
	ReasonUnsupportedPodField = "UnsupportedPodField"
)

// Unsupported lists the fields of a pod the agent cannot honour yet, as
// field paths ("spec.containers[0].lifecycle"), in spec order.
type Unsupported struct {
	// Ignored fields: the pod runs without them.
	Ignored []string
}

// WarningMessage describes the ignored fields ("" when none).
func (u Unsupported) WarningMessage() string {
	if len(u.Ignored) == 0 {
		return ""
	}
	return "lockstep does not support these pod fields yet and runs the pod without them: " + strings.Join(u.Ignored, ", ")
}

// Check returns the fields of pod the agent does not honour.
func Check(pod *corev1.Pod) Unsupported {
	var u Unsupported
	spec := &pod.Spec
	for _, r := range ignoredPodFields() {
		if r.set(spec) {
			u.Ignored = append(u.Ignored, "spec."+r.path)
		}
	}
	u.Ignored = append(u.Ignored, ignoredVolumeFields(spec)...)
	for _, group := range []struct {
		name string
		list []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range group.list {
			c := &group.list[i]
			prefix := fmt.Sprintf("spec.%s[%d].", group.name, i)
			for _, r := range ignoredContainerFields(group.name == "initContainers") {
				if r.set(c) {
					u.Ignored = append(u.Ignored, prefix+r.path)
				}
			}
		}
	}
	return u
}

// podRule finds one pod-level field in use.
type podRule struct {
	path string // below spec.
	set  func(*corev1.PodSpec) bool
}

// containerRule finds one container field in use.
type containerRule struct {
	path string // below the container
	set  func(*corev1.Container) bool
}

// ignoredPodFields are the pod-level fields a pod runs without.
func ignoredPodFields() []podRule {
	psc := func(f func(*corev1.PodSecurityContext) bool) func(*corev1.PodSpec) bool {
		return func(s *corev1.PodSpec) bool { return s.SecurityContext != nil && f(s.SecurityContext) }
	}
	return []podRule{
		{"resourceClaims", func(s *corev1.PodSpec) bool { return len(s.ResourceClaims) > 0 }},
		{"securityContext.seLinuxChangePolicy", psc(func(c *corev1.PodSecurityContext) bool { return c.SELinuxChangePolicy != nil })},
		{"securityContext.windowsOptions", psc(func(c *corev1.PodSecurityContext) bool { return c.WindowsOptions != nil })},
	}
}

// ignoredContainerFields are the container fields a pod runs without
// (init says whether the container is an init container).
func ignoredContainerFields(init bool) []containerRule {
	csc := func(f func(*corev1.SecurityContext) bool) func(*corev1.Container) bool {
		return func(c *corev1.Container) bool { return c.SecurityContext != nil && f(c.SecurityContext) }
	}
	rules := []containerRule{
		{"volumeDevices", func(c *corev1.Container) bool { return len(c.VolumeDevices) > 0 }},
		{"resizePolicy", func(c *corev1.Container) bool { return len(c.ResizePolicy) > 0 }},
		{"resources.claims", func(c *corev1.Container) bool { return len(c.Resources.Claims) > 0 }},
		{"securityContext.windowsOptions", csc(func(s *corev1.SecurityContext) bool { return s.WindowsOptions != nil })},
	}
	return rules
}
