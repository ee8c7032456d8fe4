package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// TestNodeRestriction checks the agent's calls are limited like a
// kubelet's under Node authorization and NodeRestriction.
func TestNodeRestriction(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	defer k.Close()
	s := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Node: "node-a"})
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	theirs := mine.DeepCopy()
	theirs.Name, theirs.Spec.NodeName = "theirs", "node-b"
	for _, p := range []*corev1.Pod{mine, theirs} {
		if _, err := s.User().CreatePod(p); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	mirror := func(owner *metav1.OwnerReference) *corev1.Pod {
		p := mine.DeepCopy()
		p.Name, p.Annotations = "mirror", map[string]string{"kubernetes.io/config.mirror": "hash"}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	results := map[string]error{}
	k.Tasks().Go("agent", func() {
		ctx := context.Background()
		_, _, results["list own"] = s.ListPods(ctx, "node-a", "")
		_, _, results["list other node's"] = s.ListPods(ctx, "node-b", "")
		_, results["watch other node's"] = s.WatchPods(ctx, "node-b", "")
		results["delete other node's"] = s.DeletePod(ctx, "default", "theirs", "")
		other, _ := s.User().GetPod("default", "theirs")
		_, results["status of other node's"] = patchStatus(ctx, s, other)
		_, results["create non-mirror"] = s.CreatePod(ctx, func() *corev1.Pod { p := mine.DeepCopy(); p.Name = "x"; return p }())
		_, results["create mirror without owner"] = s.CreatePod(ctx, mirror(nil))
		_, results["create mirror owned, not controller"] = s.CreatePod(ctx, mirror(&metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "u"}))
		_, results["create mirror controlled by node"] = s.CreatePod(ctx, mirror(&metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "u", Controller: &yes}))
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"list own": true, "create mirror controlled by node": true}
	for what, err := range results {
		switch {
		case allowed[what] && err != nil:
			t.Errorf("%s: %v, want allowed", what, err)
		case !allowed[what] && !apierrors.IsForbidden(err):
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	if len(results) != 9 {
		t.Errorf("only %d calls ran", len(results))
	}
}
