package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// CeilingWriters is how many requests the ceiling client has in flight.
const CeilingWriters = 32

// ceiling is the trivial agent: for every pod bound to its node it writes
// one status patch (Running, Ready) and, once the pod is being deleted, one
// grace-0 delete with the pod's UID as precondition. No runtime, no
// events, no node status: the most the apiserver can take.
type ceiling struct {
	client kubernetes.Interface
	ns     string
	node   string

	mu      sync.Mutex
	patched map[types.UID]bool
	deleted map[types.UID]bool
	work    chan func(context.Context)
}

// ceilingPatch is the one status write per pod.
func ceilingPatch(now time.Time) []byte {
	ts := now.UTC().Format(time.RFC3339)
	return []byte(fmt.Sprintf(`{"status":{"phase":"Running","conditions":[`+
		`{"type":"PodReadyToStartContainers","status":"True","lastTransitionTime":%[1]q},`+
		`{"type":"Initialized","status":"True","lastTransitionTime":%[1]q},`+
		`{"type":"Ready","status":"True","lastTransitionTime":%[1]q},`+
		`{"type":"ContainersReady","status":"True","lastTransitionTime":%[1]q}],`+
		`"hostIP":"127.0.0.1","podIP":"10.0.0.1","startTime":%[1]q}}`, ts))
}

// runCeiling serves the ceiling's node until ctx ends.
func runCeiling(ctx context.Context, c kubernetes.Interface, ns, node string) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", node, err)
	}
	cl := &ceiling{client: c, ns: ns, node: node, patched: map[types.UID]bool{}, deleted: map[types.UID]bool{},
		work: make(chan func(context.Context), 100000)}
	for i := 0; i < CeilingWriters; i++ {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case f := <-cl.work:
					f(ctx)
				}
			}
		}()
	}
	started := make(chan struct{})
	go cl.watch(ctx, started)
	select {
	case <-started:
	case <-ctx.Done():
	}
	return nil
}

func (cl *ceiling) handle(p *corev1.Pod) {
	uid, name := p.UID, p.Name
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case p.DeletionTimestamp != nil && !cl.deleted[uid]:
		cl.deleted[uid] = true
		cl.work <- func(ctx context.Context) {
			zero := int64(0)
			err := cl.client.CoreV1().Pods(cl.ns).Delete(ctx, name, metav1.DeleteOptions{
				GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && ctx.Err() == nil {
				log.Printf("ceiling: delete pod %s/%s: %v", cl.ns, name, err)
			}
		}
	case p.DeletionTimestamp == nil && !cl.patched[uid]:
		cl.patched[uid] = true
		cl.work <- func(ctx context.Context) {
			_, err := cl.client.CoreV1().Pods(cl.ns).Patch(ctx, name, types.StrategicMergePatchType,
				ceilingPatch(time.Now()), metav1.PatchOptions{}, "status")
			if err != nil && ctx.Err() == nil {
				log.Printf("ceiling: patch status of pod %s/%s: %v", cl.ns, name, err)
			}
		}
	}
}

func (cl *ceiling) watch(ctx context.Context, started chan<- struct{}) {
	sel := fields.OneTermEqualSelector("spec.nodeName", cl.node).String()
	first := true
	for ctx.Err() == nil {
		list, err := cl.client.CoreV1().Pods(cl.ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			if ctx.Err() == nil {
				log.Printf("ceiling: list pods: %v", err)
				time.Sleep(time.Second)
			}
			continue
		}
		for i := range list.Items {
			cl.handle(&list.Items[i])
		}
		if first {
			close(started)
			first = false
		}
		timeout := int64(3600)
		w, err := cl.client.CoreV1().Pods(cl.ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel,
			ResourceVersion: list.ResourceVersion, TimeoutSeconds: &timeout})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				cl.handle(p)
			}
		}
		w.Stop()
	}
}
