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
// feature that needs one again brings it back with its first field).
//
// What is supported is derived from what is built, so the two cannot
// drift: the security context's fields are flagged unless podspec lists
// them as honoured (podspec.HonouredPodSecurityFields, whose test proves
// each one changes a CRI config), and the other optional fields
// (optionalPodFields, optionalContainerFields) unless the package that
// builds them lists them (runtimesync.HonouredContainerFields). Volumes
// have their own list (ignoredVolumeFields).
package admission

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
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

// Check returns the fields of pod the agent does not honour: those of
// the fields below that no agent package says it honours, and every field
// of the pod's and containers' security contexts that podspec does not
// honour (podspec.HonouredPodSecurityFields and
// HonouredContainerSecurityFields: a field Kubernetes adds is flagged
// until it is built), in spec order.
func Check(pod *corev1.Pod) Unsupported {
	var u Unsupported
	spec := &pod.Spec
	for _, r := range optionalPodFields() {
		if r.set(spec) {
			u.Ignored = append(u.Ignored, "spec."+r.path)
		}
	}
	if spec.SecurityContext != nil {
		u.Ignored = append(u.Ignored, unhonoured("spec.securityContext.", spec.SecurityContext, podSecurityHonoured())...)
	}
	u.Ignored = append(u.Ignored, ignoredVolumeFields(spec)...)
	honoured := runtimesync.HonouredContainerFields()
	for _, group := range []struct {
		name string
		list []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range group.list {
			c := &group.list[i]
			prefix := fmt.Sprintf("spec.%s[%d].", group.name, i)
			for _, r := range optionalContainerFields() {
				if r.set(c) && !slices.Contains(honoured, r.path) {
					u.Ignored = append(u.Ignored, prefix+r.path)
				}
			}
			if c.SecurityContext != nil {
				u.Ignored = append(u.Ignored, unhonoured(prefix+"securityContext.", c.SecurityContext, podspec.HonouredContainerSecurityFields())...)
			}
		}
	}
	return u
}

// podSecurityHonoured are the pod securityContext fields the agent
// honours: podspec's, and fsGroupChangePolicy, which the volume manager
// honours as upstream does for the volume types it supports (by applying
// none: they are written afresh; see node/volume's setOwnership).
func podSecurityHonoured() []string {
	return append(podspec.HonouredPodSecurityFields(), "fsGroupChangePolicy")
}

// unhonoured lists, as prefix + JSON name, the fields set in sc (a
// pointer to a security context) that honoured does not name, in
// declaration order.
func unhonoured(prefix string, sc any, honoured []string) []string {
	v := reflect.ValueOf(sc).Elem()
	var out []string
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if !v.Field(i).IsZero() && !slices.Contains(honoured, name) {
			out = append(out, prefix+name)
		}
	}
	return out
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

// optionalPodFields are the pod-level fields (outside the security
// context and volumes) of features no agent package builds yet: a pod
// runs without them.
func optionalPodFields() []podRule {
	return []podRule{
		{"resourceClaims", func(s *corev1.PodSpec) bool { return len(s.ResourceClaims) > 0 }},
	}
}

// optionalContainerFields are the container fields (outside the security
// context) of features an agent package may build: those its package
// does not list as honoured (runtimesync.HonouredContainerFields) are
// ignored.
func optionalContainerFields() []containerRule {
	return []containerRule{
		{"volumeDevices", func(c *corev1.Container) bool { return len(c.VolumeDevices) > 0 }},
		{"resizePolicy", func(c *corev1.Container) bool { return len(c.ResizePolicy) > 0 }},
		{"resources.claims", func(c *corev1.Container) bool { return len(c.Resources.Claims) > 0 }},
	}
}
