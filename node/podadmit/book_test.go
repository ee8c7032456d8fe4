package podadmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
)

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

func TestNeedsDecision(t *testing.T) {
	b := NewBook()
	admitted, refused := podOf("admitted", 0, "1"), podOf("refused", 0, "1")
	b.Record(admitted, admission.Decision{})
	b.Record(refused, admission.Decision{Reason: "OutOfcpu"})
	now := metav1.Now()
	deleting := podOf("deleting", 0, "1")
	deleting.DeletionTimestamp = &now
	done := podOf("done", 0, "1")
	done.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		pod  *corev1.Pod
		want bool
	}{
		{podOf("new", 0, "1"), true},
		{admitted, false},
		{refused, false},
		{deleting, false},
		{done, false},
	}
	for _, tt := range tests {
		if got := b.NeedsDecision(tt.pod); got != tt.want {
			t.Errorf("NeedsDecision(%s) = %v, want %v", tt.pod.Name, got, tt.want)
		}
	}
}

// TestBookLifecycle follows pods through what the agent records of them:
// admission, a resize, a stop, a termination and their removal.
func TestBookLifecycle(t *testing.T) {
	b := NewBook()
	node := admission.Node{Name: "n", Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resourceMust("2"), corev1.ResourcePods: resourceMust("10")}}
	a, c := podOf("a", 0, "1"), podOf("c", 0, "1")
	b.Record(a, admission.Decision{})
	if d := b.Fits(podOf("b", 0, "1"), node); !d.Admitted() {
		t.Fatalf("a 1-CPU pod beside one 1-CPU pod on 2 CPUs: %+v", d)
	}
	bigger := a.DeepCopy()
	bigger.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resourceMust("2")
	b.Resized(bigger)
	if d := b.Fits(podOf("b", 0, "1"), node); d.Admitted() {
		t.Fatalf("a resized pod still counted at its old size")
	}
	b.Resized(c) // not admitted: not counted
	if got := len(b.Admitted()); got != 1 {
		t.Fatalf("admitted after resizing one not admitted: %d pods", got)
	}

	note := StopNote{Reason: "Evicted", Message: "low on memory"}
	b.Stop(a.UID, note)
	if b.IsAdmitted(a.UID) {
		t.Errorf("a stopped pod still counts against the node")
	}
	if got, ok := b.Stopped(a.UID); !ok || !cmp.Equal(got, note) {
		t.Errorf("Stopped = %+v, %v; want %+v", got, ok, note)
	}

	b.Record(c, admission.Decision{})
	b.SetPendingResize(c.UID, true)
	b.SetPendingResize("other", true)
	if diff := cmp.Diff([]types.UID{"other"}, b.PendingResizes(c.UID)); diff != "" {
		t.Errorf("pending resizes but c (-want +got):\n%s", diff)
	}
	if !b.Release(c.UID) {
		t.Errorf("Release of an admitted pod says it did not count")
	}
	if b.Release(c.UID) {
		t.Errorf("a second Release says the pod still counted")
	}
	if diff := cmp.Diff([]types.UID{"other"}, b.PendingResizes("")); diff != "" {
		t.Errorf("a released pod's resize still pending (-want +got):\n%s", diff)
	}

	b.Record(podOf("r", 0, "1"), admission.Decision{Reason: "OutOfcpu", Message: "no"})
	if d, ok := b.Refusal("uid-r"); !ok || d.Reason != "OutOfcpu" {
		t.Errorf("Refusal = %+v, %v", d, ok)
	}
	b.Forget("uid-r")
	b.Forget(a.UID)
	if _, ok := b.Refusal("uid-r"); ok {
		t.Errorf("a removed pod's refusal is kept")
	}
	if _, ok := b.Stopped(a.UID); ok {
		t.Errorf("a removed pod's stop note is kept")
	}
}

func TestUnsupportedChanged(t *testing.T) {
	b := NewBook()
	steps := []struct {
		uid  types.UID
		key  string
		want bool
	}{
		{"p", "", false},             // nothing unsupported: nothing to report
		{"p", "hostUsers", true},     // new finding
		{"p", "hostUsers", false},    // reported already
		{"p", "", true},              // changed back
		{"q", "resizePolicy", true},  // another pod
		{"q", "resizePolicy", false}, //
	}
	for i, s := range steps {
		if got := b.UnsupportedChanged(s.uid, s.key); got != s.want {
			t.Errorf("step %d: UnsupportedChanged(%s, %q) = %v, want %v", i, s.uid, s.key, got, s.want)
		}
	}
	b.ForgetUnsupported("q")
	if !b.UnsupportedChanged("q", "resizePolicy") {
		t.Errorf("a forgotten pod's finding is not reported again")
	}
}

