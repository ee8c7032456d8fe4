package apiserver_test

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// statusWrite sets pod name's phase from the agent side (a patch with
// the pod's UID, which the user side tells without a request).
func statusWrite(ctx context.Context, s *apiserver.Server, name string, phase corev1.PodPhase) (*corev1.Pod, error) {
	p, err := s.User().GetPod("default", name)
	if err != nil {
		return nil, err
	}
	p.Status.Phase = phase
	return patchStatus(ctx, s, p)
}

// agentGet is an agent-side GET whose answer the tests do not look at:
// the configMap "a" (putConfigMap first).
func agentGet(ctx context.Context, s *apiserver.Server) error {
	_, err := s.GetConfigMap(ctx, "default", "a")
	return err
}

func putConfigMap(w *world) {
	w.u.PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
}

func TestFailWrites(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	mustCreate(t, w, newPod("a", "n1"))
	w.s.FailWrites(2, nil)
	errs := call(t, w, func(ctx context.Context) []error {
		_, e1 := statusWrite(ctx, w.s, "a", corev1.PodRunning)
		_, e2 := w.s.CreatePod(ctx, newPod("mirror", "n1"))
		_, e3 := statusWrite(ctx, w.s, "a", corev1.PodRunning)
		return []error{e1, e2, e3}
	})
	if !apierrors.IsInternalError(errs[0]) || !apierrors.IsInternalError(errs[1]) || errs[2] != nil {
		t.Errorf("errors %v; want two InternalErrors then success", errs)
	}
	if _, err := w.u.GetPod("default", "mirror"); !apierrors.IsNotFound(err) {
		t.Errorf("the failed create wrote: %v", err)
	}
	throttled := apierrors.NewTooManyRequests("slow down", 1)
	w.s.FailWrites(1, throttled)
	a := mustGet(t, w, "a")
	err := call(t, w, func(ctx context.Context) error { return w.s.DeletePod(ctx, "default", "a", a.UID) })
	if !errors.Is(err, throttled) || !apierrors.IsTooManyRequests(err) {
		t.Errorf("delete under FailWrites(1, throttled): %v", err)
	}
	mustGet(t, w, "a")
	var verbs []string
	for _, r := range w.s.History() {
		verbs = append(verbs, r.Verb)
	}
	if diff := cmp.Diff([]string{"create", "patchStatus"}, verbs); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestConflicts(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	mustCreate(t, w, newPod("a", "n1"))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "n1"}}
	l := call(t, w, func(ctx context.Context) res[*coordinationv1.Lease] { return mk(w.s.CreateLease(ctx, lease)) })
	if l.err != nil {
		t.Fatal(l.err)
	}
	w.s.Conflicts(1)
	errs := call(t, w, func(ctx context.Context) []error {
		// A status patch carries no resource version to conflict with.
		_, e1 := statusWrite(ctx, w.s, "a", corev1.PodRunning)
		renewed := l.obj.DeepCopy()
		renewed.Spec.HolderIdentity = ptr("n1")
		_, e2 := w.s.UpdateLease(ctx, renewed)
		_, e3 := w.s.UpdateLease(ctx, renewed)
		return []error{e1, e2, e3}
	})
	if errs[0] != nil || !apierrors.IsConflict(errs[1]) || errs[2] != nil {
		t.Errorf("errors %v; want nil, Conflict, nil", errs)
	}
	if got := mustGet(t, w, "a"); got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %q, want Running", got.Status.Phase)
	}
}

