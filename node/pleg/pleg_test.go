package pleg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

var epoch = kernel.DefaultEpoch

func at(d time.Duration) time.Time { return epoch.Add(d) }

// twoPods fills the runtime with pod a (an exited and a restarted app
// container, a sidecar) and pod b (a created container), plus a container
// that is not the agent's.
func twoPods(rt *fakeRuntime) {
	rt.addSandbox("a", 0)
	rt.addContainer("a", "sb-a-0", "app", "a-app-0", exited, 0)
	rt.addContainer("a", "sb-a-0", "app", "a-app-1", running, 1)
	rt.addContainer("a", "sb-a-0", "side", "a-side", running, 0)
	rt.addSandbox("b", 0)
	rt.addContainer("b", "sb-b-0", "app", "b-app", created, 0)
	rt.addContainer("x", "sb-x", "foreign", "foreign", running, 0)
	delete(rt.containers["foreign"].status.Labels, podstate.LabelPodUID)
}

func TestRelistBuildsCacheAndEvents(t *testing.T) {
	w := newWorld(t, 1, Config{})
	twoPods(w.rt)
	w.advance(5 * time.Second)
	w.relist()

	want := []Event{
		ev("a", ContainerDied, "app", "a-app-0"),
		ev("a", ContainerStarted, "app", "a-app-1"),
		ev("a", ContainerStarted, "side", "a-side"),
		ev("b", ContainerChanged, "app", "b-app"),
	}
	if diff := cmp.Diff(want, w.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	ts := func(id string) time.Time { return podstate.TimeFromCRI(w.rt.containers[id].status.CreatedAt) }
	wantA := &podstate.PodStatus{
		UID: "a", Name: "p-a", Namespace: "ns", Timestamp: at(5 * time.Second),
		Sandboxes: []podstate.Sandbox{{
			ID: "sb-a-0", State: podstate.SandboxReady, IP: "10.0.0.1",
			CreatedAt: podstate.TimeFromCRI(w.rt.sandboxes["sb-a-0"].CreatedAt),
		}},
		Containers: []podstate.Container{ // newest first
			{ID: "a-side", Name: "side", SandboxID: "sb-a-0", State: podstate.ContainerRunning, CreatedAt: ts("a-side"), Image: "img:side", Hash: "hash-side"},
			{ID: "a-app-1", Name: "app", SandboxID: "sb-a-0", State: podstate.ContainerRunning, CreatedAt: ts("a-app-1"), Image: "img:app", Hash: "hash-app", RestartCount: 1},
			{ID: "a-app-0", Name: "app", SandboxID: "sb-a-0", State: podstate.ContainerExited, CreatedAt: ts("a-app-0"), Image: "img:app", Hash: "hash-app"},
		},
	}
	got, ok := w.p.Cache().Get("a")
	if !ok {
		t.Fatalf("pod a not cached")
	}
	if diff := cmp.Diff(wantA, got); diff != "" {
		t.Errorf("status of pod a (-want +got):\n%s", diff)
	}
	if st, ok := w.p.Cache().Get("b"); !ok || len(st.Containers) != 1 || st.Containers[0].State != podstate.ContainerCreated {
		t.Errorf("status of pod b: %+v %v", st, ok)
	}
	if _, ok := w.p.Cache().Get("x"); ok {
		t.Errorf("the foreign container made a pod")
	}
	for _, id := range w.rt.statusLog {
		if id == "foreign" {
			t.Errorf("status asked for a container without the pod UID label")
		}
	}
	if got := w.p.LastRelist(); !got.Equal(at(5 * time.Second)) {
		t.Errorf("LastRelist = %v, want %v", got, at(5*time.Second))
	}
}

func TestOnlyChangedPodsAreInspected(t *testing.T) {
	w := newWorld(t, 2, Config{})
	for i := range 5 {
		uid := fmt.Sprintf("p%d", i)
		sb := w.rt.addSandbox(uid, 0)
		w.rt.addContainer(uid, sb, "app", uid+"-app", running, 0)
	}
	w.relist()
	w.drain()

	w.rt.statusLog = nil
	w.relist()
	if len(w.rt.statusLog) != 0 || len(w.drain()) != 0 {
		t.Errorf("nothing changed, yet status calls %v", w.rt.statusLog)
	}

	w.rt.setState("p3-app", exited)
	w.rt.sandboxes["sb-p1-0"].State = stopped
	w.relist()
	if diff := cmp.Diff([]string{"sb-p1-0", "p1-app", "sb-p3-0", "p3-app"}, w.rt.statusLog); diff != "" {
		t.Errorf("status calls (-want +got):\n%s", diff)
	}
	want := []Event{{UID: "p1", Type: PodSync}, ev("p3", ContainerDied, "app", "p3-app")}
	if diff := cmp.Diff(want, w.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if st, _ := w.p.Cache().Get("p1"); st.Sandboxes[0].State != podstate.SandboxNotReady {
		t.Errorf("sandbox-only change not in the cache: %+v", st.Sandboxes)
	}
}

// TestEventOrderIsDeterministic builds the same runtime twice, listing in
// opposite orders under different seeds: the events come out the same,
// sorted by pod UID, then container name, then container ID.
func TestEventOrderIsDeterministic(t *testing.T) {
	run := func(seed uint64, reverse bool) string {
		w := newWorld(t, seed, Config{})
		w.rt.reverse = reverse
		for _, uid := range []string{"m", "c", "x", "a", "q"} {
			sb := w.rt.addSandbox(uid, 0)
			for _, name := range []string{"z", "b", "k"} {
				w.rt.addContainer(uid, sb, name, uid+"-"+name, running, 0)
			}
		}
		w.relist()
		first := w.drain()
		for _, id := range []string{"x-z", "x-b", "a-k", "q-b"} {
			w.rt.setState(id, exited)
		}
		delete(w.rt.containers, "m-k")
		delete(w.rt.containers, "c-z")
		w.rt.sandboxes["sb-q-0"].State = stopped
		w.relist()
		return eventsString(first) + "--\n" + eventsString(w.drain())
	}
	one, two := run(1, false), run(99, true)
	if one != two {
		t.Errorf("event order depends on list order or seed:\n%s\nvs\n%s", one, two)
	}
	second := strings.SplitN(one, "--\n", 2)[1]
	want := "a ContainerDied k/a-k\n" +
		"c ContainerDied z/c-z\nc ContainerRemoved z/c-z\n" +
		"m ContainerDied k/m-k\nm ContainerRemoved k/m-k\n" +
		"q ContainerDied b/q-b\n" +
		"x ContainerDied b/x-b\nx ContainerDied z/x-z\n"
	if second != want {
		t.Errorf("second relist events:\n%s\nwant:\n%s", second, want)
	}
}

// TestGetNewerThan checks the "newer than" rule, blocking and wake-ups,
// with the relist loop running every second from t=0.
func TestGetNewerThan(t *testing.T) {
	w := newWorld(t, 3, Config{})
	twoPods(w.rt)
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	defer cancel()
	w.p.Start(ctx)
	if err := w.k.RunFor(2500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}

	type result struct {
		at  time.Duration
		ts  time.Time
		n   int
		err error
	}
	results := map[string]*result{}
	wait := func(name string, uid types.UID, minTime time.Time, timeout time.Duration) {
		w.k.Tasks().Go("waiter-"+name, func() {
			c, cancel := w.k.WithTimeout(context.Background(), timeout)
			defer cancel()
			st, err := w.p.Cache().GetNewerThan(c, uid, minTime)
			r := &result{at: w.k.Elapsed(), err: err}
			if st != nil {
				r.ts, r.n = st.Timestamp, len(st.Containers)
			}
			results[name] = r
		})
	}
	now := w.now()                                              // 2.5 s; the last relist was at 2 s
	wait("old", "a", at(time.Second), time.Minute)              // the entry (0 s) is older, the global (2 s) newer
	wait("entry-newer", "a", at(-time.Second), time.Minute)     // the entry itself is newer
	wait("after-action", "a", now, time.Minute)                 // must wait for the relist at 3 s
	wait("unchanged-pod", "b", now, time.Minute)                // woken by the global stamp at 3 s
	wait("unknown-pod", "nope", now, time.Minute)               // empty status at 3 s
	wait("at-relist", "a", at(3*time.Second), time.Minute)      // a status read at 3 s is not newer than 3 s
	wait("cancelled", "a", at(time.Hour), 200*time.Millisecond) // gives up
	if err := w.k.RunFor(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := map[string]*result{
		"old":           {at: 2500 * time.Millisecond, ts: at(0), n: 3},
		"entry-newer":   {at: 2500 * time.Millisecond, ts: at(0), n: 3},
		"after-action":  {at: 3 * time.Second, ts: at(0), n: 3},
		"unchanged-pod": {at: 3 * time.Second, ts: at(0), n: 1},
		"unknown-pod":   {at: 3 * time.Second, ts: at(3 * time.Second)},
		"at-relist":     {at: 4 * time.Second, ts: at(0), n: 3},
		"cancelled":     {at: 2700 * time.Millisecond, err: context.DeadlineExceeded},
	}
	if diff := cmp.Diff(want, results, cmp.AllowUnexported(result{}), cmp.Comparer(func(a, b error) bool {
		return (a == nil) == (b == nil) && (a == nil || errors.Is(a, b) || errors.Is(b, a))
	})); diff != "" {
		t.Errorf("GetNewerThan results (-want +got):\n%s", diff)
	}
	if len(w.p.cache.waiters) != 0 {
		t.Errorf("waiters left behind: %v", w.p.cache.waiters)
	}
}

// TestGetNewerThanWokenByPodRefresh: a waiter on a pod that changes is woken
// by that pod's new entry, and sees the change.
func TestGetNewerThanWokenByPodRefresh(t *testing.T) {
	w := newWorld(t, 4, Config{})
	twoPods(w.rt)
	w.relist()
	w.advance(time.Second)
	var got *podstate.PodStatus
	var gotAt time.Duration
	w.k.Tasks().Go("waiter", func() {
		got, _ = w.p.Cache().GetNewerThan(context.Background(), "a", w.now())
		gotAt = w.k.Elapsed()
	})
	w.advance(time.Second)
	if got != nil {
		t.Fatalf("GetNewerThan returned before any relist: %+v", got)
	}
	w.rt.setState("a-side", exited)
	w.relist()
	if got == nil || gotAt != 2*time.Second || !got.Timestamp.Equal(at(2*time.Second)) {
		t.Fatalf("waiter got %+v at %v", got, gotAt)
	}
	if c, _ := got.Latest("side"); c.State != podstate.ContainerExited {
		t.Errorf("waiter saw side %v, want exited", c.State)
	}
}

func TestRelistErrorKeepsState(t *testing.T) {
	w := newWorld(t, 5, Config{})
	twoPods(w.rt)
	w.relist()
	w.drain()
	before, _ := w.p.Cache().Get("a")

	w.advance(time.Second)
	w.rt.listErr = errors.New("runtime down")
	w.rt.setState("a-side", exited)
	var err error
	w.do(func(ctx context.Context) { err = w.p.Relist(ctx) })
	if err == nil || !strings.Contains(err.Error(), "runtime down") {
		t.Fatalf("Relist error = %v, want the list error", err)
	}
	if evs := w.drain(); len(evs) != 0 {
		t.Errorf("a failed relist emitted %v", evs)
	}
	if after, _ := w.p.Cache().Get("a"); after != before {
		t.Errorf("a failed relist changed the cache")
	}
	if !w.p.cache.global.Equal(at(0)) || !w.p.LastRelist().Equal(at(0)) {
		t.Errorf("a failed relist moved the global timestamp to %v or LastRelist to %v", w.p.cache.global, w.p.LastRelist())
	}

	w.advance(time.Second)
	w.rt.listErr = nil
	w.relist()
	if diff := cmp.Diff([]Event{ev("a", ContainerDied, "side", "a-side")}, w.drain()); diff != "" {
		t.Errorf("events after recovery (-want +got):\n%s", diff)
	}
	if st, _ := w.p.Cache().Get("a"); !st.Timestamp.Equal(at(2 * time.Second)) {
		t.Errorf("pod a's entry at %v, want 2s", st.Timestamp)
	}
}

func TestHealth(t *testing.T) {
	w := newWorld(t, 6, Config{})
	twoPods(w.rt)
	if ok, err := w.p.Healthy(); ok || err == nil {
		t.Errorf("healthy before any relist")
	}
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	defer cancel()
	w.p.Start(ctx)
	w.advance(10 * time.Second)
	if ok, err := w.p.Healthy(); !ok {
		t.Errorf("unhealthy while relisting: %v", err)
	}
	w.rt.listErr = errors.New("runtime down")
	w.advance(3 * time.Minute)
	if ok, err := w.p.Healthy(); !ok {
		t.Errorf("unhealthy exactly 3m after the last relist: %v", err)
	}
	w.advance(time.Second)
	ok, err := w.p.Healthy()
	if ok || err == nil || !strings.Contains(err.Error(), "3m1s") {
		t.Errorf("Healthy() = %v, %v; want false saying 3m1s", ok, err)
	}
	w.rt.listErr = nil
	w.advance(time.Second)
	if ok, err := w.p.Healthy(); !ok {
		t.Errorf("still unhealthy after the runtime came back: %v", err)
	}
}

// TestPodFailureIsolation: one pod's status calls fail; the others go on,
// the failing pod keeps its entry, is stale for the global timestamp, and
// its events come out once it is refreshed.
func TestPodFailureIsolation(t *testing.T) {
	w := newWorld(t, 7, Config{})
	twoPods(w.rt)
	w.relist()
	w.drain()
	old, _ := w.p.Cache().Get("a")

	w.advance(time.Second) // t = 1 s
	w.rt.statusErr["a-side"] = errors.New("boom")
	w.rt.setState("a-side", exited)
	w.rt.setState("b-app", running)
	w.relist()
	if diff := cmp.Diff([]Event{ev("b", ContainerStarted, "app", "b-app")}, w.drain()); diff != "" {
		t.Errorf("events with pod a failing (-want +got):\n%s", diff)
	}
	if st, _ := w.p.Cache().Get("a"); st != old {
		t.Errorf("pod a's entry replaced although its refresh failed")
	}
	if st, _ := w.p.Cache().Get("b"); !st.Timestamp.Equal(at(time.Second)) {
		t.Errorf("pod b not refreshed: %v", st.Timestamp)
	}
	// The global timestamp (1 s) is past 0.5 s, but it does not vouch for a.
	var got *podstate.PodStatus
	var gotAt time.Duration
	w.k.Tasks().Go("worker-a", func() {
		got, _ = w.p.Cache().GetNewerThan(context.Background(), "a", at(500*time.Millisecond))
		gotAt = w.k.Elapsed()
	})
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	defer cancel()
	w.p.Start(ctx)
	w.advance(10 * time.Second) // t = 11 s
	if got != nil {
		t.Fatalf("GetNewerThan returned a stale pod's status: %+v", got)
	}
	tries := 0
	for _, id := range w.rt.statusLog {
		if id == "a-side" {
			tries++
		}
	}
	// The first relist at 0 s, then failing tries: the manual relist and
	// the loop's first at 1 s, then after backoffs of 2 s and 4 s at 3 s and
	// 7 s; the next is due at 15 s (8 s).
	if tries != 5 {
		t.Errorf("pod a's container status asked %d times, want 5 (backoff)", tries)
	}
	delete(w.rt.statusErr, "a-side")
	w.advance(10 * time.Second)
	if got == nil || gotAt != 15*time.Second || !got.Timestamp.Equal(at(15*time.Second)) {
		t.Fatalf("GetNewerThan got %+v at %v, want a status of 15s at 15s", got, gotAt)
	}
	if c, _ := got.Latest("side"); c.State != podstate.ContainerExited {
		t.Errorf("pod a's refreshed status shows side %v", c.State)
	}
	if diff := cmp.Diff([]Event{ev("a", ContainerDied, "side", "a-side")}, w.drain()); diff != "" {
		t.Errorf("held events (-want +got):\n%s", diff)
	}
	if _, stale := w.p.cache.stale["a"]; stale || len(w.p.retry) != 0 {
		t.Errorf("pod a still stale (%v) or retried (%v)", stale, w.p.retry)
	}
}

// TestHungPodDoesNotStallTheLoop: one pod's status call hangs (upstream
// #94829). The loop stalls once, for PodStatusTimeout, then goes on
// relisting every second while a probe retries the hung pod; the node stays
// healthy throughout.
func TestHungPodDoesNotStallTheLoop(t *testing.T) {
	w := newWorld(t, 8, Config{})
	twoPods(w.rt)
	w.rt.addSandbox("c", 0)
	w.rt.addContainer("c", "sb-c-0", "app", "c-app", running, 0)
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	defer cancel()
	w.p.Start(ctx)
	w.advance(time.Second)
	w.drain()

	// At 1.5 s all three pods change; the status calls of pods a and c
	// now hang.
	w.advance(500 * time.Millisecond)
	w.rt.hang["a-side"] = true
	w.rt.hang["c-app"] = true
	w.rt.setState("a-side", exited)
	w.rt.setState("c-app", exited)
	w.rt.setState("b-app", running)

	var unhealthy []string
	healthy := func() {
		if ok, err := w.p.Healthy(); !ok {
			unhealthy = append(unhealthy, fmt.Sprintf("%v: %v", w.k.Elapsed(), err))
		}
	}
	bRefreshed := func() bool {
		healthy()
		st, _ := w.p.Cache().Get("b")
		return st.Timestamp.After(at(time.Second))
	}
	if err := w.k.RunUntil(bRefreshed, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The relist at 2 s hung on pod a (sorted first) until 2 min 2 s, which
	// spent its refresh budget: pods b and c were deferred to the relist
	// right after, which refreshed b, then hung on c until 4 min 2 s. Its
	// lists ran at 2 min 2 s, so the PLEG stayed healthy.
	if bAt := w.k.Elapsed(); bAt != 2*time.Minute+2*time.Second {
		t.Errorf("pod b refreshed at %v, want 2m2s", bAt)
	}
	if err := w.k.RunUntil(func() bool { healthy(); return w.k.Elapsed() >= 10*time.Minute }, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(unhealthy) != 0 {
		t.Errorf("unhealthy while pods hung: %v", unhealthy)
	}
	// After the stall the loop relisted every second again.
	if last := w.p.LastRelist(); w.now().Sub(last) > time.Second {
		t.Errorf("last relist at %v, now %v", last, w.now())
	}
	// The probe retried a (each try hangs for PodStatusTimeout) far less
	// often than the ~480 relists since.
	hung := 0
	for _, err := range w.rt.statusErrs {
		if errors.Is(err, context.DeadlineExceeded) {
			hung++
		}
	}
	if hung < 4 || hung > 10 {
		t.Errorf("%d hung status calls, want a few (one inline per pod, then the probes')", hung)
	}
	evs := w.drain()
	if diff := cmp.Diff([]Event{ev("b", ContainerStarted, "app", "b-app")}, evs); diff != "" {
		t.Errorf("events while a hangs (-want +got):\n%s", diff)
	}

	// Pods a and c answer again: the probes notice, the loop refreshes them
	// and emits their held events.
	w.rt.hang["a-side"] = false
	w.rt.hang["c-app"] = false
	w.advance(6 * time.Minute)
	want := []Event{ev("a", ContainerDied, "side", "a-side"), ev("c", ContainerDied, "app", "c-app")}
	if diff := cmp.Diff(want, w.drain(), cmpopts.SortSlices(func(a, b Event) bool { return compareEvents(a, b) < 0 })); diff != "" {
		t.Errorf("events after a and c recovered (-want +got):\n%s", diff)
	}
	for _, uid := range []types.UID{"a", "c"} {
		if st, _ := w.p.Cache().Get(uid); st == nil || st.Timestamp.Before(at(10*time.Minute)) {
			t.Errorf("pod %s not refreshed after it recovered: %+v", uid, st)
		}
		if _, stale := w.p.cache.stale[uid]; stale {
			t.Errorf("pod %s still stale", uid)
		}
	}
	if len(w.p.retry) != 0 {
		t.Errorf("pods still to retry: %v", w.p.retry)
	}
}

func TestRefreshPod(t *testing.T) {
	w := newWorld(t, 9, Config{})
	twoPods(w.rt)
	w.relist()
	w.drain()
	w.advance(500 * time.Millisecond)
	w.rt.setState("a-side", exited)
	w.rt.statusLog = nil
	var err error
	w.do(func(ctx context.Context) { err = w.p.RefreshPod(ctx, "a") })
	if err != nil {
		t.Fatal(err)
	}
	st, _ := w.p.Cache().Get("a")
	if c, _ := st.Latest("side"); c.State != podstate.ContainerExited || !st.Timestamp.Equal(at(500*time.Millisecond)) {
		t.Errorf("RefreshPod left %+v", st)
	}
	if diff := cmp.Diff([]string{"sb-a-0", "a-app-0", "a-app-1", "a-side"}, w.rt.statusLog); diff != "" {
		t.Errorf("RefreshPod status calls (-want +got):\n%s", diff)
	}
	// An older status never replaces a newer one.
	w.p.cache.set(&podstate.PodStatus{UID: "a", Timestamp: at(100 * time.Millisecond), Sandboxes: []podstate.Sandbox{{ID: "old"}}})
	if got, _ := w.p.Cache().Get("a"); got != st {
		t.Errorf("an older status replaced a newer one")
	}
	// RefreshPod did not touch the relist state: the next relist still
	// reports the change.
	w.advance(500 * time.Millisecond)
	w.relist()
	if diff := cmp.Diff([]Event{ev("a", ContainerDied, "side", "a-side")}, w.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// A pod the runtime does not know: a tombstone, dropped by the next
	// global stamp.
	w.do(func(ctx context.Context) { err = w.p.RefreshPod(ctx, "gone") })
	if _, ok := w.p.Cache().Get("gone"); ok || err != nil {
		t.Errorf("unknown pod: Get ok=%v, err=%v", ok, err)
	}
	if diff := cmp.Diff([]types.UID{"a", "b"}, w.p.Cache().UIDs()); diff != "" {
		t.Errorf("UIDs with a tombstone (-want +got):\n%s", diff)
	}
	w.advance(time.Second)
	w.relist()
	if len(w.p.cache.entries) != 2 || len(w.p.cache.tombs) != 0 {
		t.Errorf("tombstone not dropped: %v %v", w.p.cache.entries, w.p.cache.tombs)
	}
}

// TestRemovedPodLeavesCache: a pod whose objects are all gone leaves the
// cache at the relist that sees it, and GetNewerThan answers an empty
// status stamped with the global timestamp.
func TestRemovedPodLeavesCache(t *testing.T) {
	w := newWorld(t, 10, Config{})
	twoPods(w.rt)
	w.relist()
	w.drain()
	w.advance(time.Second)
	delete(w.rt.sandboxes, "sb-b-0")
	delete(w.rt.containers, "b-app")
	w.relist()
	if diff := cmp.Diff([]Event{ev("b", ContainerRemoved, "app", "b-app")}, w.drain()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if _, ok := w.p.Cache().Get("b"); ok {
		t.Errorf("removed pod still cached")
	}
	if diff := cmp.Diff([]types.UID{"a"}, w.p.Cache().UIDs()); diff != "" {
		t.Errorf("UIDs (-want +got):\n%s", diff)
	}
	var got *podstate.PodStatus
	w.do(func(ctx context.Context) { got, _ = w.p.Cache().GetNewerThan(ctx, "b", at(0)) })
	if diff := cmp.Diff(&podstate.PodStatus{UID: "b", Timestamp: at(time.Second)}, got); diff != "" {
		t.Errorf("GetNewerThan of a removed pod (-want +got):\n%s", diff)
	}
}

// TestNotFoundDuringRefresh: an object removed between the list and its
// status call is left out, and the next relist reports it removed.
func TestNotFoundDuringRefresh(t *testing.T) {
	w := newWorld(t, 11, Config{})
	twoPods(w.rt)
	w.rt.statusErr["a-app-0"] = errNotFound("a-app-0")
	w.relist()
	st, _ := w.p.Cache().Get("a")
	if len(st.Containers) != 2 || len(w.p.retry) != 0 {
		t.Errorf("NotFound container: %d containers cached, retry %v", len(st.Containers), w.p.retry)
	}
}
