package agent

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/status"
)

// The agent's own small decisions, each with its table: what remains in
// node/agent once admission, active pods and the started-not-seen
// tracking live in their packages.

func TestWorkFor(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}
	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	mirror := pod.DeepCopy()
	mirror.Annotations = map[string]string{podutil.AnnotationConfigMirror: "x"}
	gated := pod.DeepCopy()
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	// The gate turned True (another writer), the containers are ready,
	// and Ready still says False: the worker must recompute it.
	gated.Status.Conditions = []corev1.PodCondition{{Type: "example.com/ready", Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	zero := int64(0)
	tests := []struct {
		name   string
		op     podsource.Op
		source string
		pod    *corev1.Pod
		want   *podworkers.Work // nil: no work
	}{
		{"add creates", podsource.OpAdd, podsource.SourceAPI, pod, &podworkers.Work{Type: podworkers.Create, UID: "u", Pod: pod}},
		{"add of a pod being deleted kills it", podsource.OpAdd, podsource.SourceAPI, deleting,
			&podworkers.Work{Type: podworkers.Kill, UID: "u", Pod: deleting, Reason: "deleted"}},
		{"update updates", podsource.OpUpdate, podsource.SourceFile, pod, &podworkers.Work{Type: podworkers.Update, UID: "u", Pod: pod}},
		{"delete kills", podsource.OpDelete, podsource.SourceAPI, pod, &podworkers.Work{Type: podworkers.Kill, UID: "u", Pod: pod, Reason: "deleted"}},
		{"removed from the API: no grace", podsource.OpRemove, podsource.SourceAPI, pod,
			&podworkers.Work{Type: podworkers.Kill, UID: "u", Pod: pod, GracePeriod: &zero, Reason: "removed from api"}},
		{"removed from a file: its own grace", podsource.OpRemove, podsource.SourceFile, pod,
			&podworkers.Work{Type: podworkers.Kill, UID: "u", Pod: pod, Reason: "removed from file"}},
		{"a reconcile the workers need not see", podsource.OpReconcile, podsource.SourceAPI, pod, nil},
		{"a readiness gate changed by another writer", podsource.OpReconcile, podsource.SourceAPI, gated,
			&podworkers.Work{Type: podworkers.Update, UID: "u", Pod: gated}},
		{"mirror pods run nothing", podsource.OpAdd, podsource.SourceAPI, mirror, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := workFor(tt.op, tt.source, tt.pod)
			if tt.want == nil {
				if ok {
					t.Fatalf("work %+v, want none", got)
				}
				return
			}
			if !ok {
				t.Fatalf("no work, want %+v", *tt.want)
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("work (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncResult(t *testing.T) {
	now := time.Unix(1000, 0)
	started := metav1.NewTime(now.Add(-50 * time.Second))
	sixty := int64(60)
	plain := &corev1.Pod{}
	deadline := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &sixty}}
	resizingStatus := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodResizeInProgress}}}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		s     corev1.PodStatus
		retry time.Duration
		want  podworkers.SyncResult
	}{
		{"running: the resync period", plain, corev1.PodStatus{Phase: corev1.PodRunning}, 0, podworkers.SyncResult{}},
		{"the executor's retry", plain, corev1.PodStatus{Phase: corev1.PodRunning}, 10 * time.Second, podworkers.SyncResult{RequeueAfter: 10 * time.Second}},
		{"terminal", plain, corev1.PodStatus{Phase: corev1.PodSucceeded}, 0, podworkers.SyncResult{Terminal: true}},
		{"resizing: within a tick", plain, resizingStatus, 10 * time.Second, podworkers.SyncResult{RequeueAfter: time.Second}},
		{"resizing, a sooner retry stands", plain, resizingStatus, 100 * time.Millisecond, podworkers.SyncResult{RequeueAfter: 100 * time.Millisecond}},
		{"the active deadline comes first", deadline, corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}, 0,
			podworkers.SyncResult{RequeueAfter: 10 * time.Second}},
		{"a retry before the deadline stands", deadline, corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}, 5 * time.Second,
			podworkers.SyncResult{RequeueAfter: 5 * time.Second}},
		{"terminal: no deadline wake", deadline, corev1.PodStatus{Phase: corev1.PodFailed, StartTime: &started}, 0,
			podworkers.SyncResult{Terminal: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, syncResult(tt.pod, tt.s, tt.retry, time.Second, now)); diff != "" {
				t.Errorf("syncResult (-want +got):\n%s", diff)
			}
		})
	}
	past := metav1.NewTime(now.Add(-2 * time.Minute))
	if got := syncResult(deadline, corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &past}, 0, time.Second, now); got.RequeueAfter != time.Millisecond {
		t.Errorf("past the deadline: requeue after %v, want at once (1ms)", got.RequeueAfter)
	}
}

