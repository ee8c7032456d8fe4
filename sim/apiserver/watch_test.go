package apiserver_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

func TestListWatchOrderAndResume(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	mustCreate(t, w, newPod("a", "n1"), newPod("b", "n2"), newPod("c", "n1"))

	type listed struct {
		names []string
		rv    string
		watch deps.PodWatch
		err   error
	}
	l := call(t, w, func(ctx context.Context) listed {
		pods, rv, err := w.s.ListPods(ctx, "n1", "")
		if err != nil {
			return listed{err: err}
		}
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		pw, err := w.s.WatchPods(ctx, "n1", rv)
		return listed{names, rv, pw, err}
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	if diff := cmp.Diff([]string{"a", "c"}, l.names); diff != "" {
		t.Errorf("ListPods(n1) names (-want +got):\n%s", diff)
	}
	if l.rv != "3" {
		t.Errorf("list RV = %q, want 3 (three creates)", l.rv)
	}

	// Between runs, the user changes the world; a pod on n2 is not seen.
	a := mustGet(t, w, "a")
	if _, err := w.u.UpdatePodSpec("default", "a", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr(int64(600)) }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.u.UpdatePodSpec("default", "c", func(s *corev1.PodSpec) { s.NodeName = "n2" }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.u.UpdatePodSpec("default", "b", func(s *corev1.PodSpec) { s.NodeName = "n1" }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.u.SetPodStatus("default", "b", corev1.PodStatus{Phase: corev1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, w, newPod("d", "n2"))
	if err := w.u.DeletePodGracefully("default", "a", nil); err != nil {
		t.Fatal(err)
	}

	type result struct {
		events []seen
		err    error
	}
	got := call(t, w, func(ctx context.Context) result {
		if err := w.s.DeletePod(ctx, "default", "a", a.UID); err != nil {
			return result{err: err}
		}
		evs, err := nextN(ctx, l.watch, 6)
		return result{evs, err}
	})
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := []seen{
		{Type: deps.PodModified, Name: "a", RV: "4", Node: "n1", Phase: corev1.PodPending},
		{Type: deps.PodDeleted, Name: "c", RV: "5", Node: "n1", Phase: corev1.PodPending},
		{Type: deps.PodAdded, Name: "b", RV: "6", Node: "n1", Phase: corev1.PodPending},
		{Type: deps.PodModified, Name: "b", RV: "7", Node: "n1", Phase: corev1.PodRunning},
		{Type: deps.PodModified, Name: "a", RV: "9", Node: "n1", Phase: corev1.PodPending, Deleting: true},
		{Type: deps.PodDeleted, Name: "a", RV: "10", Node: "n1", Phase: corev1.PodPending, Deleting: true},
	}
	if diff := cmp.Diff(want, got.events); diff != "" {
		t.Errorf("watch events (-want +got):\n%s", diff)
	}

	// Resuming from the version of any event replays exactly what followed.
	for i := range want {
		rv := want[i].RV
		got := call(t, w, func(ctx context.Context) result {
			pw, err := w.s.WatchPods(ctx, "n1", rv)
			if err != nil {
				return result{err: err}
			}
			defer pw.Stop()
			evs, err := nextN(ctx, pw, len(want)-i-1)
			return result{evs, err}
		})
		if got.err != nil {
			t.Fatalf("resume from %s: %v", rv, got.err)
		}
		if diff := cmp.Diff(want[i+1:], got.events, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("resume from %s (-want +got):\n%s", rv, diff)
		}
	}

	// A watch from "" starts with the current pods of the node.
	fresh := call(t, w, func(ctx context.Context) result {
		pw, err := w.s.WatchPods(ctx, "n1", "")
		if err != nil {
			return result{err: err}
		}
		evs, err := nextN(ctx, pw, 1)
		return result{evs, err}
	})
	wantFresh := []seen{{Type: deps.PodAdded, Name: "b", RV: "7", Node: "n1", Phase: corev1.PodRunning}}
	if fresh.err != nil || !cmp.Equal(wantFresh, fresh.events) {
		t.Errorf("watch from \"\": got %v, %v; want %v", fresh.events, fresh.err, wantFresh)
	}
}

func TestWatchEventsMatchHistory(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	pw := call(t, w, func(ctx context.Context) res[deps.PodWatch] { return mk(w.s.WatchPods(ctx, "n1", "0")) })
	if pw.err != nil {
		t.Fatal(pw.err)
	}
	mustCreate(t, w, newPod("a", "n1"))
	if _, err := w.u.SetPodStatus("default", "a", corev1.PodStatus{Phase: corev1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(0))); err != nil {
		t.Fatal(err)
	}
	// A grace-0 delete of a bound pod is two writes: the mark, then the
	// removal.
	var got []*corev1.Pod
	call(t, w, func(ctx context.Context) error {
		for range 4 {
			ev, err := pw.obj.Next(ctx)
			if err != nil {
				return err
			}
			got = append(got, ev.Pod)
		}
		return nil
	})
	var want []*corev1.Pod
	for _, r := range w.s.History() {
		want = append(want, r.Pod)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watched objects differ from the history's (-history +watched):\n%s", diff)
	}
}

func TestWatchExpiresOutsideTheWindow(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{WatchWindow: 3}, false)
	for i := range 5 {
		mustCreate(t, w, newPod("p"+strconv.Itoa(i), "n1")) // RVs 1..5; the window keeps 3..5
	}
	type result struct {
		events  []seen
		err     error
		lastErr error
	}
	watchFrom := func(rv string, n int) result {
		return call(t, w, func(ctx context.Context) result {
			pw, err := w.s.WatchPods(ctx, "n1", rv)
			if err != nil {
				return result{err: err}
			}
			evs, err := nextN(ctx, pw, n)
			short, cancel := w.k.WithTimeout(ctx, time.Second)
			defer cancel()
			_, last := pw.Next(short)
			return result{evs, err, last}
		})
	}
	old := watchFrom("1", 1)
	if !apierrors.IsResourceExpired(old.err) || len(old.events) != 0 {
		t.Errorf("watch from 1: events %v, err %v; want ResourceExpired at once", old.events, old.err)
	}
	if old.lastErr == nil || errors.Is(old.lastErr, context.DeadlineExceeded) {
		t.Errorf("watch from 1: Next after the error: %v; want the watch closed", old.lastErr)
	}
	inWindow := watchFrom("2", 3)
	if inWindow.err != nil || len(inWindow.events) != 3 || inWindow.events[0].RV != "3" {
		t.Errorf("watch from 2: events %v, err %v; want RVs 3..5", inWindow.events, inWindow.err)
	}

	w.s.Compact()
	if r := watchFrom("4", 1); !apierrors.IsResourceExpired(r.err) {
		t.Errorf("watch from 4 after Compact: err %v, want ResourceExpired", r.err)
	}
	if r := watchFrom("99", 1); !apierrors.IsTimeout(r.err) {
		t.Errorf("watch from a future RV: err %v, want Timeout", r.err)
	}
	if r := watchFrom("x", 1); !apierrors.IsBadRequest(r.err) {
		t.Errorf("watch from \"x\": err %v, want BadRequest", r.err)
	}
	// From the compacted version itself the watch is live.
	type live struct {
		watch deps.PodWatch
		err   error
	}
	l := call(t, w, func(ctx context.Context) live {
		pw, err := w.s.WatchPods(ctx, "n1", "5")
		return live{pw, err}
	})
	mustCreate(t, w, newPod("late", "n1"))
	r := call(t, w, func(ctx context.Context) result {
		evs, err := nextN(ctx, l.watch, 1)
		return result{events: evs, err: err}
	})
	if l.err != nil || r.err != nil || len(r.events) != 1 || r.events[0].Name != "late" {
		t.Errorf("watch from the compacted RV: %v, %v, %v; want ADDED late", l.err, r.events, r.err)
	}
}

func TestSlowWatchIsBroken(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{WatchQueue: 2}, false)
	pw := call(t, w, func(ctx context.Context) res[deps.PodWatch] { return mk(w.s.WatchPods(ctx, "n1", "")) })
	if pw.err != nil {
		t.Fatal(pw.err)
	}
	mustCreate(t, w, newPod("a", "n1"), newPod("b", "n1"))
	mustCreate(t, w, newPod("c", "n1")) // the third undelivered event overflows
	got := call(t, w, func(ctx context.Context) res[deps.PodEvent] { return mk(pw.obj.Next(ctx)) })
	if got.err == nil {
		t.Fatalf("Next on an overflowed watch returned %v, want an error", summarize(got.obj))
	}
}

func TestBlockedNextWakesOnUserWrite(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	var got []seen
	var at []time.Duration
	var stopErr error
	w.k.Tasks().Go("watcher", func() {
		ctx := context.Background()
		pw, err := w.s.WatchPods(ctx, "n1", "")
		if err != nil {
			stopErr = err
			return
		}
		for {
			ev, err := pw.Next(ctx)
			if err != nil {
				stopErr = err
				return
			}
			got = append(got, summarize(ev))
			at = append(at, w.k.Elapsed())
		}
	})
	if err := w.k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || stopErr != nil {
		t.Fatalf("before any pod: events %v, err %v", got, stopErr)
	}
	mustCreate(t, w, newPod("a", "n1"))
	if err := w.k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	want := []seen{{Type: deps.PodAdded, Name: "a", RV: "1", Node: "n1", Phase: corev1.PodPending}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{time.Second}, at); diff != "" {
		t.Errorf("the watcher woke at the wrong time (-want +got):\n%s", diff)
	}
}

func TestStopWakesNextAndCtxEndsIt(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	var stopped, timedOut error
	ts := w.k.Tasks()
	ts.Go("stop", func() {
		pw, err := w.s.WatchPods(context.Background(), "n1", "")
		if err != nil {
			stopped = err
			return
		}
		ts.AfterFunc("stopper", 2*time.Second, pw.Stop)
		_, stopped = pw.Next(context.Background())
	})
	ts.Go("timeout", func() {
		ctx, cancel := w.k.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		pw, err := w.s.WatchPods(ctx, "n1", "")
		if err != nil {
			timedOut = err
			return
		}
		_, timedOut = pw.Next(ctx)
	})
	if err := w.k.Run(); err != nil {
		t.Fatal(err)
	}
	if stopped == nil || timedOut == nil || !errors.Is(timedOut, context.DeadlineExceeded) {
		t.Errorf("Next after Stop: %v; Next past the deadline: %v", stopped, timedOut)
	}
	if w.k.Elapsed() != 3*time.Second {
		t.Errorf("run ended at %v, want 3s", w.k.Elapsed())
	}
}
