package podadmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/shutdown"
)

// chain records which steps the admission chain took, and answers each
// as the test case says.
type chain struct {
	fits      []admission.Decision // successive answers of Fits
	fresh     *corev1.Node         // nil: the Node cannot be read
	victims   []*corev1.Pod        // admitted pods, oldest first
	devices   *admission.Decision  // nil: no device manager
	resources admission.Decision

	calls     []string
	fitLabels []map[string]string
}

func (c *chain) steps(pressure []corev1.NodeConditionType, shuttingDown bool) Steps {
	s := Steps{
		Pressure: pressure, ShuttingDown: shuttingDown,
		Node: func() admission.Node {
			c.calls = append(c.calls, "node")
			return admission.Node{Name: "n", Labels: map[string]string{"zone": "old"}, Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resourceMust("1"), corev1.ResourcePods: resourceMust("10")}}
		},
		FreshNode: func() (*corev1.Node, bool) {
			c.calls = append(c.calls, "fresh")
			return c.fresh, c.fresh != nil
		},
		Fits: func(_ *corev1.Pod, node admission.Node) admission.Decision {
			c.calls = append(c.calls, "fits")
			c.fitLabels = append(c.fitLabels, node.Labels)
			d := c.fits[0]
			if len(c.fits) > 1 {
				c.fits = c.fits[1:]
			}
			return d
		},
		Admitted: func() []*corev1.Pod { c.calls = append(c.calls, "admitted"); return c.victims },
		Preempt: func(_ *corev1.Pod, victims []*corev1.Pod) {
			for _, v := range victims {
				c.calls = append(c.calls, "preempt "+v.Name)
			}
		},
		Resources: func(*corev1.Pod) admission.Decision { c.calls = append(c.calls, "resources"); return c.resources },
	}
	if c.devices != nil {
		s.Devices = func(*corev1.Pod) admission.Decision { c.calls = append(c.calls, "devices"); return *c.devices }
	}
	return s
}

func podOf(name string, priority int32, cpu string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name)}}
	p.Spec.Priority = &priority
	c := corev1.Container{Name: "c"}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resourceMust(cpu)}
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

func TestDecide(t *testing.T) {
	ok := admission.Decision{}
	tooBig := admission.Decision{Reason: "OutOfcpu", Message: "no cpu"}
	affinity := admission.Decision{Reason: admission.ReasonNodeAffinity, Message: "labels"}
	noDevice := admission.Decision{Reason: "UnexpectedAdmissionError", Message: "no healthy devices"}
	critical := podOf("critical", 2000001000, "1")
	plain := podOf("plain", 0, "1")
	bestEffort := podOf("besteffort", 0, "")
	victim := podOf("victim", 0, "1")
	// A critical pod whose container asks to restart the whole pod on an
	// exit: it needs RestartAllContainersOnContainerExits.
	restartAll := podOf("restart-all", 2000001000, "1")
	never := corev1.ContainerRestartPolicyNever
	restartAll.Spec.Containers[0].RestartPolicy = &never
	restartAll.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	// A critical pod asking for AppArmor (the steps' host has none).
	confined := podOf("confined", 2000001000, "1")
	confined.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
	tests := []struct {
		name         string
		pod          *corev1.Pod
		pressure     []corev1.NodeConditionType
		shuttingDown bool
		c            chain
		want         admission.Decision
		wantCalls    []string
	}{
		{name: "fits: every step asked", pod: plain, c: chain{fits: []admission.Decision{ok}, devices: &ok},
			want: ok, wantCalls: []string{"devices", "node", "fits", "resources"}},
		{name: "no device manager: devices skipped", pod: plain, c: chain{fits: []admission.Decision{ok}},
			want: ok, wantCalls: []string{"node", "fits", "resources"}},
		{name: "memory pressure refuses best effort before the node is read", pod: bestEffort,
			pressure: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, c: chain{fits: []admission.Decision{ok}},
			want: admission.Decision{Reason: admission.ReasonEvicted}, wantCalls: nil},
		{name: "shutting down refuses even a pod that fits", pod: plain, shuttingDown: true, c: chain{fits: []admission.Decision{ok}},
			want: admission.Decision{Reason: shutdown.NotAdmittedReason, Message: shutdown.NotAdmittedMessage}, wantCalls: nil},
		{name: "affinity refusal is decided again on a fresh node", pod: plain,
			c:    chain{fits: []admission.Decision{affinity, ok}, fresh: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "new"}}}},
			want: ok, wantCalls: []string{"node", "fits", "fresh", "fits", "resources"}},
		{name: "affinity refusal stands when the node cannot be read", pod: plain, c: chain{fits: []admission.Decision{affinity}},
			want: affinity, wantCalls: []string{"node", "fits", "fresh", "admitted"}},
		{name: "a pod too big is refused (not critical: no preemption)", pod: plain, c: chain{fits: []admission.Decision{tooBig}, victims: []*corev1.Pod{victim}},
			want: tooBig, wantCalls: []string{"node", "fits", "admitted"}},
		{name: "a critical pod too big preempts, then devices and resources decide", pod: critical,
			c:    chain{fits: []admission.Decision{tooBig}, victims: []*corev1.Pod{victim}, resources: ok},
			want: ok, wantCalls: []string{"node", "fits", "admitted", "preempt victim", "resources"}},
		{name: "devices refuse before the node is read (no preemption)", pod: critical,
			c:    chain{fits: []admission.Decision{tooBig}, victims: []*corev1.Pod{victim}, devices: &noDevice},
			want: noDevice, wantCalls: []string{"devices"}},
		{name: "an undeclared node feature refuses before the node is read (no preemption)", pod: restartAll,
			c:         chain{fits: []admission.Decision{tooBig}, victims: []*corev1.Pod{victim}},
			want:      admission.Decision{Reason: admission.ReasonPodFeatureUnsupported, Message: "Pod requires node features that are not available: RestartAllContainersOnContainerExits"},
			wantCalls: nil},
		{name: "AppArmor on a host without it refuses before the node is read (no preemption)", pod: confined,
			c:         chain{fits: []admission.Decision{tooBig}, victims: []*corev1.Pod{victim}},
			want:      admission.Decision{Reason: "AppArmor", Message: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
			wantCalls: nil},
		{name: "AppArmor wins over a shutdown under way, as the kubelet's chain orders them", pod: confined, shuttingDown: true,
			c:    chain{fits: []admission.Decision{ok}},
			want: admission.Decision{Reason: "AppArmor"}, wantCalls: nil},
		{name: "resources refuse", pod: plain, c: chain{fits: []admission.Decision{ok}, resources: affinity},
			want: affinity, wantCalls: []string{"node", "fits", "resources"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			got := Decide(tt.pod, c.steps(tt.pressure, tt.shuttingDown))
			if got.Reason != tt.want.Reason || (tt.want.Message != "" && got.Message != tt.want.Message) {
				t.Errorf("decision = %+v, want %+v", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantCalls, c.calls); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideFreshNodeLabels: the second decision sees the fresh Node's
// labels, not the stale copy's.
func TestDecideFreshNodeLabels(t *testing.T) {
	c := chain{fits: []admission.Decision{{Reason: admission.ReasonNodeAffinity}, {}},
		fresh: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "new"}}}}
	Decide(podOf("p", 0, "1"), c.steps(nil, false))
	want := []map[string]string{{"zone": "old"}, {"zone": "new"}}
	if diff := cmp.Diff(want, c.fitLabels); diff != "" {
		t.Errorf("labels decided on (-want +got):\n%s", diff)
	}
}
