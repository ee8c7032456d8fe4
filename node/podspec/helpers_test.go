package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testPod returns a pod with one container "app", modified by the options.
func testPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web",
			Namespace: "prod",
			UID:       "uid-1",
		},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// testNode is the node most tests run on.
func testNode() NodeInfo {
	return NodeInfo{
		NodeName:       "node-a",
		HostIP:         "10.0.0.5",
		ClusterDNS:     []string{"10.96.0.10"},
		ClusterDomain:  "cluster.local",
		ResolverConfig: "/etc/resolv.conf",
		MemoryCapacity: 8 << 30,
	}
}

// rl builds a resource list from name/quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// diffProto compares protos (and structures holding them).
func diffProto(t *testing.T, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("mismatch (-want +got):\n%s", d)
	}
}

func ptr[T any](v T) *T { return &v }

// nodeUserns is the user namespace option of a pod that shares the
// node's (hostUsers unset or true): mode NODE, as upstream sends it.
func nodeUserns() *runtimeapi.UserNamespace {
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
}
