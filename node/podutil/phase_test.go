package podutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestIsTerminal(t *testing.T) {
	want := map[corev1.PodPhase]bool{
		"": false, corev1.PodPending: false, corev1.PodRunning: false, corev1.PodUnknown: false,
		corev1.PodSucceeded: true, corev1.PodFailed: true,
	}
	for phase, w := range want {
		if got := IsTerminal(phase); got != w {
			t.Errorf("IsTerminal(%q) = %v, want %v", phase, got, w)
		}
	}
}

func TestSortPods(t *testing.T) {
	pod := func(ns, name, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	}
	pods := []*corev1.Pod{
		pod("kube-system", "etcd", "u2"), pod("default", "web", "u9"), pod("kube-system", "etcd", "u1"),
		pod("default", "api", "u5"), pod("a", "z", "u0"),
	}
	SortPods(pods)
	var got []string
	for _, p := range pods {
		got = append(got, p.Namespace+"/"+p.Name+"/"+string(p.UID))
	}
	want := []string{"a/z/u0", "default/api/u5", "default/web/u9", "kube-system/etcd/u1", "kube-system/etcd/u2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
