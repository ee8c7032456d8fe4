//go:build e2e

package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestAppArmorRefusedWithoutAppArmor: on a host without AppArmor (this
// one: no /sys/module/apparmor/parameters/enabled), a pod asking for an
// AppArmor profile — pod-level RuntimeDefault, or the deprecated
// annotation — is Failed with the kubelet's reason AppArmor and message
// before containerd gets a sandbox, as the node suite's AppArmor specs
// expect; a pod asking for Unconfined runs.
func TestAppArmorRefusedWithoutAppArmor(t *testing.T) {
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && len(b) > 0 && b[0] == 'Y' {
		t.Skip("this host has AppArmor enabled: the refusal cannot be shown here")
	}
	e := setup(t)
	podLevel := e.pod("apparmor-pod", false, "sleep 3600")
	podLevel.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
	annotated := e.pod("apparmor-annotation", false, "sleep 3600")
	annotated.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "runtime/default"}
	unconfined := e.pod("apparmor-unconfined", false, "sleep 3600")
	unconfined.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}

	type verdict struct {
		Phase           corev1.PodPhase
		Reason, Message string
		Sandboxes       int
	}
	want := verdict{corev1.PodFailed, "AppArmor", "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host", 0}
	for _, p := range []*corev1.Pod{podLevel, annotated} {
		got := e.create(t, p)
		got = e.waitPod(t, got, 60*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		sbs, _ := e.criOf(t, string(got.UID))
		if diff := cmp.Diff(want, verdict{got.Status.Phase, got.Status.Reason, got.Status.Message, len(sbs)}); diff != "" {
			t.Errorf("pod %s (-want +got):\n%s", p.Name, diff)
		}
	}
	e.waitPod(t, e.create(t, unconfined), 60*time.Second, "Running and Ready", podReady)
}
