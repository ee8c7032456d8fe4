package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/pleg"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// The PLEG reports every relist: its duration, the interval since the
// previous successful relist and the time of the last successful one. A
// failed relist counts in the duration only.
func TestPLEGRelistHook(t *testing.T) {
	w := newWorld(t)
	if err := w.rt.InjectLatency("ListPodSandbox", 250*time.Millisecond, 250*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.rt.InjectError("ListPodSandbox", errors.New("runtime restarting"), 1); err != nil {
		t.Fatal(err)
	}
	d := w.k.Deps()
	d.Runtime = metrics.InstrumentRuntime(w.rt, w.m, w.k)
	p := pleg.New(d.Core, d.Runtime, nil, pleg.Config{Observer: w.m})
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	p.Start(ctx)
	// Relists start at 0 s (fails), 1 s, 2 s and 3 s; each spends 250 ms
	// listing sandboxes.
	if err := w.k.RunFor(3500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cancel()
	lastSeen := float64(kernel.DefaultEpoch.Add(3 * time.Second).Unix())
	compare(t, w.reg, `
kubelet_pleg_last_seen_seconds `+num(lastSeen)+`
kubelet_pleg_relist_duration_seconds_count 4
kubelet_pleg_relist_duration_seconds_sum 1
kubelet_pleg_relist_interval_seconds_count 2
kubelet_pleg_relist_interval_seconds_sum 2
kubelet_runtime_operations_errors_total{operation_type="list_podsandbox"} 1
kubelet_runtime_operations_total{operation_type="list_containers"} 3
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 4
`, metrics.PLEGLastSeen, metrics.PLEGRelistDuration, metrics.PLEGRelistInterval,
		metrics.RuntimeOperations, metrics.RuntimeOperationsErrors)
}

// A PLEG without an observer still relists (the hook is optional).
func TestPLEGWithoutObserver(t *testing.T) {
	w := newWorld(t)
	d := w.k.Deps()
	d.Runtime = w.rt
	p := pleg.New(d.Core, d.Runtime, nil, pleg.Config{})
	w.run(t, func(ctx context.Context) {
		if err := p.Relist(ctx); err != nil {
			t.Error(err)
		}
	})
	if p.LastRelist().IsZero() {
		t.Error("no relist recorded")
	}
}

// stepSyncer's steps take fixed virtual times.
type stepSyncer struct{ k *kernel.Kernel }

func (s stepSyncer) SyncPod(ctx context.Context, _ *corev1.Pod, _ time.Time) (podworkers.SyncResult, error) {
	return podworkers.SyncResult{}, s.k.Tasks().Sleep(ctx, 2*time.Second)
}

func (s stepSyncer) SyncTerminatingPod(ctx context.Context, _ types.UID, _ *corev1.Pod, _ int64, _ time.Time) error {
	return s.k.Tasks().Sleep(ctx, time.Second)
}

func (s stepSyncer) SyncTerminatedPod(ctx context.Context, _ types.UID, _ *corev1.Pod) error {
	return s.k.Tasks().Sleep(ctx, 500*time.Millisecond)
}

// Pod workers report each step under the kubelet's operation types: the
// first sync is "create", then the strongest pending work names a sync
// step, and termination is "kill" then "terminated". The same steps are
// counted for the pod (lockstep_pod_worker_steps_total) until its
// worker is forgotten.
func TestPodWorkerHook(t *testing.T) {
	w := newWorld(t)
	q := podworkers.NewWorkQueue(w.k)
	pw := podworkers.New(context.Background(), w.k.Deps().Core, stepSyncer{w.k}, q, podworkers.Config{Observer: w.m})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	step := func(u podworkers.UpdateType) {
		t.Helper()
		pw.UpdatePod(podworkers.Work{Type: u, UID: "u1", Pod: pod})
		if err := w.k.RunFor(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	step(podworkers.Create)
	step(podworkers.Update)
	step(podworkers.Sync)
	// While a step runs, an Update then a Sync are pending: the next step
	// is an update.
	pw.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: "u1", Pod: pod})
	if err := w.k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	pw.UpdatePod(podworkers.Work{Type: podworkers.Update, UID: "u1", Pod: pod})
	step(podworkers.Sync)
	step(podworkers.Kill)
	compare(t, w.reg, `
kubelet_pod_worker_duration_seconds_count{operation_type="create"} 1
kubelet_pod_worker_duration_seconds_sum{operation_type="create"} 2
kubelet_pod_worker_duration_seconds_count{operation_type="kill"} 1
kubelet_pod_worker_duration_seconds_sum{operation_type="kill"} 1
kubelet_pod_worker_duration_seconds_count{operation_type="sync"} 2
kubelet_pod_worker_duration_seconds_sum{operation_type="sync"} 4
kubelet_pod_worker_duration_seconds_count{operation_type="terminated"} 1
kubelet_pod_worker_duration_seconds_sum{operation_type="terminated"} 0.5
kubelet_pod_worker_duration_seconds_count{operation_type="update"} 2
kubelet_pod_worker_duration_seconds_sum{operation_type="update"} 4
`, metrics.PodWorkerDuration)
	compare(t, w.reg, `
lockstep_pod_worker_steps_total{namespace="ns",operation_type="create",pod="p",pod_uid="u1"} 1
lockstep_pod_worker_steps_total{namespace="ns",operation_type="kill",pod="p",pod_uid="u1"} 1
lockstep_pod_worker_steps_total{namespace="ns",operation_type="sync",pod="p",pod_uid="u1"} 2
lockstep_pod_worker_steps_total{namespace="ns",operation_type="terminated",pod="p",pod_uid="u1"} 1
lockstep_pod_worker_steps_total{namespace="ns",operation_type="update",pod="p",pod_uid="u1"} 2
`, metrics.PodWorkerSteps)
	if err := pw.Forget("u1"); err != nil {
		t.Fatal(err)
	}
	compare(t, w.reg, ``, metrics.PodWorkerSteps)
}

// reconcilePods is one running container of one pod, for the CPU
// manager's reconcile loop.
type reconcilePods struct{}

func (reconcilePods) HoldingResources() ([]*corev1.Pod, bool) { return nil, true }
func (reconcilePods) RunningContainers() []cpumanager.Container {
	return []cpumanager.Container{{PodUID: "u1", Name: "app", ID: "c1"}}
}

// updates accepts every cpuset update.
type updates struct{}

func (updates) UpdateContainerResources(context.Context, string, *runtimeapi.ContainerResources) error {
	return nil
}

// The static CPU manager counts each reconcile pass, every
// ReconcilePeriod, whether or not a cpuset had to change.
func TestCPUManagerReconcileHook(t *testing.T) {
	w := newWorld(t)
	info := deps.MachineInfo{CPUs: 4, Topology: []deps.CPUInfo{{ID: 0}, {ID: 1, CoreID: 1}, {ID: 2, CoreID: 2}, {ID: 3, CoreID: 3}}}
	cm, err := cpumanager.New(w.k.Deps().Core, cpumanager.Ports{Runtime: updates{}, Files: w.fs, Metrics: w.m},
		cpumanager.Config{Policy: cpumanager.PolicyStatic, NumReservedCPUs: 1, ReconcilePeriod: 2 * time.Second, RootDir: "/var/lib/kubelet"}, info)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := w.k.Tasks().WithCancel(context.Background())
	cm.Start(ctx, reconcilePods{})
	if err := w.k.RunFor(9 * time.Second); err != nil {
		t.Fatal(err)
	}
	cancel()
	compare(t, w.reg, `
lockstep_cpu_manager_reconciles_total 4
`, metrics.CPUManagerReconciles)
}

func testPod(name, image string, init bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullIfNotPresent}},
			RestartPolicy: corev1.RestartPolicyAlways,
		},
	}
	if init {
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: image, ImagePullPolicy: corev1.PullIfNotPresent}}
	}
	return p
}

