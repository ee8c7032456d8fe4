package runtimesync

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/servicecache"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// TestServiceEnvBeforeTheFirstList: while the service cache has never
// listed, an API pod's environment fails with upstream's error after
// waiting servicecache.SyncWait, and a static pod's is built at once
// without service variables; without an apiserver (no cache) there are
// none and no error.
func TestServiceEnvBeforeTheFirstList(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	core := k.Deps().Core
	e := NewExecutor(core, Ports{Services: servicecache.New(core, nil)}, Config{}) // never started: never synced
	standalone := NewExecutor(core, Ports{}, Config{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	static := pod.DeepCopy()
	static.Annotations = map[string]string{podutil.AnnotationConfigSource: "file"}

	type result struct {
		env    map[string]string
		err    error
		waited time.Duration
	}
	got := map[string]result{}
	k.Tasks().Go("sync", func() {
		for name, c := range map[string]struct {
			e *Executor
			p *corev1.Pod
		}{"api pod": {e, pod}, "static pod": {e, static}, "standalone": {standalone, pod}} {
			t0 := k.Now()
			env, err := c.e.serviceEnv(context.Background(), c.p)
			got[name] = result{env, err, k.Now().Sub(t0)}
		}
	})
	if err := k.RunUntil(func() bool { return len(got) == 3 }, time.Minute); err != nil {
		t.Fatal(err)
	}
	if r := got["api pod"]; !errors.Is(r.err, servicecache.ErrNotSynced) || r.waited != servicecache.SyncWait {
		t.Errorf("API pod: env %v, err %v after %v; want ErrNotSynced after %v", r.env, r.err, r.waited, servicecache.SyncWait)
	}
	if r := got["static pod"]; r.err != nil || len(r.env) != 0 || r.waited != 0 {
		t.Errorf("static pod: env %v, err %v after %v; want no variables, at once", r.env, r.err, r.waited)
	}
	if r := got["standalone"]; r.err != nil || r.env != nil {
		t.Errorf("standalone: env %v, err %v; want none", r.env, r.err)
	}
}
