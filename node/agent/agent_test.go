package agent_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

const manifest = `apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  containers: [{name: etcd, image: busybox:1.37}]
`

// TestPodsComeFromTheOneStore: the agent's desired pods are the merger's
// (API pods and static pods), sorted, without the mirror pods the API also
// holds; a deleted API pod leaves the store once the agent has deleted it.
func TestPodsComeFromTheOneStore(t *testing.T) {
	h := harness.New(harness.Config{Seed: 3})
	t.Cleanup(h.Close)
	h.Files.WriteFile("/etc/kubernetes/manifests/etcd.yaml", []byte(manifest))
	h.StartAgent()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: h.NodeName, Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37"}}},
	}
	if _, err := h.API.User().CreatePod(pod); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		var out []string
		for _, p := range h.Agent().Pods() {
			kind := "api"
			if podutil.IsStaticPod(p) {
				kind = "static"
			}
			if podutil.IsMirrorPod(p) {
				kind = "mirror"
			}
			out = append(out, kind+" "+p.Namespace+"/"+p.Name)
		}
		return out
	}
	mirrored := func() bool {
		for _, p := range h.API.User().ListAllPods() {
			if podutil.IsMirrorPod(p) {
				return true
			}
		}
		return false
	}
	for end := h.K.Elapsed() + time.Minute; !mirrored() && h.K.Elapsed() < end; {
		if err := h.K.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if !mirrored() {
		t.Fatal("no mirror pod in the API after a minute")
	}
	want := []string{"api default/web", "static kube-system/etcd-" + h.NodeName}
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("Pods() with a mirror in the API (-want +got):\n%s", diff)
	}
	zero := int64(0)
	if err := h.API.User().DeletePodGracefully("default", "web", &zero); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	want = want[1:]
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("Pods() after the API pod was deleted (-want +got):\n%s", diff)
	}
}
