package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestShouldRestart(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	plain := corev1.Container{Name: "c"}
	sidecar := corev1.Container{Name: "s", RestartPolicy: &always}
	tests := []struct {
		policy corev1.RestartPolicy
		c      corev1.Container
		init   bool
		exit   int32
		want   bool
	}{
		{corev1.RestartPolicyAlways, plain, false, 0, true},
		{corev1.RestartPolicyAlways, plain, false, 1, true},
		{"", plain, false, 0, true},
		{corev1.RestartPolicyOnFailure, plain, false, 0, false},
		{corev1.RestartPolicyOnFailure, plain, false, 137, true},
		{corev1.RestartPolicyNever, plain, false, 1, false},
		{corev1.RestartPolicyAlways, plain, true, 0, false},
		{corev1.RestartPolicyAlways, plain, true, 1, true},
		{corev1.RestartPolicyOnFailure, plain, true, 1, true},
		{corev1.RestartPolicyNever, plain, true, 1, false},
		{corev1.RestartPolicyNever, sidecar, true, 0, true},
		{corev1.RestartPolicyOnFailure, sidecar, true, 0, true},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tt.policy}}
		if got := ShouldRestart(pod, &tt.c, tt.init, tt.exit); got != tt.want {
			t.Errorf("policy %q, container %q (init %v, sidecar %v), exit %d: ShouldRestart = %v, want %v",
				tt.policy, tt.c.Name, tt.init, IsSidecar(&tt.c), tt.exit, got, tt.want)
		}
	}
}

func TestShouldRestartWithContainerPolicyAndRules(t *testing.T) {
	never, onFailure, always := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyAlways
	rules := func(op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) []corev1.ContainerRestartRule {
		return []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}}
	}
	tests := []struct {
		name   string
		pod    corev1.RestartPolicy
		policy *corev1.ContainerRestartPolicy
		rules  []corev1.ContainerRestartRule
		exit   int32
		want   bool
	}{
		{"container Never beats pod Always", corev1.RestartPolicyAlways, &never, nil, 1, false},
		{"container Always beats pod Never", corev1.RestartPolicyNever, &always, nil, 0, true},
		{"container OnFailure, exit 0", corev1.RestartPolicyAlways, &onFailure, nil, 0, false},
		{"container OnFailure, exit 3", corev1.RestartPolicyNever, &onFailure, nil, 3, true},
		{"rule In matches", corev1.RestartPolicyNever, &never, rules(corev1.ContainerRestartRuleOnExitCodesOpIn, 42, 43), 43, true},
		{"rule In misses: policy Never", corev1.RestartPolicyNever, &never, rules(corev1.ContainerRestartRuleOnExitCodesOpIn, 42), 1, false},
		{"rule NotIn matches", corev1.RestartPolicyNever, &never, rules(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0), 7, true},
		{"rule NotIn misses", corev1.RestartPolicyNever, &never, rules(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0), 0, false},
		{"rules ignored without a container policy", corev1.RestartPolicyNever, nil, rules(corev1.ContainerRestartRuleOnExitCodesOpIn, 1), 1, false},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tt.pod}}
		c := corev1.Container{Name: "c", RestartPolicy: tt.policy, RestartPolicyRules: tt.rules}
		if got := ShouldRestart(pod, &c, false, tt.exit); got != tt.want {
			t.Errorf("%s: ShouldRestart = %v, want %v", tt.name, got, tt.want)
		}
		// An init container that is not a sidecar follows the same rules
		// after a failure, and never runs again after a success.
		if tt.exit != 0 && (tt.policy == nil || *tt.policy != always) {
			if got := ShouldRestart(pod, &c, true, tt.exit); got != tt.want {
				t.Errorf("%s (init): ShouldRestart = %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}

func TestRunsOnceAndRestartsAfterKill(t *testing.T) {
	never, always := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyAlways
	pod := func(p corev1.RestartPolicy, cs ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: p, Containers: cs}}
	}
	if !RunsOnce(pod(corev1.RestartPolicyNever, corev1.Container{Name: "a"})) {
		t.Error("a Never pod runs once")
	}
	if RunsOnce(pod(corev1.RestartPolicyNever, corev1.Container{Name: "a"}, corev1.Container{Name: "b", RestartPolicy: &always})) {
		t.Error("a Never pod with a container of policy Always may run again")
	}
	if !RunsOnce(pod(corev1.RestartPolicyAlways, corev1.Container{Name: "a", RestartPolicy: &never})) {
		t.Error("an Always pod whose only container has policy Never runs once")
	}
	p := pod(corev1.RestartPolicyNever)
	if RestartsAfterKill(p, &corev1.Container{Name: "a"}, false) || !RestartsAfterKill(p, &corev1.Container{Name: "s", RestartPolicy: &always}, true) {
		t.Error("after a kill, a Never pod's container stays dead and its sidecar restarts")
	}
}

func TestContainerFieldPath(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers:      []corev1.Container{{Name: "proxy"}},
		Containers:          []corev1.Container{{Name: "app"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	for name, want := range map[string]string{
		"proxy": "spec.initContainers{proxy}", "app": "spec.containers{app}", "debug": "spec.ephemeralContainers{debug}",
	} {
		if got := ContainerFieldPath(pod, name); got != want {
			t.Errorf("ContainerFieldPath(%q) = %q, want %q", name, got, want)
		}
	}
}