func is(n *corev1.Node) func() *corev1.Node { return func() *corev1.Node { return n } }

func unasked(t *testing.T) func() *corev1.Node {
	return func() *corev1.Node {
		t.Errorf("a Node source was asked after an earlier one knew the Node")
		return nil
	}
}

func TestAdmissionNode(t *testing.T) {
	watched := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"from": "watch"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}}}
	written := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"from": "status"}}}
	registered := func() map[string]string { return map[string]string{"from": "registration"} }
	// The Node's allocatable: its cpu, pods and the device manager's
	// resource are not admission's to take from it (the configured
	// allocatable and the manager's live count are); a device resource
	// the manager forgot (shown at 0) and another extended resource are.
	extended := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resourceMust("64"), corev1.ResourcePods: resourceMust("500"), "example.com/gpu": resourceMust("8"),
		"example.com/gone": resourceMust("0"), "example.com/dongle": resourceMust("3"), "hugepages-2Mi": resourceMust("1Gi")}}}
	facts := NodeFacts{Name: "n", Allocatable: corev1.ResourceList{corev1.ResourceCPU: resourceMust("4")}, MaxPods: 110,
		Devices: corev1.ResourceList{"example.com/gpu": resourceMust("2")}}
	wantAlloc := corev1.ResourceList{corev1.ResourceCPU: resourceMust("4"), corev1.ResourcePods: resourceMust("110"),
		"example.com/gpu": resourceMust("2")}
	tests := []struct {
		name       string
		facts      NodeFacts
		known      []func() *corev1.Node
		wantLabels map[string]string
		wantTaints []corev1.Taint
		wantAlloc  corev1.ResourceList
	}{
		{"the watched node wins (the status's is not asked)", facts, []func() *corev1.Node{is(watched), unasked(t)},
			watched.Labels, watched.Spec.Taints, wantAlloc},
		{"then the one the status wrote", facts, []func() *corev1.Node{is(nil), is(written)}, written.Labels, nil, wantAlloc},
		{"else the registration labels", facts, []func() *corev1.Node{is(nil), is(nil)}, registered(), nil, wantAlloc},
		{"no allocatable: only pods", NodeFacts{Name: "n", MaxPods: 5}, nil, registered(), nil,
			corev1.ResourceList{corev1.ResourcePods: resourceMust("5")}},
		{"the Node's extended resources the devices do not report", facts, []func() *corev1.Node{is(extended)}, nil, nil,
			corev1.ResourceList{corev1.ResourceCPU: resourceMust("4"), corev1.ResourcePods: resourceMust("110"),
				"example.com/gpu": resourceMust("2"), "example.com/gone": resourceMust("0"), "example.com/dongle": resourceMust("3")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmissionNode(tt.facts, registered, tt.known...)
			want := admission.Node{Name: "n", Labels: tt.wantLabels, Taints: tt.wantTaints, Allocatable: tt.wantAlloc}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("AdmissionNode (-want +got):\n%s", diff)
			}
		})
	}
	if _, ok := facts.Allocatable[corev1.ResourcePods]; ok {
		t.Errorf("AdmissionNode wrote into the caller's allocatable")
	}
}

func TestRejection(t *testing.T) {
	sysctls, err := admission.NewSysctlAllowlist(admission.SafeSysctls(""))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBook()
	refused := podOf("refused", 0, "1")
	b.Record(refused, admission.Decision{Reason: "OutOfcpu", Message: "no cpu"})
	unsafe := podOf("unsafe", 0, "1")
	unsafe.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	refusedUnsafe := unsafe.DeepCopy()
	refusedUnsafe.UID = refused.UID
	tests := []struct {
		pod        *corev1.Pod
		wantReason string
	}{
		{podOf("fine", 0, "1"), ""},
		{refused, "OutOfcpu"},
		{unsafe, admission.ReasonSysctlForbidden},
		{refusedUnsafe, "OutOfcpu"}, // admission's refusal comes first
	}
	for _, tt := range tests {
		reason, msg := b.Rejection(tt.pod, sysctls)
		if reason != tt.wantReason {
			t.Errorf("%s: reason %q (%s), want %q", tt.pod.Name, reason, msg, tt.wantReason)
		}
		if (reason == "") != (msg == "") {
			t.Errorf("%s: reason %q with message %q", tt.pod.Name, reason, msg)
		}
	}
}
