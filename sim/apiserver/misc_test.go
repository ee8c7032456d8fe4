package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

func TestNodes(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "ignored", Labels: map[string]string{"zone": "a"}},
		Status:     corev1.NodeStatus{Phase: corev1.NodeRunning},
	}
	type result struct {
		created, updated        *corev1.Node
		dup, missing, stale, ok error
		statusOnly              *corev1.Node
	}
	r := call(t, w, func(ctx context.Context) result {
		var r result
		if _, r.missing = w.s.GetNode(ctx, "n1"); r.missing == nil {
			return r
		}
		if r.created, r.ok = w.s.CreateNode(ctx, node); r.ok != nil {
			return r
		}
		_, r.dup = w.s.CreateNode(ctx, node)
		// Labels are not written through the status subresource.
		patch := []byte(`{"metadata":{"labels":{"zone":"b"}},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
		if r.updated, r.ok = w.s.PatchNodeStatus(ctx, "n1", patch); r.ok != nil {
			return r
		}
		_, r.stale = w.s.PatchNodeStatus(ctx, "n1", []byte(`{"metadata":{"uid":"another"}}`))
		r.statusOnly, r.ok = w.s.GetNode(ctx, "n1")
		return r
	})
	if r.ok != nil {
		t.Fatal(r.ok)
	}
	if !apierrors.IsNotFound(r.missing) || !apierrors.IsAlreadyExists(r.dup) || !apierrors.IsConflict(r.stale) {
		t.Errorf("missing %v, duplicate %v, other UID %v", r.missing, r.dup, r.stale)
	}
	if r.created.UID == "" || r.created.ResourceVersion != "1" || r.created.Namespace != "" || r.created.CreationTimestamp.IsZero() {
		t.Errorf("created node metadata: %+v", r.created.ObjectMeta)
	}
	if r.updated.ResourceVersion != "2" || r.statusOnly.Labels["zone"] != "a" || len(r.statusOnly.Status.Conditions) != 1 {
		t.Errorf("after status update: rv %q labels %v conditions %v", r.updated.ResourceVersion, r.statusOnly.Labels, r.statusOnly.Status.Conditions)
	}
	if nodes := w.u.Nodes(); len(nodes) != 1 || !cmp.Equal(r.statusOnly, nodes[0]) {
		t.Errorf("user Nodes() = %v", nodes)
	}
}

func TestLeases(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "n1"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr("n1"), LeaseDurationSeconds: ptr(int32(40))},
	}
	type result struct {
		created, renewed          *coordinationv1.Lease
		dup, stale, badRV, absent error
		err                       error
	}
	r := call(t, w, func(ctx context.Context) result {
		var r result
		if r.created, r.err = w.s.CreateLease(ctx, lease); r.err != nil {
			return r
		}
		_, r.dup = w.s.CreateLease(ctx, lease)
		withRV := lease.DeepCopy()
		withRV.ResourceVersion = "1"
		_, r.badRV = w.s.CreateLease(ctx, withRV)
		renew := r.created.DeepCopy()
		renew.Spec.RenewTime = &metav1.MicroTime{Time: w.k.Now()}
		if r.renewed, r.err = w.s.UpdateLease(ctx, renew); r.err != nil {
			return r
		}
		_, r.stale = w.s.UpdateLease(ctx, renew)
		_, r.absent = w.s.GetLease(ctx, "kube-node-lease", "n2")
		return r
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !apierrors.IsAlreadyExists(r.dup) || !apierrors.IsBadRequest(r.badRV) || !apierrors.IsConflict(r.stale) || !apierrors.IsNotFound(r.absent) {
		t.Errorf("duplicate %v, create with RV %v, stale %v, absent %v", r.dup, r.badRV, r.stale, r.absent)
	}
	got, err := w.u.GetLease("kube-node-lease", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.renewed, got); diff != "" || got.ResourceVersion != "2" || got.Spec.RenewTime == nil {
		t.Errorf("stored lease (rv %q) differs from the update's answer (-answer +stored):\n%s", got.ResourceVersion, diff)
	}
}

func TestRecorderCorrelatesEvents(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	src := corev1.EventSource{Component: "kubelet", Host: "n1"}
	rec := apiserver.NewRecorder(w.s, w.k, src)
	ref := &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "a", UID: "u1", ResourceVersion: "3"}
	rec.Event(ref, corev1.EventTypeNormal, "Pulled", "pulled image")
	advance(t, w, time.Second)
	later := ref.DeepCopy()
	later.ResourceVersion = "9" // still the same object
	rec.Event(later, corev1.EventTypeNormal, "Pulled", "pulled image")
	rec.Event(ref, corev1.EventTypeWarning, "BackOff", "back-off restarting")
	advance(t, w, time.Second)
	rec.Event(ref, corev1.EventTypeNormal, "Pulled", "pulled image")
	t0 := kernel.DefaultEpoch
	want := []apiserver.Event{
		{Object: *ref, Type: "Normal", Reason: "Pulled", Message: "pulled image", Source: src, Count: 3, First: t0, Last: t0.Add(2 * time.Second)},
		{Object: *ref, Type: "Warning", Reason: "BackOff", Message: "back-off restarting", Source: src, Count: 1, First: t0.Add(time.Second), Last: t0.Add(time.Second)},
	}
	if diff := cmp.Diff(want, w.u.Events(), cmpopts.IgnoreFields(apiserver.Event{}, "Name")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// One create per distinct event, a patch per repetition.
	wantReqs := map[apiserver.Request]int{{Verb: "create", Resource: "events"}: 2, {Verb: "patch", Resource: "events"}: 2}
	if diff := cmp.Diff(wantReqs, w.s.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestRecorderAggregatesAndFiltersSpam(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	rec := apiserver.NewRecorder(w.s, w.k, corev1.EventSource{Component: "kubelet", Host: "n1"})
	ref := &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "a", UID: "u1"}
	// 100 distinct messages of one reason on one object in a second: the
	// spam filter lets a burst of 25 through; from the 10th similar one on
	// they are combined into one aggregate event.
	for i := range 100 {
		rec.Event(ref, corev1.EventTypeWarning, "BackOff", fmt.Sprintf("back-off %d", i))
	}
	reqs := w.s.Requests()
	if n := reqs[apiserver.Request{Verb: "create", Resource: "events"}] + reqs[apiserver.Request{Verb: "patch", Resource: "events"}]; n != 25 {
		t.Errorf("%d event writes for 100 events in a burst, want 25: %v", n, reqs)
	}
	evs := w.u.Events()
	last := evs[len(evs)-1]
	if len(evs) != 10 || !strings.HasPrefix(last.Message, "(combined from similar events)") || last.Count != 16 {
		t.Errorf("%d events, last %q x%d; want 9 single ones and an aggregate of 16", len(evs), last.Message, last.Count)
	}
	// After five minutes the filter has a token again.
	advance(t, w, 5*time.Minute)
	rec.Event(ref, corev1.EventTypeWarning, "BackOff", "back-off again")
	if n := w.s.Requests()[apiserver.Request{Verb: "patch", Resource: "events"}]; n != reqs[apiserver.Request{Verb: "patch", Resource: "events"}]+1 {
		t.Errorf("no write after the filter refilled: %v", w.s.Requests())
	}
}

func TestOnWriteSeesEveryWriteInOrder(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	var seenRecs []apiserver.Record
	var statusAtAnswer []int
	w.s.OnWrite(func(r apiserver.Record) { seenRecs = append(seenRecs, r) })
	mustCreate(t, w, newPod("a", "n1"))
	call(t, w, func(ctx context.Context) error {
		if _, err := w.s.CreateNode(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}); err != nil {
			return err
		}
		_, err := statusWrite(ctx, w.s, "a", corev1.PodRunning)
		statusAtAnswer = append(statusAtAnswer, len(seenRecs)) // the observer ran before the answer
		return err
	})
	if err := w.u.DeletePodGracefully("default", "a", nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w.s.History(), seenRecs); diff != "" {
		t.Errorf("observed records differ from the history (-history +observed):\n%s", diff)
	}
	var summary []string
	for i, r := range seenRecs {
		if r.RV != uint64(i+1) {
			t.Errorf("record %d has RV %d", i, r.RV)
		}
		summary = append(summary, fmt.Sprintf("%s %s %s %s", r.Actor, r.Verb, r.Kind, r.Name))
	}
	want := []string{"user create Pod a", "agent create Node n1", "agent patchStatus Pod a", "user gracefulDelete Pod a"}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3}, statusAtAnswer); diff != "" {
		t.Errorf("records observed when the status write answered (-want +got):\n%s", diff)
	}
}

// scripted is a small world of agent tasks racing on the server under
// faults, with user actions between runs. It returns what the server saw.
func scripted(t *testing.T, seed uint64) ([]apiserver.Record, []apiserver.Event) {
	t.Helper()
	w := newWorld(t, seed, apiserver.Config{WatchWindow: 20}, true)
	s, ts := w.s, w.k.Tasks()
	rec := apiserver.NewRecorder(s, w.k, corev1.EventSource{Component: "kubelet", Host: "n1"})
	for i := range 6 {
		mustCreate(t, w, newPod(fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", 1+i%2)))
	}
	ctx, cancel := ts.WithCancel(context.Background())
	ts.Go("lease", func() {
		l, err := s.CreateLease(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "n1"}})
		for ctx.Err() == nil {
			if err == nil {
				renew := l.DeepCopy()
				renew.Spec.RenewTime = &metav1.MicroTime{Time: w.k.Now()}
				l, err = s.UpdateLease(ctx, renew)
			} else {
				l, err = s.GetLease(ctx, "kube-node-lease", "n1")
			}
			_ = ts.Sleep(ctx, 3*time.Second)
		}
	})
	for i := range 6 {
		name := fmt.Sprintf("p%d", i)
		ts.Go("sync-"+name, func() {
			for round := 0; ctx.Err() == nil; round++ {
				p, err := s.User().GetPod("default", name)
				if err == nil {
					p.Status.Phase = corev1.PodRunning
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: int32(round / 3)}}
					_, err = patchStatus(ctx, s, p)
				}
				if err != nil && ctx.Err() == nil {
					rec.Event(&corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name}, "Warning", "StatusFailed", err.Error())
				}
				_ = ts.Sleep(ctx, time.Second)
			}
		})
	}
	// The node's pod loop: list, watch, finish graceful deletions.
	ts.Go("pods-n1", func() {
		for ctx.Err() == nil {
			_, rv, err := s.ListPods(ctx, "n1", "")
			if err != nil {
				_ = ts.Sleep(ctx, time.Second)
				continue
			}
			pw, err := s.WatchPods(ctx, "n1", rv)
			for err == nil {
				ev, nextErr := pw.Next(ctx)
				if err = nextErr; err == nil && ev.Pod.DeletionTimestamp != nil {
					_ = s.DeletePod(ctx, ev.Pod.Namespace, ev.Pod.Name, ev.Pod.UID)
				}
			}
		}
	})
	step := func(d time.Duration) {
		t.Helper()
		if err := w.k.RunFor(d); err != nil {
			t.Fatal(err)
		}
	}
	step(5 * time.Second)
	s.Conflicts(3)
	s.Flaky(20)
	step(10 * time.Second)
	s.DropWatches()
	for _, name := range []string{"p0", "p2"} {
		if err := w.u.DeletePodGracefully("default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.StaleReads(2 * time.Second)
	step(10 * time.Second)
	s.ClearFaults()
	s.Latency(apiserver.VerbUpdate, time.Second)
	s.Down(true)
	step(5 * time.Second)
	s.Down(false)
	step(10 * time.Second)
	cancel()
	if err := w.k.Run(); err != nil {
		t.Fatal(err)
	}
	return s.History(), w.u.Events()
}

func TestSameScriptSameHistory(t *testing.T) {
	h1, e1 := scripted(t, 42)
	h2, e2 := scripted(t, 42)
	if diff := cmp.Diff(h1, h2); diff != "" {
		t.Errorf("histories of two identical runs differ (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(e1, e2); diff != "" {
		t.Errorf("events of two identical runs differ (-first +second):\n%s", diff)
	}
	verbs := map[string]int{}
	for _, r := range h1 {
		verbs[r.Actor+" "+r.Verb+" "+r.Kind]++
	}
	for _, v := range []string{"agent patchStatus Pod", "agent update Lease", "agent delete Pod", "user gracefulDelete Pod"} {
		if verbs[v] == 0 {
			t.Errorf("the script never did %q: %v", v, verbs)
		}
	}
	if len(e1) == 0 {
		t.Errorf("the script's faults caused no failure event")
	}
	h3, _ := scripted(t, 7)
	if cmp.Equal(h1, h3) {
		t.Errorf("seeds 42 and 7 gave the same history")
	}
}
