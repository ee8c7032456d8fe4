package servicecache_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/servicecache"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// world is a kernel, a simulated apiserver and a cache on them.
type world struct {
	k   *kernel.Kernel
	api *apiserver.Server
	c   *servicecache.Cache
}

func newWorld(t *testing.T, seed uint64) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: seed})
	t.Cleanup(k.Close)
	api := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Rand: k.Rand(), Log: k.Logger()})
	return &world{k: k, api: api, c: servicecache.New(k.Deps().Core, api)}
}

func (w *world) start(t *testing.T) {
	ctx, cancel := w.k.WithCancel(context.Background())
	t.Cleanup(cancel)
	w.c.Start(ctx)
}

func (w *world) run(t *testing.T, d time.Duration) {
	t.Helper()
	if err := w.k.RunFor(d); err != nil {
		t.Fatal(err)
	}
}

func svc(ns, name, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip}}
}

// held lists the cache's services of the namespaces as "ns/name ip".
func held(c *servicecache.Cache, namespaces ...string) []string {
	var out []string
	for _, s := range c.Services(namespaces...) {
		out = append(out, s.Namespace+"/"+s.Name+" "+s.Spec.ClusterIP)
	}
	return out
}

func (w *world) requests() (lists, watches int) {
	r := w.api.Requests()
	return r[apiserver.Request{Verb: "list", Resource: "services"}], r[apiserver.Request{Verb: "watch", Resource: "services"}]
}

// TestListThenWatch: the cache lists once, is synced, and follows the
// watch: a service added, one changed, one deleted, in any namespace;
// Services returns only the namespaces asked for, sorted. One list and
// one watch in all.
func TestListThenWatch(t *testing.T) {
	w := newWorld(t, 1)
	u := w.api.User()
	u.PutService(svc("default", "kubernetes", "10.96.0.1"))
	u.PutService(svc("web", "front", "10.96.1.1"))
	if w.c.Synced() {
		t.Fatal("synced before it started")
	}
	w.start(t)
	w.run(t, time.Second)
	if !w.c.Synced() {
		t.Fatal("not synced after the first list")
	}
	if d := cmp.Diff([]string{"default/kubernetes 10.96.0.1", "web/front 10.96.1.1"}, held(w.c, "web", "default")); d != "" {
		t.Errorf("after the list (-want +got):\n%s", d)
	}
	u.PutService(svc("web", "back", "10.96.1.2"))
	u.PutService(svc("web", "front", "10.96.1.9"))
	u.PutService(svc("db", "pg", "10.96.2.1"))
	u.DeleteService("default", "kubernetes")
	w.run(t, time.Second)
	if d := cmp.Diff([]string{"web/back 10.96.1.2", "web/front 10.96.1.9"}, held(w.c, "web", "default")); d != "" {
		t.Errorf("after the watched changes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"db/pg 10.96.2.1"}, held(w.c, "db")); d != "" {
		t.Errorf("namespace db (-want +got):\n%s", d)
	}
	if l, wa := w.requests(); l != 1 || wa != 1 {
		t.Errorf("%d lists and %d watches of services, want 1 and 1", l, wa)
	}
}

// TestBrokenWatchRelistedKeepingTheLastState: a dropped watch is followed
// by a new list after a back-off; while the apiserver is down the cache
// keeps answering with its last state and stays synced; a change made
// during the outage is there once the apiserver is back; an expired
// resource version (compaction) relists too.
func TestBrokenWatchRelistedKeepingTheLastState(t *testing.T) {
	w := newWorld(t, 2)
	u := w.api.User()
	u.PutService(svc("default", "kubernetes", "10.96.0.1"))
	w.start(t)
	w.run(t, time.Second)
	w.api.Down(true)
	u.PutService(svc("default", "web", "10.96.3.3"))
	w.run(t, 2*time.Minute)
	if !w.c.Synced() {
		t.Error("no longer synced during the outage")
	}
	if d := cmp.Diff([]string{"default/kubernetes 10.96.0.1"}, held(w.c, "default")); d != "" {
		t.Errorf("during the outage (-want +got):\n%s", d)
	}
	lists, _ := w.requests()
	if lists < 3 || lists > 10 {
		t.Errorf("%d lists in 2 minutes of outage, want a few under back-off (0.5 s doubling to 30 s)", lists)
	}
	w.api.Down(false)
	w.run(t, time.Minute)
	if d := cmp.Diff([]string{"default/kubernetes 10.96.0.1", "default/web 10.96.3.3"}, held(w.c, "default")); d != "" {
		t.Errorf("after the outage (-want +got):\n%s", d)
	}
	// An expired watch: compact, then break the watch so the cache must
	// resume; it relists and sees a change made in between.
	before, _ := w.requests()
	w.api.Compact()
	w.api.DropWatches()
	u.DeleteService("default", "web")
	w.run(t, time.Minute)
	if d := cmp.Diff([]string{"default/kubernetes 10.96.0.1"}, held(w.c, "default")); d != "" {
		t.Errorf("after the dropped watch (-want +got):\n%s", d)
	}
	if after, _ := w.requests(); after != before+1 {
		t.Errorf("%d lists after the dropped watch, want 1", after-before)
	}
}

// TestNotSyncedUntilTheFirstList: with the apiserver down from the start
// the cache is not synced; WaitSynced gives up after SyncWait; the
// documented error is upstream's; the first list after the outage syncs
// it.
func TestNotSyncedUntilTheFirstList(t *testing.T) {
	w := newWorld(t, 3)
	w.api.Down(true)
	w.start(t)
	var synced, done bool
	var waited time.Duration
	w.k.Tasks().Go("reader", func() {
		t0 := w.k.Now()
		synced = w.c.WaitSynced(context.Background())
		waited, done = w.k.Now().Sub(t0), true
	})
	w.run(t, 5*time.Second)
	if !done || synced || waited != servicecache.SyncWait {
		t.Errorf("WaitSynced with the apiserver down: done %v, synced %v after %v; want false after %v", done, synced, waited, servicecache.SyncWait)
	}
	if got, want := servicecache.ErrNotSynced.Error(), "services have not yet been read at least once, cannot construct envvars"; got != want {
		t.Errorf("ErrNotSynced = %q, want upstream's %q", got, want)
	}
	w.api.Down(false)
	w.run(t, time.Minute)
	if !w.c.Synced() {
		t.Error("not synced a minute after the apiserver came back")
	}
}
