package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/status"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// world is a kernel with a server on it.
type world struct {
	k *kernel.Kernel
	s *apiserver.Server
	u *apiserver.User
}

// newWorld returns a server on a fresh kernel; cfg's Clock, Tasks and Log
// are filled in (and Rand, when withRand).
func newWorld(t *testing.T, seed uint64, cfg apiserver.Config, withRand bool) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: seed})
	t.Cleanup(k.Close)
	cfg.Clock, cfg.Tasks, cfg.Log = k, k.Tasks(), k.Logger()
	if withRand {
		cfg.Rand = k.Rand()
	}
	s := apiserver.New(cfg)
	return &world{k: k, s: s, u: s.User()}
}

// call runs fn as a simulated task ("agent") until it returns, and returns
// its result. Other tasks run meanwhile.
func call[T any](t *testing.T, w *world, fn func(ctx context.Context) T) T {
	t.Helper()
	var out T
	done := false
	w.k.Tasks().Go("agent", func() {
		out = fn(context.Background())
		done = true
	})
	if err := w.k.RunUntil(func() bool { return done }, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	return out
}

// res is a call's object and error.
type res[T any] struct {
	obj T
	err error
}

func mk[T any](obj T, err error) res[T] { return res[T]{obj, err} }

// newPod is a pod in "default" bound to node (unbound when node is "").
func newPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}},
		},
	}
}

// mustCreate creates pods on the user side.
func mustCreate(t *testing.T, w *world, pods ...*corev1.Pod) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, p := range pods {
		c, err := w.u.CreatePod(p)
		if err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
		out = append(out, c)
	}
	return out
}

func mustGet(t *testing.T, w *world, name string) *corev1.Pod {
	t.Helper()
	p, err := w.u.GetPod("default", name)
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// seen is a watch event reduced to what tests compare.
type seen struct {
	Type     deps.PodEventType
	Name     string
	RV       string
	Node     string
	Phase    corev1.PodPhase
	Deleting bool
}

func summarize(ev deps.PodEvent) seen {
	return seen{
		Type: ev.Type, Name: ev.Pod.Name, RV: ev.Pod.ResourceVersion, Node: ev.Pod.Spec.NodeName,
		Phase: ev.Pod.Status.Phase, Deleting: ev.Pod.DeletionTimestamp != nil,
	}
}

// nextN reads n events from pw.
func nextN(ctx context.Context, pw deps.PodWatch, n int) ([]seen, error) {
	var out []seen
	for range n {
		ev, err := pw.Next(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, summarize(ev))
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// advance moves virtual time on by d (a quiet kernel does not move time by
// itself).
func advance(t *testing.T, w *world, d time.Duration) {
	t.Helper()
	w.k.Tasks().AfterFunc("advance", d, func() {})
	if err := w.k.RunFor(d); err != nil {
		t.Fatal(err)
	}
}

// patchStatus writes p.Status from the agent side as a status patch with
// p.UID as precondition (every field of p.Status set; none cleared).
func patchStatus(ctx context.Context, s *apiserver.Server, p *corev1.Pod) (*corev1.Pod, error) {
	patch, _, err := status.Patch(p.UID, corev1.PodStatus{}, p.Status)
	if err != nil {
		return nil, err
	}
	return s.PatchPodStatus(ctx, p.Namespace, p.Name, patch)
}