func TestLatency(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	mustCreate(t, w, newPod("a", "n1"))
	putConfigMap(w)
	w.s.Latency(apiserver.VerbGet, 3*time.Second)
	type timed struct {
		getTook, listTook time.Duration
		timeoutErr        error
		timeoutTook       time.Duration
	}
	got := call(t, w, func(ctx context.Context) timed {
		var r timed
		start := w.k.Elapsed()
		if err := agentGet(ctx, w.s); err != nil {
			r.timeoutErr = err
			return r
		}
		r.getTook = w.k.Elapsed() - start
		start = w.k.Elapsed()
		if _, _, err := w.s.ListPods(ctx, "n1", ""); err != nil {
			r.timeoutErr = err
			return r
		}
		r.listTook = w.k.Elapsed() - start
		short, cancel := w.k.WithTimeout(ctx, time.Second)
		defer cancel()
		start = w.k.Elapsed()
		r.timeoutErr = agentGet(short, w.s)
		r.timeoutTook = w.k.Elapsed() - start
		return r
	})
	if got.getTook != 3*time.Second || got.listTook != 0 || got.timeoutTook != time.Second ||
		!errors.Is(got.timeoutErr, context.DeadlineExceeded) {
		t.Errorf("get took %v, list %v, get with a 1s deadline took %v and gave %v; want 3s, 0, 1s, deadline exceeded",
			got.getTook, got.listTook, got.timeoutTook, got.timeoutErr)
	}
	w.s.Latency(apiserver.VerbGet, 0)
	start := w.k.Elapsed()
	call(t, w, func(ctx context.Context) error { return agentGet(ctx, w.s) })
	if took := w.k.Elapsed() - start; took != 0 {
		t.Errorf("get after removing the latency took %v", took)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Latency of an unknown verb did not panic")
		}
	}()
	w.s.Latency("patch", time.Second)
}

func TestLatencyLetsOthersWriteFirst(t *testing.T) {
	// A slow status patch is checked when it arrives: a pod recreated
	// meanwhile under the same name fails its UID precondition.
	w := newWorld(t, 1, apiserver.Config{}, false)
	a := mustCreate(t, w, newPod("a", "n1"))[0]
	w.s.Latency(apiserver.VerbPatchStatus, 2*time.Second)
	var slowErr error
	done := false
	w.k.Tasks().Go("slow", func() {
		p := a.DeepCopy()
		p.Status.Phase = corev1.PodRunning
		_, slowErr = patchStatus(context.Background(), w.s, p)
		done = true
	})
	if err := w.k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(0))); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, w, newPod("a", "n1"))
	if err := w.k.Run(); err != nil {
		t.Fatal(err)
	}
	if !done || !apierrors.IsConflict(slowErr) || w.k.Elapsed() != 2*time.Second {
		t.Errorf("slow write: done %v, err %v at %v; want Conflict at 2s", done, slowErr, w.k.Elapsed())
	}
	if p := mustGet(t, w, "a"); p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %q, want Pending", p.Status.Phase)
	}
}

func TestDropWatches(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	pw := call(t, w, func(ctx context.Context) res[deps.PodWatch] { return mk(w.s.WatchPods(ctx, "n1", "")) })
	if pw.err != nil {
		t.Fatal(pw.err)
	}
	mustCreate(t, w, newPod("a", "n1")) // lost with the connection
	w.s.DropWatches()
	mustCreate(t, w, newPod("b", "n1"))
	errs := call(t, w, func(ctx context.Context) []error {
		_, e1 := pw.obj.Next(ctx)
		_, e2 := pw.obj.Next(ctx)
		return []error{e1, e2}
	})
	if !errors.Is(errs[0], io.ErrUnexpectedEOF) || errs[1] == nil {
		t.Errorf("Next after DropWatches: %v, then %v; want a dropped connection, then an error", errs[0], errs[1])
	}
	// Listing and watching again works and sees the rest.
	type relist struct {
		names []string
		ev    seen
		err   error
	}
	r := call(t, w, func(ctx context.Context) relist {
		pods, rv, err := w.s.ListPods(ctx, "n1", "")
		if err != nil {
			return relist{err: err}
		}
		nw, err := w.s.WatchPods(ctx, "n1", rv)
		if err != nil {
			return relist{err: err}
		}
		w.k.Tasks().Go("creator", func() { _, _ = w.s.CreatePod(context.Background(), newPod("c", "n1")) })
		ev, err := nw.Next(ctx)
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		return relist{names, summarize(ev), err}
	})
	if r.err != nil || !cmp.Equal([]string{"a", "b"}, r.names) || r.ev.Name != "c" || r.ev.Type != deps.PodAdded {
		t.Errorf("relist after drop: %v, %+v, %v", r.names, r.ev, r.err)
	}
}

