package allocation_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/allocation"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

func pod(uid, cpuReq string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default", Generation: 2},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq)},
		}}}},
	}
}

// TestStoreSurvivesRestart: an allocation written by one store is read by
// the next (an agent restart), a removed one is gone, a corrupt file is an
// error and leaves the store empty.
func TestStoreSurvivesRestart(t *testing.T) {
	fs := memfs.New()
	s := allocation.NewStore(fs, "/var/lib/lockstep")
	if err := s.Load(); err != nil {
		t.Fatalf("load without a checkpoint: %v", err)
	}
	a, b := pod("a", "100m"), pod("b", "200m")
	for _, p := range []*corev1.Pod{a, b} {
		if err := s.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetResized(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	next := allocation.NewStore(fs, "/var/lib/lockstep")
	if err := next.Load(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]types.UID{"a"}, next.UIDs()); d != "" {
		t.Errorf("pods after a restart (-want +got):\n%s", d)
	}
	if !next.Resized("a") || next.Resized("b") {
		t.Errorf("Resized after a restart: a %v, b %v; want true, false", next.Resized("a"), next.Resized("b"))
	}
	resized := pod("a", "300m")
	if got := next.Allocated(resized); got.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("Allocated of a pod asking 300m: %v, want its allocation 100m", got.Spec.Containers[0].Resources.Requests)
	}
	if resized.Spec.Containers[0].Resources.Requests.Cpu().String() != "300m" {
		t.Errorf("Allocated changed its argument")
	}

	if err := fs.CreateFile(s.Path(), []byte(`{"entries":{"a":{}},"checksum":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := allocation.NewStore(fs, "/var/lib/lockstep")
	if err := bad.Load(); err == nil || len(bad.UIDs()) != 0 {
		t.Errorf("corrupt checkpoint: err %v, pods %v; want an error and none", err, bad.UIDs())
	}
}

// TestDecide: no resize, one that fits, one that does not fit beside the
// others (Deferred, the admission's message, also beyond allocatable), and
// one of pod-level resources (Infeasible).
func TestDecide(t *testing.T) {
	node := admission.Node{Name: "n", Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	others := []*corev1.Pod{pod("o", "1")}
	podLevel := pod("a", "500m")
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	for _, tc := range []struct {
		name               string
		desired, allocated *corev1.Pod
		want               allocation.Verdict
	}{
		{"unchanged", pod("a", "500m"), pod("a", "500m"), allocation.Verdict{}},
		{"fits", pod("a", "900m"), pod("a", "500m"), allocation.Verdict{Resize: true, Allocate: true}},
		{"deferred", pod("a", "1500m"), pod("a", "500m"), allocation.Verdict{Resize: true, Reason: "Deferred", AdmitReason: "OutOfcpu",
			Message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
		{"beyond allocatable", pod("a", "3"), pod("a", "500m"), allocation.Verdict{Resize: true, Reason: "Deferred", AdmitReason: "OutOfcpu",
			Message: "Node didn't have enough resource: cpu, requested: 3000, used: 1000, capacity: 2000"}},
		{"pod-level", podLevel, pod("a", "500m"), allocation.Verdict{Resize: true, Reason: "Infeasible", AdmitReason: "Infeasible",
			Message: allocation.MessagePodLevelUnsupported}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, allocation.Decide(tc.desired, tc.allocated, node, others)); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
		})
	}
}

// TestEventMessage: the kubelet's resize event message.
func TestEventMessage(t *testing.T) {
	p := pod("a", "100m")
	want := `Pod resize started: {"containers":[{"name":"app","resources":{"requests":{"cpu":"100m"}}}],"generation":2}`
	if got := allocation.EventMessage("Pod resize started", p, 2, ""); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}

// TestStoreFlushWritesABurstOnce: admissions (Set) are written by the
// next Flush, all together; a Flush with nothing new writes nothing; a
// resize is written at once; removals by the next RemoveOrphans.
func TestStoreFlushWritesABurstOnce(t *testing.T) {
	fs := memfs.New()
	s := allocation.NewStore(fs, "/var/lib/lockstep")
	var want []types.UID
	for i := range 100 {
		p := pod(fmt.Sprintf("p%03d", i), "10m")
		if err := s.Set(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p.UID)
	}
	if got := s.Writes(); got != 0 {
		t.Errorf("%d checkpoint writes after 100 admissions and no Flush, want 0", got)
	}
	for range 2 {
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Writes(); got != 1 {
		t.Errorf("%d checkpoint writes after two Flushes, want 1", got)
	}
	next := allocation.NewStore(fs, "/var/lib/lockstep")
	if err := next.Load(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, next.UIDs()); d != "" {
		t.Errorf("pods in the flushed checkpoint (-want +got):\n%s", d)
	}
	if err := s.SetResized(pod("p000", "20m")); err != nil {
		t.Fatal(err)
	}
	if got := s.Writes(); got != 2 {
		t.Errorf("%d checkpoint writes after a resize, want 2 (written at once)", got)
	}
	// Terminations are written together too: by the next Flush or
	// housekeeping's RemoveOrphans.
	for _, uid := range want[:50] {
		if err := s.Remove(uid); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Writes(); got != 2 {
		t.Errorf("%d checkpoint writes after 50 removals, want still 2", got)
	}
	if err := s.RemoveOrphans(func(types.UID) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := s.Writes(); got != 3 {
		t.Errorf("%d checkpoint writes after housekeeping, want 3", got)
	}
	after := allocation.NewStore(fs, "/var/lib/lockstep")
	if err := after.Load(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want[50:], after.UIDs()); d != "" {
		t.Errorf("pods in the checkpoint after 50 removals and housekeeping (-want +got):\n%s", d)
	}
}

// firing fires the fault points it holds, each once.
type firing map[deps.Point]bool

func (f firing) Fire(p deps.Point) bool {
	fire := f[p]
	delete(f, p)
	return fire
}

// TestFlushFailedOrTornKeepsTheOldFile: a checkpoint write that fails or
// is torn (fault points) leaves the file as it was and the pod's
// allocation unwritten (Written false); the next Flush writes it.
func TestFlushFailedOrTornKeepsTheOldFile(t *testing.T) {
	for _, p := range []deps.Point{deps.FaultAllocationCheckpointFails, deps.FaultAllocationCheckpointTorn} {
		t.Run(p.String(), func(t *testing.T) {
			fs := memfs.New()
			faults := firing{}
			s := allocation.NewStore(fs, "/var/lib/lockstep").WithFaults(deps.Core{Faults: faults})
			if err := s.Set(pod("a", "100m")); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Set(pod("b", "200m")); err != nil {
				t.Fatal(err)
			}
			if !s.Written("a") || s.Written("b") {
				t.Fatalf("Written before the flush: a %v, b %v; want true, false", s.Written("a"), s.Written("b"))
			}
			faults[p] = true
			if err := s.Flush(); err == nil {
				t.Fatal("Flush reported no error")
			}
			if s.Written("b") {
				t.Error("b counts as written after a failed flush")
			}
			next := allocation.NewStore(fs, "/var/lib/lockstep")
			if err := next.Load(); err != nil {
				t.Fatalf("the file after a failed or torn write: %v", err)
			}
			if d := cmp.Diff([]types.UID{"a"}, next.UIDs()); d != "" {
				t.Errorf("pods in the file after a failed write (-want +got):\n%s", d)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if !s.Written("b") {
				t.Error("b unwritten after a good flush")
			}
		})
	}
}
