package podworkers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// fakeSyncer records every step; each step takes stepTime of virtual time.
type fakeSyncer struct {
	k        *kernel.Kernel
	stepTime time.Duration
	terminal bool
	// killFailures is how many terminating steps fail before one succeeds.
	killFailures int
	calls        []string
}

func (f *fakeSyncer) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf("+%v ", f.k.Elapsed())+fmt.Sprintf(format, args...))
}

func (f *fakeSyncer) SyncPod(ctx context.Context, pod *corev1.Pod, _ time.Time) (podworkers.SyncResult, error) {
	f.record("sync gen=%d", pod.Generation)
	if err := f.k.Tasks().Sleep(ctx, f.stepTime); err != nil {
		f.record("sync cancelled")
		return podworkers.SyncResult{}, err
	}
	return podworkers.SyncResult{Terminal: f.terminal}, nil
}

func (f *fakeSyncer) SyncTerminatingPod(ctx context.Context, uid types.UID, _ *corev1.Pod, grace int64, _ time.Time) error {
	f.record("terminating grace=%d", grace)
	if err := f.k.Tasks().Sleep(ctx, f.stepTime); err != nil {
		f.record("terminating cancelled")
		return err
	}
	if f.killFailures > 0 {
		f.killFailures--
		f.record("terminating failed")
		return fmt.Errorf("a container still runs")
	}
	return nil
}

func (f *fakeSyncer) SyncTerminatedPod(_ context.Context, uid types.UID, _ *corev1.Pod) error {
	f.record("terminated")
	return nil
}

func pod(gen int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Generation: gen}}
}

func setup(t *testing.T, step time.Duration) (*kernel.Kernel, *fakeSyncer, *podworkers.PodWorkers, *podworkers.WorkQueue) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	f := &fakeSyncer{k: k, stepTime: step}
	q := podworkers.NewWorkQueue(k)
	return k, f, podworkers.New(context.Background(), k.Deps().Core, f, q, podworkers.Config{}), q
}

func TestNewerUpdateReplacesUnprocessedOne(t *testing.T) {
	k, f, pw, _ := setup(t, time.Second)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(1)})
	if err := k.RunFor(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for gen := int64(2); gen <= 6; gen++ {
		pw.UpdatePod(podworkers.Work{Type: podworkers.Update, UID: "u1", Pod: pod(gen)})
	}
	if err := k.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s sync gen=1", "+1s sync gen=6"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestKillCancelsSyncAndGraceOnlyShrinks(t *testing.T) {
	k, f, pw, _ := setup(t, 3*time.Second)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(1)})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	g30, g5, g10 := int64(30), int64(5), int64(10)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", GracePeriod: &g30})
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", GracePeriod: &g5})
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", GracePeriod: &g10})
	pw.UpdatePod(podworkers.Work{Type: podworkers.Update, UID: "u1", Pod: pod(2)}) // ignored: terminating
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s sync gen=1", "+1s sync cancelled", "+1s terminating grace=5", "+4s terminated"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if st, _ := pw.State("u1"); st != podworkers.Terminated || !pw.IsFinished("u1") {
		t.Errorf("state %v finished %v, want terminated and finished", st, pw.IsFinished("u1"))
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: "u1", Pod: pod(3)})
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 4 {
		t.Errorf("a terminated pod was synced again: %v", f.calls)
	}
	if err := pw.Forget("u1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := pw.State("u1"); ok {
		t.Errorf("forgotten worker still known")
	}
}

// TestShorterGraceCancelsTheKillInFlight: a kill with a shorter grace
// period cancels the terminating step in flight and redoes it at once with
// the shorter grace; a longer one changes nothing.
func TestShorterGraceCancelsTheKillInFlight(t *testing.T) {
	k, f, pw, _ := setup(t, 10*time.Second)
	g120, g200, g5 := int64(120), int64(200), int64(5)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", Pod: pod(1), GracePeriod: &g120})
	if err := k.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", Pod: pod(1), GracePeriod: &g200})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", Pod: pod(1), GracePeriod: &g5})
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s terminating grace=120", "+3s terminating cancelled", "+3s terminating grace=5", "+13s terminated"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// staticPod is version gen of the static pod ns/etcd, with its own UID.
func staticPod(gen int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns", UID: types.UID(fmt.Sprint("static-", gen)),
		Generation: gen, Annotations: map[string]string{"kubernetes.io/config.source": "file"}}}
}

// TestStaticPodVersionsAreSerialised: a new version of a static pod (same
// full name, new UID) starts only after the old one has fully terminated,
// even when the old one is killed after the new one arrived; a pod of
// another name is not held up.
func TestStaticPodVersionsAreSerialised(t *testing.T) {
	k, f, pw, _ := setup(t, time.Second)
	v1, v2 := staticPod(1), staticPod(2)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: v1.UID, Pod: v1})
	if err := k.RunFor(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: v2.UID, Pod: v2})
	other := staticPod(3)
	other.Name = "apiserver"
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: other.UID, Pod: other})
	if err := k.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: v2.UID, Pod: v2}) // still waits
	g := int64(5)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: v1.UID, Pod: v1, GracePeriod: &g})
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s sync gen=1", "+1.5s sync gen=3", "+3.5s terminating grace=5", "+4.5s terminated", "+4.5s sync gen=2"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestTerminalPodIsTerminatedWithItsGrace(t *testing.T) {
	k, f, pw, _ := setup(t, time.Second)
	f.terminal = true
	p := pod(1)
	g := int64(7)
	p.Spec.TerminationGracePeriodSeconds = &g
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: p})
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s sync gen=1", "+1s terminating grace=7", "+2s terminated"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestCreateAfterTerminationRestartsTheWorker(t *testing.T) {
	k, f, pw, _ := setup(t, time.Second)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(1)})
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1"})
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(2)}) // while terminating
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s terminating grace=30", "+1s terminated", "+1s sync gen=2"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if st, _ := pw.State("u1"); st != podworkers.Syncing {
		t.Errorf("state %v, want syncing after the re-add", st)
	}
}