// The executor reports sandboxes and containers it starts, and why a
// start failed.
func TestExecutorStartHooks(t *testing.T) {
	w := newWorld(t)
	if err := w.rt.FailPull("example.com/missing:1", "", 0); err != nil {
		t.Fatal(err)
	}
	d := w.k.Deps()
	d.Runtime = w.rt
	d.Images = w.rt
	d.Files = w.fs
	e := runtimesync.NewExecutor(d.Core, runtimesync.Ports{Runtime: d.Runtime, Images: d.Images, Files: d.Files, Events: d.API.Events}, runtimesync.Config{Node: podspec.NodeInfo{NodeName: "n"}, Observer: w.m})
	sync := func(ctx context.Context, pod *corev1.Pod) error {
		_, err := e.Execute(ctx, pod, &podstate.PodStatus{UID: pod.UID}, false, nil, nil)
		return err
	}
	var errs []error
	w.run(t, func(ctx context.Context) {
		errs = append(errs,
			sync(ctx, testPod("plain", "busybox:latest", false)),
			sync(ctx, testPod("with-init", "busybox:latest", true)),
			sync(ctx, testPod("missing", "example.com/missing:1", false)))
		if err := w.rt.InjectError("RunPodSandbox", errors.New("no network"), 1); err != nil {
			t.Error(err)
		}
		errs = append(errs, sync(ctx, testPod("no-sandbox", "busybox:latest", false)))
	})
	if got := []bool{errs[0] == nil, errs[1] == nil, errs[2] == nil, errs[3] == nil}; !cmp.Equal(got, []bool{true, true, false, false}) {
		t.Errorf("sync errors %v; want only the missing image and the sandbox failure to fail", errs)
	}
	compare(t, w.reg, `
kubelet_started_containers_errors_total{code="ErrImagePull",container_type="container"} 1
kubelet_started_containers_total{container_type="container"} 2
kubelet_started_containers_total{container_type="init_container"} 1
kubelet_started_pods_errors_total 1
kubelet_started_pods_total 4
`, metrics.StartedContainers, metrics.StartedContainersErrors, metrics.StartedPods, metrics.StartedPodsErrors)
}

// The observer interfaces are satisfied by *Metrics as the agent wires
// them.
var (
	_ pleg.Observer        = (*metrics.Metrics)(nil)
	_ podworkers.Observer  = (*metrics.Metrics)(nil)
	_ runtimesync.Observer = (*metrics.Metrics)(nil)
	_ cpumanager.Observer  = (*metrics.Metrics)(nil)
	_ eviction.Observer    = (*metrics.Metrics)(nil)
	_ nodestatus.Observer  = (*metrics.Metrics)(nil)
)
