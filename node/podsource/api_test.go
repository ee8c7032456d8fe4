package podsource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
)

// startAPI runs an API source over a fake apiserver holding pods.
func startAPI(t *testing.T, pods ...*corev1.Pod) (*world, *fakePodAPI, context.CancelFunc) {
	t.Helper()
	w := newWorld(t, podsource.SourceAPI)
	api := newFakePodAPI(w.d)
	for _, p := range pods {
		api.put(p)
	}
	w.d.API.Pods = api
	src := podsource.NewAPISource(w.d.Core, w.d.API.Pods, "node-1", w.m)
	ctx, cancel := w.d.Tasks.WithCancel(context.Background())
	w.d.Tasks.Go("api-source", func() { src.Run(ctx) })
	return w, api, cancel
}

func TestAPISourceListAndWatch(t *testing.T) {
	w, api, cancel := startAPI(t, apiPod("b"), apiPod("a"))
	defer cancel()
	w.run(time.Second)
	if diff := cmp.Diff([]string{"ADD api ns/a,ns/b"}, w.summary()); diff != "" {
		t.Errorf("after the list (-want +got):\n%s", diff)
	}
	if !w.m.AllSeen() {
		t.Error("AllSeen false after the list")
	}

	a := api.pods["uid-a"].DeepCopy()
	a.Status.Phase = corev1.PodRunning
	b := api.pods["uid-b"].DeepCopy()
	b.Labels = map[string]string{"l": "1"}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"status change", func() { api.put(a) }, []string{"RECONCILE api ns/a"}},
		{"label change", func() { api.put(b) }, []string{"UPDATE api ns/b"}},
		{"deletion requested", func() {
			now := metav1.Unix(100, 0)
			b.DeletionTimestamp = &now
			api.put(b)
		}, []string{"DELETE api ns/b"}},
		{"deleted", func() { api.remove("uid-b") }, []string{"REMOVE api ns/b"}},
		{"created", func() { api.put(apiPod("c")) }, []string{"ADD api ns/c"}},
	}
	for _, st := range steps {
		st.do()
		w.run(time.Second)
		if diff := cmp.Diff(st.want, w.summary()); diff != "" {
			t.Errorf("%s: updates (-want +got):\n%s", st.name, diff)
		}
	}
	if len(api.lists) != 1 {
		t.Errorf("%d lists, want 1", len(api.lists))
	}
}

func TestAPISourceRelistsWithBackoff(t *testing.T) {
	w, api, cancel := startAPI(t, apiPod("a"), apiPod("b"), apiPod("c"))
	defer cancel()
	w.run(time.Second)
	w.summary()

	// The watch breaks; while the source is disconnected b is deleted, c
	// changes, d appears, and the apiserver fails the next three lists.
	api.breakWatches()
	api.remove("uid-b")
	c := api.pods["uid-c"].DeepCopy()
	c.Labels = map[string]string{"l": "1"}
	api.put(c)
	api.put(apiPod("d"))
	api.listErrs = []error{errors.New("boom 1"), errors.New("boom 2"), errors.New("boom 3")}
	broke := w.d.Clock.Now()
	w.run(time.Minute)

	want := []string{"REMOVE api ns/b", "ADD api ns/d", "UPDATE api ns/c"}
	if diff := cmp.Diff(want, w.summary()); diff != "" {
		t.Errorf("after the relist (-want +got):\n%s", diff)
	}
	// Lists: the first one, then at once after the break, then three
	// backed-off retries.
	if len(api.lists) != 5 {
		t.Fatalf("%d lists, want 5: %v", len(api.lists), api.lists)
	}
	if got := api.lists[1].Sub(broke); got != 0 {
		t.Errorf("first relist %v after the break, want at once", got)
	}
	for i, limit := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		gap := api.lists[i+2].Sub(api.lists[i+1])
		if gap < limit/2 || gap > limit {
			t.Errorf("retry %d came %v after the previous list, want in [%v, %v]", i+1, gap, limit/2, limit)
		}
	}

	// The new watch works: events flow again.
	api.put(apiPod("e"))
	w.run(time.Second)
	if diff := cmp.Diff([]string{"ADD api ns/e"}, w.summary()); diff != "" {
		t.Errorf("after the rewatch (-want +got):\n%s", diff)
	}
	// It was healthy, so the next break relists at once again.
	api.breakWatches()
	broke = w.d.Clock.Now()
	w.run(time.Second)
	if got := api.lists[len(api.lists)-1].Sub(broke); len(api.lists) != 6 || got != 0 {
		t.Errorf("lists %v: want a sixth one at once after the break at %v", api.lists, broke)
	}
	// A quiet watch that stayed open for 30 s was healthy too; one that
	// breaks at once after that was not, and the list after it waits.
	w.run(40 * time.Second)
	api.breakWatches()
	broke = w.d.Clock.Now()
	w.run(100 * time.Millisecond)
	api.breakWatches()
	w.run(5 * time.Second)
	if len(api.lists) != 8 {
		t.Fatalf("%d lists, want 8: %v", len(api.lists), api.lists)
	}
	if got := api.lists[6].Sub(broke); got != 0 {
		t.Errorf("relist %v after a quiet watch broke, want at once", got)
	}
	if gap := api.lists[7].Sub(api.lists[6]); gap < 500*time.Millisecond || gap > time.Second {
		t.Errorf("relist %v after a watch that broke at once, want in [0.5s, 1s]", gap)
	}
}

func TestAPISourceBackoffIsCapped(t *testing.T) {
	w, api, cancel := startAPI(t)
	for range 12 {
		api.listErrs = append(api.listErrs, errors.New("apiserver down"))
	}
	w.run(10 * time.Minute)
	cancel()
	w.run(time.Second)
	if len(api.lists) != 13 {
		t.Fatalf("%d lists, want 13", len(api.lists))
	}
	if w.m.Seen(podsource.SourceAPI) != true {
		t.Error("the source is not seen after the apiserver came back")
	}
	for i := 1; i < len(api.lists); i++ {
		gap := api.lists[i].Sub(api.lists[i-1])
		limit := min(time.Second<<max(i-2, 0), 30*time.Second)
		if i == 1 {
			limit = 0 // the first failure retries at once
		}
		if gap < limit/2 || gap > limit {
			t.Errorf("list %d came %v after the previous one, want in [%v, %v]", i, gap, limit/2, limit)
		}
	}
}

func TestAPISourceStopsWithContext(t *testing.T) {
	w, _, cancel := startAPI(t, apiPod("a"))
	w.run(time.Second)
	cancel()
	if err := w.k.Run(); err != nil {
		t.Fatalf("the source did not end with its context: %v", err)
	}
	if w.k.Live() != 0 {
		t.Errorf("%d tasks still live", w.k.Live())
	}
}
