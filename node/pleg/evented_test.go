package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func newEventedWorld(t *testing.T, seed uint64) (*world, *fakeEvents) {
	fe := &fakeEvents{}
	w := newWorld(t, seed, Config{UseEvents: true}, fe)
	fe.tasks = w.k.Tasks()
	return w, fe
}

func TestEventedMode(t *testing.T) {
	w, fe := newEventedWorld(t, 12)
	twoPods(w.rt)
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	defer cancel()
	w.p.Start(ctx)
	w.advance(10 * time.Second)
	// One relist at start, one after the subscription; then none for
	// EventedRelistPeriod.
	if w.rt.fullLists != 2 || fe.subscribes != 1 {
		t.Fatalf("after 10s: %d full relists, %d subscriptions; want 2 and 1", w.rt.fullLists, fe.subscribes)
	}
	if ok, err := w.p.Healthy(); !ok {
		t.Errorf("unhealthy: %v", err)
	}
	w.drain()

	// An event makes the PLEG relist that pod at once.
	w.rt.setState("a-side", exited)
	fe.send(w.rt, "a", "a-side", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	w.k.RunFor(0)
	if diff := cmp.Diff([]Event{ev("a", ContainerDied, "side", "a-side")}, w.drain()); diff != "" {
		t.Errorf("events after a container event (-want +got):\n%s", diff)
	}
	if st, _ := w.p.Cache().Get("a"); !st.Timestamp.Equal(at(10 * time.Second)) {
		t.Errorf("pod a's entry at %v, want 10s", st.Timestamp)
	}
	// A sandbox event (containerd reports sandboxes as containers).
	w.rt.sandboxes["sb-b-0"].State = stopped
	fe.send(w.rt, "b", "sb-b-0", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	w.k.RunFor(0)
	if diff := cmp.Diff([]Event{{UID: "b", Type: PodSync}}, w.drain()); diff != "" {
		t.Errorf("events after a sandbox event (-want +got):\n%s", diff)
	}
	if w.rt.fullLists != 2 {
		t.Errorf("events caused full relists: %d", w.rt.fullLists)
	}

	// A reader that would wait refreshes the pod itself: the global
	// timestamp (0 s) moves only every 300 s.
	w.advance(10 * time.Second) // 20 s
	var got *podstate.PodStatus
	var gotAt time.Time
	w.do(func(ctx context.Context) {
		got, _ = w.p.Cache().GetNewerThan(ctx, "a", w.now())
		gotAt = w.now()
	})
	if want := at(20*time.Second + time.Nanosecond); got == nil || !gotAt.Equal(want) || !got.Timestamp.Equal(want) {
		t.Errorf("evented GetNewerThan: %+v at %v; want a status of %v then", got, gotAt, want)
	}

	// 299 s after the last full relist the PLEG is still healthy.
	w.advance(4*time.Minute + 39*time.Second) // 4m59s
	if ok, err := w.p.Healthy(); !ok {
		t.Errorf("unhealthy in evented mode: %v", err)
	}
	w.advance(2 * time.Second) // 5m01s: the periodic full relist at 5m
	if w.rt.fullLists != 3 {
		t.Errorf("%d full relists by 5m01s, want 3", w.rt.fullLists)
	}

	// The stream breaks: relisting every second at once, a new
	// subscription after 1 s, then evented again.
	fe.fail()
	w.advance(500 * time.Millisecond)
	if w.rt.fullLists != 4 {
		t.Errorf("no relist right after the stream broke: %d full relists", w.rt.fullLists)
	}
	// At 5m02s: the periodic relist, and the one after resubscribing.
	w.advance(time.Second)
	if fe.subscribes != 2 || w.rt.fullLists != 6 {
		t.Errorf("after the stream broke: %d subscriptions, %d full relists; want 2 and 6", fe.subscribes, w.rt.fullLists)
	}
	w.advance(time.Minute)
	if w.rt.fullLists != 6 {
		t.Errorf("relisting every second although the stream is back: %d", w.rt.fullLists)
	}

	// An event about an object nobody knows asks for a full relist.
	fe.cur.in.Put(fakeItem{ev: &runtimeapi.ContainerEventResponse{ContainerId: "mystery"}})
	w.advance(1500 * time.Millisecond)
	if w.rt.fullLists != 7 {
		t.Errorf("unknown object: %d full relists, want 7", w.rt.fullLists)
	}
}

// TestEventedFallback: when subscribing fails (a runtime without
// GetContainerEvents), the PLEG relists every second and retries the
// subscription with a backoff.
func TestEventedFallback(t *testing.T) {
	w, fe := newEventedWorld(t, 13)
	fe.subErr = errors.New("unimplemented")
	twoPods(w.rt)
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	defer cancel()
	w.p.Start(ctx)
	w.advance(20*time.Second + time.Millisecond)
	// Relists at 0, 1, ..., 20 s; subscriptions at 0, 1, 3, 7, 15 s.
	if w.rt.fullLists != 21 || fe.subscribes != 5 {
		t.Errorf("%d full relists, %d subscriptions; want 21 and 5", w.rt.fullLists, fe.subscribes)
	}
	w.drain()
	w.rt.setState("a-side", exited)
	w.advance(time.Second)
	if diff := cmp.Diff([]Event{ev("a", ContainerDied, "side", "a-side")}, w.drain()); diff != "" {
		t.Errorf("events while relisting (-want +got):\n%s", diff)
	}
	// The runtime learns events: the next subscription switches to
	// evented mode.
	fe.subErr = nil
	w.advance(20 * time.Second)
	lists := w.rt.fullLists
	w.advance(time.Minute)
	if fe.cur == nil || w.rt.fullLists != lists {
		t.Errorf("not evented after a successful subscription: %d full relists in a minute", w.rt.fullLists-lists)
	}
}

// TestSameSeedSameRun runs a busy scenario (many pods changing, a failing
// pod, a hung pod, events, a stream failure, waiting readers) twice per
// seed: the traces and the event sequences must be identical, which they
// would not be if map order leaked into scheduling or output.
func TestSameSeedSameRun(t *testing.T) {
	run := func(seed uint64) (string, string) {
		w, fe := newEventedWorld(t, seed)
		for _, uid := range []string{"a", "b", "c", "d", "e", "f"} {
			sb := w.rt.addSandbox(uid, 0)
			w.rt.addContainer(uid, sb, "app", uid+"-app", running, 0)
			w.rt.addContainer(uid, sb, "side", uid+"-side", running, 0)
		}
		ctx, cancel := w.k.Tasks().WithCancel(context.Background())
		defer cancel()
		w.p.Start(ctx)
		for _, uid := range []string{"a", "c", "e"} {
			w.k.Tasks().Go("reader-"+uid, func() {
				for ctx.Err() == nil {
					if _, err := w.p.Cache().GetNewerThan(ctx, types.UID(uid), w.now()); err != nil {
						return
					}
					w.k.Sleep(700 * time.Millisecond)
				}
			})
		}
		w.advance(3 * time.Second)
		w.rt.statusErr["b-app"] = errors.New("boom")
		w.rt.hang["d-side"] = true
		for _, id := range []string{"b-app", "d-side", "f-app", "a-side", "c-app"} {
			w.rt.setState(id, exited)
		}
		delete(w.rt.containers, "e-app")
		fe.fail()
		w.advance(3 * time.Minute)
		delete(w.rt.statusErr, "b-app")
		w.rt.hang["d-side"] = false
		fe.send(w.rt, "f", "f-app", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		w.advance(10 * time.Minute)
		return w.k.Trace().Hash(), eventsString(w.drain())
	}
	for _, seed := range []uint64{1, 2, 3} {
		h1, e1 := run(seed)
		h2, e2 := run(seed)
		if h1 != h2 || e1 != e2 {
			t.Errorf("seed %d: two runs differ: trace %s vs %s\n%s\nvs\n%s", seed, h1, h2, e1, e2)
		}
		if seed == 1 {
			t.Logf("events:\n%s", e1)
		}
	}
}
