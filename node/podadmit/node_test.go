package podadmit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podadmit"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// nodes answers GetNode with node (an error when nil) and counts calls.
type nodes struct {
	deps.NodeAPI
	node  *corev1.Node
	reads int
}

func (n *nodes) GetNode(context.Context, string) (*corev1.Node, error) {
	n.reads++
	if n.node == nil {
		return nil, errors.New("apiserver out of reach")
	}
	return n.node.DeepCopy(), nil
}

// neverWatch is a node watch that has reported nothing yet (Run is not
// started in these tests).
type neverWatch struct{ deps.NodeWatchAPI }

// TestWatchedNodeIsReadUntilTheWatchReports: a restarted agent admits a
// pod before its node watch reported: admission reads the Node (its
// extended resources, a device resource shown at 0, then refuse the pod,
// as the kubelet's informer has synced before it admits), and tries again
// no sooner than 10 s after a failed read.
func TestWatchedNodeIsReadUntilTheWatchReports(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	api := &nodes{}
	v := podadmit.NewNodeView(k.Deps().Core, "n", neverWatch{}, api)
	if got := v.Current(); got != nil || api.reads != 1 {
		t.Fatalf("apiserver down: Current = %v after %d reads, want nil after 1", got, api.reads)
	}
	api.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		"example.com/foo": resource.MustParse("0")}}}
	if got := v.Current(); got != nil || api.reads != 1 {
		t.Fatalf("at once after a failed read: Current = %v after %d reads, want nil and no new read", got, api.reads)
	}
	if err := k.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := v.Current()
	if got == nil || api.reads != 2 {
		t.Fatalf("10 s later: Current = %v after %d reads, want the Node after 2", got, api.reads)
	}
	v.Current()
	if api.reads != 2 {
		t.Errorf("the Node read is kept until the watch reports: %d reads, want 2", api.reads)
	}
	n := podadmit.AdmissionNode(podadmit.NodeFacts{Name: "n", MaxPods: 10}, func() map[string]string { return nil }, v.Current)
	want := corev1.ResourceList{"example.com/foo": resource.MustParse("0"), corev1.ResourcePods: resource.MustParse("10")}
	if diff := cmp.Diff(want, n.Allocatable, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("admission allocatable (-want +got):\n%s", diff)
	}
}