func TestRequeueAfterSyncIsJitteredResync(t *testing.T) {
	k, _, pw, q := setup(t, 0)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(1)})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if due := q.GetDue(); len(due) != 0 {
		t.Fatalf("due too early: %v", due)
	}
	if err := k.RunFor(91 * time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]types.UID{"u1"}, q.GetDue()); diff != "" {
		t.Errorf("due after 1m30s (-want +got):\n%s", diff)
	}
}

// TestFailedTerminationIsRetriedThroughTheQueue: a failed terminating step
// is retried when the work queue says so, the one way a worker is woken
// later, and only then.
func TestFailedTerminationIsRetriedThroughTheQueue(t *testing.T) {
	k, f, pw, q := setup(t, time.Second)
	f.killFailures = 1
	g := int64(5)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", Pod: pod(1), GracePeriod: &g})
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s terminating grace=5", "+1s terminating failed"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Fatalf("before the queue is drained (-want +got):\n%s", diff)
	}
	if q.Len() != 1 {
		t.Fatalf("queue holds %d pods, want the failed one", q.Len())
	}
	for _, uid := range q.GetDue() {
		pw.Requeue(uid)
	}
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	// The retry gets the whole grace again, however late it comes.
	want = append(want, "+1m0s terminating grace=5", "+1m1s terminated")
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("after the retry (-want +got):\n%s", diff)
	}
	if !pw.IsFinished("u1") {
		t.Errorf("worker not finished after a successful retry")
	}
}

// TestRetriedKillGetsTheGraceAgain: a kill retried after a failure gets
// the pod's whole grace period again, as the kubelet's pod worker passes
// the same grace to every SyncTerminatingPod: the runtime may not have
// delivered the first SIGTERM at all (it was down).
func TestRetriedKillGetsTheGraceAgain(t *testing.T) {
	k, f, pw, q := setup(t, time.Second)
	f.killFailures = 1
	g := int64(30)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", Pod: pod(1), GracePeriod: &g})
	if err := k.RunFor(16*time.Second + 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, uid := range q.GetDue() {
		pw.Requeue(uid)
	}
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s terminating grace=30", "+1s terminating failed", "+16.5s terminating grace=30", "+17.5s terminated"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// createOnTerminated is an Observer that hands the pod's worker a Create
// of the same UID right after its terminated step, before the worker
// task takes the lock again: the pod added back (a static pod's manifest
// removed and written back) at the instant its worker finished.
type createOnTerminated struct {
	pw   *podworkers.PodWorkers
	pod  *corev1.Pod
	done bool
}

func (o *createOnTerminated) ObservePodWorker(ref podworkers.PodRef, op podworkers.Operation, _ time.Duration) {
	if op == podworkers.OpTerminated && !o.done {
		o.done = true
		o.pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: ref.UID, Pod: o.pod})
	}
}

func (o *createOnTerminated) ForgetPodWorker(types.UID) {}

// TestCreateAsTheWorkerFinishesRestartsItOnce: a Create of a UID whose
// worker is finishing its terminated step starts the pod again, once,
// on the same worker task — the worker is not reset under its running
// task (which then moved the restarted pod back to terminated, leaving a
// desired pod finished and never run).
func TestCreateAsTheWorkerFinishesRestartsItOnce(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	f := &fakeSyncer{k: k, stepTime: time.Second}
	obs := &createOnTerminated{pod: pod(2)}
	pw := podworkers.New(context.Background(), k.Deps().Core, f, podworkers.NewWorkQueue(k), podworkers.Config{Observer: obs})
	obs.pw = pw
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(1)})
	if err := k.RunFor(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: "u1", Reason: "removed"})
	if err := k.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{"+0s sync gen=1", "+500ms sync cancelled", "+500ms terminating grace=30", "+1.5s terminated", "+1.5s sync gen=2"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if st, _ := pw.State("u1"); st != podworkers.Syncing || pw.IsFinished("u1") {
		t.Errorf("state %v finished %v, want syncing, not finished", st, pw.IsFinished("u1"))
	}
}

// TestSyncNeverStartsAWorker: a resync (a PLEG event, a probe result) of a
// pod the workers were never handed runs nothing, as after an agent
// restart when the runtime's view of a pod comes before its source's add
// and the admission that precedes it; the Create then starts the worker.
func TestSyncNeverStartsAWorker(t *testing.T) {
	k, f, pw, _ := setup(t, time.Second)
	pw.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: "u1", Pod: pod(1)})
	if err := k.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := pw.State("u1"); ok || len(f.calls) != 0 {
		t.Fatalf("a sync of an unknown pod started a worker: steps %v", f.calls)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: "u1", Pod: pod(2)})
	if err := k.RunFor(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: "u1", Pod: pod(3)})
	if err := k.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{"+5s sync gen=2", "+6s sync gen=3"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}
