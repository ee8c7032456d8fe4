package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// podTimes is what the driver saw of one pod.
type podTimes struct {
	created time.Time // just before the create request was sent
	ready   time.Time // first watch event showing Running and Ready
	deleted time.Time // just before the delete request was sent
	gone    time.Time // watch event DELETED
}

// tracker follows every pod of the benchmark namespace by watch and records
// when each was first seen Running+Ready and when it was gone.
type tracker struct {
	client kubernetes.Interface
	ns     string

	mu     sync.Mutex
	pods   map[string]*podTimes
	ready  int
	gone   int
	relist int // LIST requests after the first: the driver's own, subtracted
}

func newTracker(c kubernetes.Interface, ns string) *tracker {
	return &tracker{client: c, ns: ns, pods: map[string]*podTimes{}}
}

// expect registers a pod about to be created.
func (t *tracker) expect(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pods[name] = &podTimes{created: at}
}

// deleting records when the delete of name was sent.
func (t *tracker) deleting(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.pods[name]; p != nil {
		p.deleted = at
	}
}

// counts returns how many tracked pods were seen ready and gone.
func (t *tracker) counts() (ready, gone int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready, t.gone
}

// relists returns how many extra LISTs the tracker sent.
func (t *tracker) relists() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.relist
}

// take removes and returns the times of names.
func (t *tracker) take(names []string) []podTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]podTimes, 0, len(names))
	for _, n := range names {
		if p := t.pods[n]; p != nil {
			out = append(out, *p)
			if !p.ready.IsZero() {
				t.ready--
			}
			if !p.gone.IsZero() {
				t.gone--
			}
			delete(t.pods, n)
		}
	}
	return out
}

// peek returns the times of names seen so far, keeping them tracked.
func (t *tracker) peek(names []string) []podTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]podTimes, 0, len(names))
	for _, n := range names {
		if p := t.pods[n]; p != nil {
			out = append(out, *p)
		}
	}
	return out
}

func runningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (t *tracker) observe(typ watch.EventType, p *corev1.Pod, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.pods[p.Name]
	if pt == nil {
		return
	}
	if typ == watch.Deleted {
		if pt.gone.IsZero() {
			pt.gone = at
			t.gone++
		}
		return
	}
	if pt.ready.IsZero() && runningReady(p) {
		pt.ready = at
		t.ready++
	}
}

// run lists and watches until ctx ends, relisting when the watch closes.
func (t *tracker) run(ctx context.Context, started chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		list, err := t.client.CoreV1().Pods(t.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			log.Printf("tracker: list pods of %s: %v", t.ns, err)
			time.Sleep(time.Second)
			continue
		}
		now := time.Now()
		present := map[string]bool{}
		for i := range list.Items {
			present[list.Items[i].Name] = true
			t.observe(watch.Modified, &list.Items[i], now)
		}
		t.mu.Lock()
		if !first {
			t.relist++
		}
		for name, pt := range t.pods {
			// Created before the list yet missing from it: deleted meanwhile.
			if !present[name] && !pt.deleted.IsZero() && pt.gone.IsZero() {
				pt.gone = now
				t.gone++
			}
		}
		t.mu.Unlock()
		if first {
			close(started)
			first = false
		}
		timeout := int64(3600)
		w, err := t.client.CoreV1().Pods(t.ns).Watch(ctx, metav1.ListOptions{
			ResourceVersion: list.ResourceVersion, TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
		if err != nil {
			log.Printf("tracker: watch pods of %s: %v", t.ns, err)
			continue
		}
		for ev := range w.ResultChan() {
			at := time.Now()
			if ev.Type == watch.Error {
				log.Printf("tracker: watch error: %v", ev.Object)
				break
			}
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Bookmark {
				t.observe(ev.Type, p, at)
			}
		}
		w.Stop()
	}
}

// waitFor polls until cond holds, the deadline passes, or nothing
// progresses for stall; progress is what cond's count returns.
func waitFor(ctx context.Context, what string, deadline time.Duration, stall time.Duration, check func() (int, int, string)) error {
	start := time.Now()
	last, lastChange := -1, time.Now()
	for {
		have, want, dead := check()
		if have >= want {
			return nil
		}
		if dead != "" {
			return fmt.Errorf("%s: %d of %d after %s: %s", what, have, want, time.Since(start).Round(time.Millisecond), dead)
		}
		if have != last {
			last, lastChange = have, time.Now()
		}
		if time.Since(start) > deadline || time.Since(lastChange) > stall {
			return fmt.Errorf("%s: %d of %d after %s (no progress for %s)", what, have, want,
				time.Since(start).Round(time.Millisecond), time.Since(lastChange).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
