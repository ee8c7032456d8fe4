package allocation

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The checkpoint built from cached entries is byte for byte what
// json.Marshal gives for the whole checkpoint with checksum's sum, across
// sets, a resize and removals, so Load (and an older agent) reads it.
func TestCheckpointEncodingMatchesJSONMarshal(t *testing.T) {
	s := NewStore(nil, "/var/lib/lockstep")
	pod := func(i int, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-<%d>&", i))},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init"}},
				Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
	}
	check := func(step string) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		var resized []types.UID
		for uid := range s.resized {
			if _, ok := s.pods[uid]; ok {
				resized = append(resized, uid)
			}
		}
		if len(resized) > 1 {
			t.Fatal("the test keeps at most one resized pod")
		}
		sum, err := checksum(s.pods, resized)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(checkpoint{Entries: s.pods, Resized: resized, Checksum: sum})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.encodeLocked(resized)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(want), string(got)); d != "" {
			t.Errorf("%s: checkpoint (-json.Marshal +built):\n%s", step, d)
		}
	}
	check("empty")
	for i := range 5 {
		if err := s.Set(pod(i, "100m")); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("after pod %d", i))
	}
	if err := s.SetResized(pod(2, "250m")); err != nil {
		t.Fatal(err)
	}
	check("after a resize")
	if err := s.Remove("uid-<3>&"); err != nil {
		t.Fatal(err)
	}
	check("after a removal")
}