func TestOldestView(t *testing.T) {
	start := time.Unix(100, 0)
	if got := oldestView(time.Unix(50, 0), start); !got.Equal(start) {
		t.Errorf("a sync from before the agent started acts on views from %v, want %v", got, start)
	}
	if got := oldestView(time.Unix(150, 0), start); !got.Equal(time.Unix(150, 0)) {
		t.Errorf("a later sync acts on views from %v, want its own time", got)
	}
}

func TestResizeConditionHelpers(t *testing.T) {
	prev := []corev1.PodCondition{
		{Type: corev1.PodResizePending, Reason: "Deferred", ObservedGeneration: 3},
		{Type: corev1.PodResizeInProgress, Reason: "Error", Message: "boom"},
	}
	pending := []struct {
		reason string
		gen    int64
		want   bool
	}{
		{"Deferred", 3, true}, {"Deferred", 4, false}, {"Infeasible", 3, false},
	}
	for _, p := range pending {
		if got := pendingAlready(prev, p.reason, p.gen); got != p.want {
			t.Errorf("pendingAlready(%s, %d) = %v, want %v", p.reason, p.gen, got, p.want)
		}
	}
	if pendingAlready(nil, "Deferred", 3) {
		t.Errorf("pendingAlready with no condition")
	}
	same := []struct {
		c    corev1.PodCondition
		want bool
	}{
		{corev1.PodCondition{Type: corev1.PodResizeInProgress, Reason: "Error", Message: "boom"}, true},
		{corev1.PodCondition{Type: corev1.PodResizeInProgress, Reason: "Error", Message: "other"}, false},
		{corev1.PodCondition{Type: corev1.PodReady}, false},
	}
	for _, c := range same {
		if got := sameCondition(prev, c.c); got != c.want {
			t.Errorf("sameCondition(%+v) = %v, want %v", c.c, got, c.want)
		}
	}
	if !resizing(corev1.PodStatus{Conditions: prev}) || resizing(corev1.PodStatus{Conditions: prev[:1]}) {
		t.Errorf("resizing does not follow the PodResizeInProgress condition")
	}
}

func TestWithUnsupportedMessage(t *testing.T) {
	u := admission.Unsupported{Ignored: []string{"spec.x"}}
	tests := []struct {
		name string
		s    corev1.PodStatus
		u    admission.Unsupported
		want string
	}{
		{"names the fields", corev1.PodStatus{}, u, u.WarningMessage()},
		{"nothing ignored", corev1.PodStatus{}, admission.Unsupported{}, ""},
		{"a message of its own wins", corev1.PodStatus{Message: "own"}, u, "own"},
		{"a reason of its own wins", corev1.PodStatus{Reason: status.ReasonDeadlineExceeded}, u, ""},
	}
	for _, tt := range tests {
		if got := withUnsupportedMessage(tt.s, tt.u).Message; got != tt.want {
			t.Errorf("%s: message %q, want %q", tt.name, got, tt.want)
		}
	}
}

// fakeMachine answers Info and Usage with fixed values.
type fakeMachine struct {
	info  deps.MachineInfo
	usage deps.MachineUsage
}

func (m fakeMachine) Info(context.Context) (deps.MachineInfo, error)   { return m.info, nil }
func (m fakeMachine) Usage(context.Context) (deps.MachineUsage, error) { return m.usage, nil }

