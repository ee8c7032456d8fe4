package runtimesync

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// stopOrder makes a pod's sidecars stop after its other containers, as
// upstream does: every sidecar waits until the regular containers have
// stopped, and each sidecar until the sidecars after it in the spec have
// stopped (so they stop in reverse order). A wait never outlasts the
// grace period; the stop that follows gets what is left of it.
type stopOrder struct {
	mu sync.Mutex
	// pending counts, per container name, the instances still stopping.
	pending map[string]int
	// after maps a sidecar to the containers it stops after.
	after map[string][]string
	// wake wakes a waiting sidecar when a container has stopped.
	wake map[string]deps.Signal
}

// newStopOrder orders the stops of names (the containers of pod being
// stopped, one entry per instance); nil when pod has no sidecar among
// them.
func newStopOrder(tasks deps.Tasks, pod *corev1.Pod, names []string) *stopOrder {
	if pod == nil {
		return nil
	}
	o := &stopOrder{pending: map[string]int{}, after: map[string][]string{}, wake: map[string]deps.Signal{}}
	for _, n := range names {
		o.pending[n]++
	}
	var regular []string
	for _, c := range pod.Spec.Containers {
		if o.pending[c.Name] > 0 {
			regular = append(regular, c.Name)
		}
	}
	later := ""
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		if !podutil.IsSidecar(c) || o.pending[c.Name] == 0 {
			continue
		}
		o.after[c.Name] = slices.Clone(regular)
		if later != "" {
			o.after[c.Name] = append(o.after[c.Name], later)
		}
		o.wake[c.Name] = tasks.NewSignal("stop order " + pod.Namespace + "/" + pod.Name + "/" + c.Name)
		later = c.Name
	}
	if len(o.after) == 0 {
		return nil
	}
	return o
}

// waitTurn blocks the stop of container name until the containers it
// stops after have stopped, or grace has passed, or ctx ends; it returns
// how long it waited.
func (o *stopOrder) waitTurn(ctx context.Context, clock deps.Clock, name string, grace time.Duration) time.Duration {
	if o == nil || len(o.after[name]) == 0 || grace <= 0 {
		return 0
	}
	start := clock.Now()
	wctx, cancel := clock.WithTimeout(ctx, grace)
	defer cancel()
	for !o.ready(name) {
		if err := o.wake[name].Wait(wctx); err != nil {
			break
		}
	}
	return clock.Since(start)
}

func (o *stopOrder) ready(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.after[name] {
		if o.pending[n] > 0 {
			return false
		}
	}
	return true
}

// stopped records that one instance of container name has stopped (or
// failed to), waking the sidecars that wait.
func (o *stopOrder) stopped(name string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.pending[name]--
	o.mu.Unlock()
	for _, s := range o.wake {
		s.Notify()
	}
}
