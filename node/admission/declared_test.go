package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestAdmitDeclaredFeatures: a pod is refused, PodFeatureUnsupported
// naming the features, only when it needs a node feature the node does
// not declare (a RestartAllContainers restart rule needs
// RestartAllContainersOnContainerExits); a feature inferred only for
// updates (an init container's resize) never refuses a new pod.
func TestAdmitDeclaredFeatures(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	rule := func(action corev1.ContainerRestartRuleAction) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", RestartPolicy: &never,
			RestartPolicyRules: []corev1.ContainerRestartRule{{Action: action,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}}
		return p
	}
	plain := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}},
	}}
	refused := Decision{Reason: ReasonPodFeatureUnsupported, Message: "Pod requires node features that are not available: RestartAllContainersOnContainerExits"}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		declared []string
		want     Decision
	}{
		{"a plain pod on a node declaring nothing", plain, nil, Decision{}},
		{"a Restart rule needs nothing", rule(corev1.ContainerRestartRuleActionRestart), nil, Decision{}},
		{"a RestartAllContainers rule on a node declaring nothing", rule(corev1.ContainerRestartRuleActionRestartAllContainers), nil, refused},
		{"a RestartAllContainers rule on a node declaring others", rule(corev1.ContainerRestartRuleActionRestartAllContainers),
			[]string{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}, refused},
		{"a RestartAllContainers rule on a node declaring it", rule(corev1.ContainerRestartRuleActionRestartAllContainers),
			[]string{"RestartAllContainersOnContainerExits"}, Decision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AdmitDeclaredFeatures(tc.pod, tc.declared)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
