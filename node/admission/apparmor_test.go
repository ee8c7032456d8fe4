package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmitAppArmor: on a host without AppArmor, a Pending pod asking for
// a RuntimeDefault or Localhost profile — at pod or container level, in an
// init or ephemeral container, or through the deprecated annotation — is
// refused with the kubelet's reason and message; Unconfined, no profile,
// a pod past Pending, or a host with AppArmor are admitted.
func TestAdmitAppArmor(t *testing.T) {
	profile := func(typ corev1.AppArmorProfileType) *corev1.AppArmorProfile {
		p := &corev1.AppArmorProfile{Type: typ}
		if typ == corev1.AppArmorProfileTypeLocalhost {
			name := "k8s-apparmor-example-deny-write"
			p.LocalhostProfile = &name
		}
		return p
	}
	sc := func(typ corev1.AppArmorProfileType) *corev1.SecurityContext {
		return &corev1.SecurityContext{AppArmorProfile: profile(typ)}
	}
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
		edit(p)
		return p
	}
	refused := Decision{Reason: "AppArmor", Message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"}
	tests := []struct {
		name string
		pod  *corev1.Pod
		host bool
		want Decision
	}{
		{"no profile", pod(func(*corev1.Pod) {}), false, Decision{}},
		{"pod RuntimeDefault", pod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeRuntimeDefault)}
		}), false, refused},
		{"pod Unconfined", pod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeUnconfined)}
		}), false, Decision{}},
		{"container Localhost", pod(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = sc(corev1.AppArmorProfileTypeLocalhost) }), false, refused},
		{"container Unconfined", pod(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = sc(corev1.AppArmorProfileTypeUnconfined) }), false, Decision{}},
		{"init container RuntimeDefault", pod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", SecurityContext: sc(corev1.AppArmorProfileTypeRuntimeDefault)}}
		}), false, refused},
		{"ephemeral container RuntimeDefault", pod(func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "e", SecurityContext: sc(corev1.AppArmorProfileTypeRuntimeDefault)}}}
		}), false, refused},
		{"annotation runtime/default", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}
		}), false, refused},
		{"annotation localhost", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/deny-write"}
		}), false, refused},
		{"annotation unconfined", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "unconfined"}
		}), false, Decision{}},
		{"other annotation", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{"apparmor": "runtime/default"} }), false, Decision{}},
		{"host with AppArmor", pod(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = sc(corev1.AppArmorProfileTypeLocalhost) }), true, Decision{}},
		{"static pod without a phase yet", pod(func(p *corev1.Pod) {
			p.Status.Phase = ""
			p.Spec.Containers[0].SecurityContext = sc(corev1.AppArmorProfileTypeRuntimeDefault)
		}), false, refused},
		{"already running", pod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Spec.Containers[0].SecurityContext = sc(corev1.AppArmorProfileTypeRuntimeDefault)
		}), false, Decision{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AdmitAppArmor(tc.pod, tc.host)); diff != "" {
				t.Errorf("AdmitAppArmor (-want +got):\n%s", diff)
			}
		})
	}
}