func TestStaleReads(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	mustCreate(t, w, newPod("a", "n1"), newPod("gone", "n1")) // at 0s: RVs 1, 2
	advance(t, w, 10*time.Second)
	if _, err := w.u.SetPodStatus("default", "a", corev1.PodStatus{Phase: corev1.PodRunning}); err != nil { // 10s: RV 3
		t.Fatal(err)
	}
	if err := w.u.DeletePodGracefully("default", "gone", ptr(int64(0))); err != nil { // 10s: RVs 4 (marked), 5 (removed)
		t.Fatal(err)
	}
	advance(t, w, 10*time.Second)
	if _, err := w.u.SetPodStatus("default", "a", corev1.PodStatus{Phase: corev1.PodSucceeded}); err != nil { // 20s: RV 6
		t.Fatal(err)
	}
	mustCreate(t, w, newPod("new", "n1")) // 20s: RV 7
	advance(t, w, 5*time.Second)

	type view struct {
		phase   corev1.PodPhase
		names   []string
		rv      string
		replay  []seen
		staleRV string
		err     error
	}
	read := func() view {
		return call(t, w, func(ctx context.Context) view {
			pods, rv, err := w.s.ListPods(ctx, "n1", "")
			if err != nil {
				return view{err: err}
			}
			v := view{rv: rv}
			for _, q := range pods {
				v.names = append(v.names, q.Name)
				if q.Name == "a" {
					v.phase, v.staleRV = q.Status.Phase, q.ResourceVersion
				}
			}
			if v.staleRV == "" {
				return v // older than every pod
			}
			pw, err := w.s.WatchPods(ctx, "n1", rv)
			if err != nil {
				return view{err: err}
			}
			defer pw.Stop()
			n := 7 - mustAtoi(rv)
			v.replay, v.err = nextN(ctx, pw, n)
			return v
		})
	}
	w.s.StaleReads(15 * time.Second) // as of 10s
	got := read()
	want := view{
		phase: corev1.PodRunning, names: []string{"a"}, rv: "5", staleRV: "3",
		replay: []seen{
			{Type: deps.PodModified, Name: "a", RV: "6", Node: "n1", Phase: corev1.PodSucceeded},
			{Type: deps.PodAdded, Name: "new", RV: "7", Node: "n1", Phase: corev1.PodPending},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(view{})); diff != "" {
		t.Errorf("stale by 15s (-want +got):\n%s", diff)
	}
	w.s.StaleReads(time.Hour) // as of before the first write
	got = read()
	if len(got.names) != 0 {
		t.Errorf("stale by 1h: the list shows %v, created since", got.names)
	}
	// A stale view never reaches behind the window.
	w.s.Compact()
	got = read()
	if got.err != nil || got.phase != corev1.PodSucceeded || got.rv != "7" {
		t.Errorf("stale by 1h after Compact: %+v; want the current state", got)
	}
	// The user always reads fresh.
	w.s.StaleReads(time.Hour)
	if p := mustGet(t, w, "a"); p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("user read is stale: %q", p.Status.Phase)
	}
	w.s.StaleReads(0)
}

func mustAtoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestDown(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	a := mustCreate(t, w, newPod("a", "n1"))[0]
	putConfigMap(w)
	pw := call(t, w, func(ctx context.Context) res[deps.PodWatch] { return mk(w.s.WatchPods(ctx, "n1", "")) })
	if pw.err != nil {
		t.Fatal(pw.err)
	}
	w.s.Down(true)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "n1"}}
	calls := func(ctx context.Context) []error {
		apiserver.NewRecorder(w.s, w.k, corev1.EventSource{Component: "kubelet"}).Event(&corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "a"}, "Normal", "Pulled", "pulled")
		_, watchErr := pw.obj.Next(ctx)
		_, _, e1 := w.s.ListPods(ctx, "n1", "")
		_, e2 := w.s.WatchPods(ctx, "n1", "")
		e3 := agentGet(ctx, w.s)
		_, e4 := patchStatus(ctx, w.s, a)
		e5 := w.s.DeletePod(ctx, "default", "a", a.UID)
		_, e6 := w.s.CreatePod(ctx, newPod("m", "n1"))
		_, e7 := w.s.CreateNode(ctx, node)
		_, e8 := w.s.GetNode(ctx, "n1")
		_, e9 := w.s.PatchNodeStatus(ctx, "n1", []byte(`{"status":{"phase":"Running"}}`))
		_, e10 := w.s.CreateLease(ctx, lease)
		_, e11 := w.s.GetLease(ctx, "kube-node-lease", "n1")
		_, e12 := w.s.UpdateLease(ctx, lease)
		return []error{watchErr, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12}
	}
	errs := call(t, w, calls)
	for i, err := range errs {
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("call %d while down: %v, want connection refused", i, err)
		}
	}
	if ev := w.u.Events(); len(ev) != 0 {
		t.Errorf("events recorded while down: %v", ev)
	}
	// The user side still works; after ClearFaults the agent's calls do.
	if _, err := w.u.GetPod("default", "a"); err != nil {
		t.Errorf("user read while down: %v", err)
	}
	w.s.ClearFaults()
	ok := call(t, w, func(ctx context.Context) error {
		if _, err := w.s.CreateNode(ctx, node); err != nil {
			return err
		}
		return agentGet(ctx, w.s)
	})
	if ok != nil {
		t.Errorf("after ClearFaults: %v", ok)
	}
}

func TestClearFaults(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, true)
	mustCreate(t, w, newPod("a", "n1"))
	w.s.FailWrites(5, nil)
	w.s.Conflicts(5)
	for _, v := range []string{apiserver.VerbGet, apiserver.VerbList, apiserver.VerbPatchStatus} {
		w.s.Latency(v, time.Minute)
	}
	w.s.StaleReads(time.Hour)
	w.s.Flaky(100)
	w.s.Down(true)
	w.s.ClearFaults()
	start := w.k.Elapsed()
	got := call(t, w, func(ctx context.Context) res[*corev1.Pod] { return mk(statusWrite(ctx, w.s, "a", corev1.PodRunning)) })
	if got.err != nil || got.obj.Status.Phase != corev1.PodRunning || w.k.Elapsed() != start {
		t.Errorf("after ClearFaults: %v, %v, took %v", got.obj, got.err, w.k.Elapsed()-start)
	}
}

func TestFlaky(t *testing.T) {
	outcomes := func(seed uint64) []string {
		w := newWorld(t, seed, apiserver.Config{}, true)
		mustCreate(t, w, newPod("a", "n1"))
		putConfigMap(w)
		w.s.Flaky(50)
		return call(t, w, func(ctx context.Context) []string {
			var out []string
			for range 40 {
				err := agentGet(ctx, w.s)
				switch {
				case err == nil:
					out = append(out, "ok")
				case apierrors.IsInternalError(err):
					out = append(out, "internal")
				case apierrors.IsTimeout(err):
					out = append(out, "timeout")
				case apierrors.IsTooManyRequests(err):
					out = append(out, "throttled")
				default:
					out = append(out, "unexpected: "+err.Error())
				}
			}
			return out
		})
	}
	first := outcomes(7)
	counts := map[string]int{}
	for _, o := range first {
		counts[o]++
	}
	if counts["ok"] == 0 || counts["ok"] == 40 || counts["internal"] == 0 || counts["timeout"] == 0 || counts["throttled"] == 0 || len(counts) != 4 {
		t.Errorf("Flaky(50) outcomes over 40 calls: %v", counts)
	}
	if diff := cmp.Diff(first, outcomes(7)); diff != "" {
		t.Errorf("the same seed gave other failures (-first +second):\n%s", diff)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Flaky without Config.Rand did not panic")
		}
	}()
	newWorld(t, 1, apiserver.Config{}, false).s.Flaky(10)
}