func TestWithEvictionReserve(t *testing.T) {
	gi := int64(1 << 30)
	machine := fakeMachine{info: deps.MachineInfo{MemoryBytes: uint64(8 * gi)}, usage: deps.MachineUsage{NodeFSCapacityBytes: uint64(100 * gi)}}
	hard, err := eviction.ParseThresholds(map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}, nil, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	q := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }
	tests := []struct {
		name     string
		machine  deps.Machine
		reserved corev1.ResourceList
		ts       []eviction.Threshold
		want     corev1.ResourceList
	}{
		{"no thresholds: reserved as given", machine, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}, nil,
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		{"no machine: reserved as given", nil, nil, hard, nil},
		{"the hard thresholds are added", machine, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, hard,
			// 10 % of 100 Gi as upstream computes a percentage: a float32
			// (0.1 is 0.100000001 there), so 160 bytes over 10 Gi
			corev1.ResourceList{corev1.ResourceMemory: q(gi + 100<<20), corev1.ResourceEphemeralStorage: q(10*gi + 160)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withEvictionReserve(tt.machine, nodestatus.Config{Reserved: tt.reserved}, tt.ts)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMirrorDecisions(t *testing.T) {
	static := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n", UID: "v2",
		Annotations: map[string]string{podutil.AnnotationConfigSource: "file"}}}
	mirrorOf := func(hash string, deleted bool) *corev1.Pod {
		m := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n", UID: "api-uid",
			Annotations: map[string]string{podutil.AnnotationConfigMirror: hash}}}
		if deleted {
			now := metav1.Now()
			m.DeletionTimestamp = &now
		}
		return m
	}
	inPlace := []struct {
		name   string
		mirror *corev1.Pod
		want   bool
	}{
		{"mirrors this version", mirrorOf("v2", false), true},
		{"mirrors an older manifest", mirrorOf("v1", false), false},
		{"deleted by a user", mirrorOf("v2", true), false},
	}
	for _, tt := range inPlace {
		if got := mirrorInPlace(tt.mirror, static); got != tt.want {
			t.Errorf("mirrorInPlace, %s: %v, want %v", tt.name, got, tt.want)
		}
	}

	apiPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web",
		Annotations: map[string]string{podutil.AnnotationConfigSource: "api"}}}
	if diff := cmp.Diff(map[string]bool{"kube-system/etcd-n": true}, staticNames([]*corev1.Pod{static, apiPod})); diff != "" {
		t.Errorf("staticNames (-want +got):\n%s", diff)
	}

	yes := func(types.UID) bool { return true }
	no := func(types.UID) bool { return false }
	orphaned := []struct {
		name     string
		static   map[string]bool
		inSource func(types.UID) bool
		running  func(types.UID) bool
		want     bool
	}{
		{"its static pod is desired", map[string]bool{"kube-system/etcd-n": true}, no, no, false},
		{"its static pod is in a source, on its way", nil, yes, no, false},
		{"its static pod still terminates", nil, no, yes, false},
		{"gone everywhere", nil, no, no, true},
	}
	for _, tt := range orphaned {
		if got := mirrorOrphaned("kube-system/etcd-n", mirrorOf("v1", false), tt.static, tt.inSource, tt.running); got != tt.want {
			t.Errorf("mirrorOrphaned, %s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRunningNamesake(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-n", UID: "new"}}
	running := []podstate.Container{{ID: "c", State: podstate.ContainerRunning}}
	exited := []podstate.Container{{ID: "c", State: podstate.ContainerExited}}
	views := map[types.UID]*podstate.PodStatus{
		"new":          {UID: "new", Namespace: "kube-system", Name: "etcd-n", Containers: running},
		"other-name":   {UID: "other-name", Namespace: "kube-system", Name: "apiserver-n", Containers: running},
		"old-exited":   {UID: "old-exited", Namespace: "kube-system", Name: "etcd-n", Containers: exited},
		"old-running":  {UID: "old-running", Namespace: "kube-system", Name: "etcd-n", Containers: running},
		"other-ns-run": {UID: "other-ns-run", Namespace: "default", Name: "etcd-n", Containers: running},
	}
	view := func(uid types.UID) (*podstate.PodStatus, bool) { st, ok := views[uid]; return st, ok }
	tests := []struct {
		uids []types.UID
		want types.UID
	}{
		{[]types.UID{"new", "other-name", "old-exited", "other-ns-run"}, ""},
		{[]types.UID{"new", "old-exited", "old-running"}, "old-running"},
		{[]types.UID{"gone"}, ""},
	}
	for _, tt := range tests {
		got, ok := runningNamesake(pod, tt.uids, view)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("runningNamesake over %v = %q, %v; want %q", tt.uids, got, ok, tt.want)
		}
	}
}
