package nodestatus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

const nodeName = "node-a"

// machine is a fake deps.Machine.
type machine struct {
	info  deps.MachineInfo
	usage deps.MachineUsage
	// infoFailures is how many Info calls fail before one succeeds.
	infoFailures int
}

func (m *machine) Info(context.Context) (deps.MachineInfo, error) {
	if m.infoFailures > 0 {
		m.infoFailures--
		return deps.MachineInfo{}, errors.New("injected machine info failure")
	}
	return m.info, nil
}

func (m *machine) Usage(context.Context) (deps.MachineUsage, error) { return m.usage, nil }

// pleg is a settable nodestatus.Health.
type pleg struct {
	ok  bool
	err error
}

func (p *pleg) PLEGHealthy() (bool, error) { return p.ok, p.err }

// world is a kernel with a simulated apiserver, a fake runtime, a fake
// machine and a node status manager.
type world struct {
	t       *testing.T
	k       *kernel.Kernel
	srv     *apiserver.Server
	rt      *fakecri.Runtime
	machine *machine
	pleg    *pleg
	// attempts counts the manager's registration attempts.
	attempts *attemptCounter
	m        *nodestatus.Manager
	cfg      nodestatus.Config
}

func baseConfig() nodestatus.Config {
	return nodestatus.Config{
		NodeName: nodeName, NodeIP: "10.0.0.7", Labels: map[string]string{"tier": "edge"},
		KubeletVersion: "lockstep v0.1.0",
		Reserved:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
}

// newWorld builds the world; mutate adjusts the config before the manager
// is made. The manager is not started.
func newWorld(t *testing.T, mutate func(*nodestatus.Config)) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	w := &world{
		t:   t,
		k:   k,
		srv: apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Rand: k.Rand(), Log: k.Logger()}),
		rt: fakecri.New(fakecri.Config{
			Clock: k, Rand: k.Rand(), Files: memfs.New(),
			NewSignal:   func(n string) fakecri.Signal { return k.NewSignal(n) },
			RuntimeName: "containerd", RuntimeVersion: "2.0.0",
		}),
		machine: &machine{
			info: deps.MachineInfo{
				MachineID: "mid", BootID: "bid", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04 LTS",
				Architecture: "x86_64", CPUs: 4, MemoryBytes: 8 << 30,
			},
			usage: deps.MachineUsage{NodeFSCapacityBytes: 100 << 30},
		},
		pleg: &pleg{ok: true},
		cfg:  baseConfig(),
	}
	if mutate != nil {
		mutate(&w.cfg)
	}
	d := k.Deps()
	d.Runtime, d.Images, d.Machine = w.rt, w.rt, w.machine
	d.API = deps.API{Pods: w.srv, Nodes: w.srv, Leases: w.srv,
		Events: apiserver.NewRecorder(w.srv, k, corev1.EventSource{Component: "kubelet", Host: w.cfg.NodeName})}
	w.attempts = &attemptCounter{}
	w.m = nodestatus.New(d.Core, nodestatus.Ports{Nodes: d.API.Nodes, Leases: d.API.Leases, Events: d.API.Events, Runtime: d.Runtime, Images: d.Images, Machine: d.Machine, Metrics: w.attempts}, w.cfg, w.pleg)
	return w
}

// start starts the manager; it stops at the end of the test.
func (w *world) start() {
	ctx, cancel := w.k.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	w.m.BirthCry()
	w.m.Start(ctx)
}

// run advances virtual time by d.
func (w *world) run(d time.Duration) {
	w.t.Helper()
	if err := w.k.RunFor(d); err != nil {
		w.t.Fatal(err)
	}
}

// runUntil runs until cond holds, failing after limit.
func (w *world) runUntil(what string, cond func() bool, limit time.Duration) {
	w.t.Helper()
	if err := w.k.RunUntil(cond, limit); err != nil {
		w.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// elapsed is the virtual time since the start.
func (w *world) elapsed() time.Duration { return w.k.Elapsed() }

// since converts a time to virtual time since the start.
func (w *world) since(t time.Time) time.Duration { return t.Sub(kernel.DefaultEpoch) }

// node returns the node in the API, or nil.
func (w *world) node() *corev1.Node {
	for _, n := range w.srv.User().Nodes() {
		if n.Name == nodeName {
			return n
		}
	}
	return nil
}

// ready returns the node's Ready condition in the API.
func (w *world) ready() corev1.NodeCondition {
	w.t.Helper()
	n := w.node()
	if n == nil {
		w.t.Fatal("node not registered")
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	w.t.Fatal("node has no Ready condition")
	return corev1.NodeCondition{}
}

// readyIs reports whether the node's Ready condition in the API has status s.
func (w *world) readyIs(s corev1.ConditionStatus) func() bool {
	return func() bool {
		n := w.node()
		if n == nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == s
			}
		}
		return false
	}
}

// lease returns the node's lease in the API, or nil.
func (w *world) lease() *coordinationv1.Lease {
	l, err := w.srv.User().GetLease(corev1.NamespaceNodeLease, nodeName)
	if err != nil {
		return nil
	}
	return l
}

// writes returns the virtual times of the agent's committed writes of kind
// with verb, at or after from.
func (w *world) writes(kind, verb string, from time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range w.srv.History() {
		if r.Kind == kind && r.Verb == verb && w.since(r.At) >= from {
			out = append(out, w.since(r.At))
		}
	}
	return out
}

// statusWrites are the node status writes at or after from.
func (w *world) statusWrites(from time.Duration) []time.Duration {
	return w.writes(apiserver.KindNode, apiserver.VerbPatchStatus, from)
}

// leaseWrites are the lease creations and updates at or after from.
func (w *world) leaseWrites(from time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range w.srv.History() {
		if r.Kind == apiserver.KindLease && w.since(r.At) >= from {
			out = append(out, w.since(r.At))
		}
	}
	return out
}

// runCheckingLease runs for d in one-second steps and checks the
// lease-fresh invariant after each: the lease exists and was renewed
// within its duration.
func (w *world) runCheckingLease(d time.Duration) {
	w.t.Helper()
	for end := w.elapsed() + d; w.elapsed() < end; {
		w.run(time.Second)
		l := w.lease()
		if l == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			w.t.Fatalf("at %v: lease-fresh: no renewed lease: %+v", w.elapsed(), l)
		}
		limit := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		if age := w.k.Now().Sub(l.Spec.RenewTime.Time); age > limit {
			w.t.Fatalf("at %v: lease-fresh: lease renewed %v ago, more than its %v", w.elapsed(), age, limit)
		}
	}
}

func secs(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = time.Duration(x * float64(time.Second))
	}
	return out
}

// attemptCounter is a nodestatus.Observer counting registration attempts.
type attemptCounter struct {
	mu sync.Mutex
	n  int
}

func (c *attemptCounter) ObserveRegistrationAttempt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func (c *attemptCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
