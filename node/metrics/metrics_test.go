package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// world is a kernel, a fake runtime on its clock and fresh metrics.
type world struct {
	k   *kernel.Kernel
	rt  *fakecri.Runtime
	fs  *memfs.FS
	reg *prometheus.Registry
	m   *metrics.Metrics
}

func newWorld(t *testing.T) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	fs := memfs.New()
	rt := fakecri.New(fakecri.Config{
		Clock: k, Rand: k.Rand(), Files: fs,
		NewSignal: func(name string) fakecri.Signal { return k.NewSignal(name) },
	})
	reg := prometheus.NewRegistry()
	return &world{k: k, rt: rt, fs: fs, reg: reg, m: metrics.NewWithProbes(reg, reg)}
}

// run runs fn as a simulated task and the world until it is idle.
func (w *world) run(t *testing.T, fn func(ctx context.Context)) {
	t.Helper()
	done := false
	w.k.Tasks().Go("test", func() { fn(context.Background()); done = true })
	if err := w.k.RunUntil(func() bool { return done }, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// compare checks the named metrics of the registry against text in the
// exposition format (HELP lines are not compared).
func compare(t *testing.T, g prometheus.Gatherer, text string, names ...string) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			got.WriteString(sample(mf.GetName(), m))
		}
	}
	if diff := cmp.Diff(strings.TrimSpace(text), strings.TrimSpace(got.String())); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// sample renders one counter or gauge, or a histogram's count and sum,
// as "name{labels} value" lines.
func sample(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+`"`+l.GetValue()+`"`)
	}
	lbl := ""
	if len(ls) > 0 {
		lbl = "{" + strings.Join(ls, ",") + "}"
	}
	switch {
	case m.Counter != nil:
		return name + lbl + " " + num(m.GetCounter().GetValue()) + "\n"
	case m.Gauge != nil:
		return name + lbl + " " + num(m.GetGauge().GetValue()) + "\n"
	case m.Histogram != nil:
		h := m.GetHistogram()
		return name + "_count" + lbl + " " + num(float64(h.GetSampleCount())) + "\n" +
			name + "_sum" + lbl + " " + num(h.GetSampleSum()) + "\n"
	}
	return name + lbl + " ?\n"
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestInstrumentRuntimeCountsCallsErrorsAndDurations(t *testing.T) {
	w := newWorld(t)
	if err := w.rt.InjectLatency("ListContainers", 2*time.Second, 2*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.rt.InjectError("Version", status.Error(codes.Unavailable, "runtime down"), 1); err != nil {
		t.Fatal(err)
	}
	if err := w.rt.InjectLatency("Version", 300*time.Millisecond, 300*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	rs := metrics.InstrumentRuntime(w.rt, w.m, w.k)
	var errs []error
	w.run(t, func(ctx context.Context) {
		for range 3 {
			_, err := rs.ListContainers(ctx, nil)
			errs = append(errs, err)
		}
		for range 2 {
			_, err := rs.Version(ctx, "v1")
			errs = append(errs, err)
		}
		_, err := rs.ListPodSandbox(ctx, nil)
		errs = append(errs, err)
	})
	if got := status.Code(errs[3]); got != codes.Unavailable {
		t.Errorf("the first Version call: code %v, want Unavailable (the decorator must pass errors through)", got)
	}
	if err := errors.Join(errs[0], errs[1], errs[2], errs[4], errs[5]); err != nil {
		t.Errorf("calls without an injected error failed: %v", err)
	}
	compare(t, w.reg, `
kubelet_runtime_operations_duration_seconds_count{operation_type="list_containers"} 3
kubelet_runtime_operations_duration_seconds_sum{operation_type="list_containers"} 6
kubelet_runtime_operations_duration_seconds_count{operation_type="list_podsandbox"} 1
kubelet_runtime_operations_duration_seconds_sum{operation_type="list_podsandbox"} 0
kubelet_runtime_operations_duration_seconds_count{operation_type="version"} 2
kubelet_runtime_operations_duration_seconds_sum{operation_type="version"} 0.3
kubelet_runtime_operations_errors_total{operation_type="version"} 1
kubelet_runtime_operations_total{operation_type="list_containers"} 3
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 1
kubelet_runtime_operations_total{operation_type="version"} 2
`, metrics.RuntimeOperations, metrics.RuntimeOperationsErrors, metrics.RuntimeOperationsDuration)

	// The 2 s calls land in the (1.22 s, 3.05 s] bucket of the kubelet's
	// exponential layout, checked in the exposition text.
	const want = `
# HELP kubelet_runtime_operations_total CRI calls made, by operation type.
# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="list_containers"} 3
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 1
kubelet_runtime_operations_total{operation_type="version"} 2
`
	if err := testutil.GatherAndCompare(w.reg, strings.NewReader(want), metrics.RuntimeOperations); err != nil {
		t.Error(err)
	}
	h := histogram(t, w.reg, metrics.RuntimeOperationsDuration, "list_containers")
	for _, b := range h.GetBucket() {
		wantN := uint64(0)
		if b.GetUpperBound() >= 2 {
			wantN = 3
		}
		if b.GetCumulativeCount() != wantN {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), wantN)
		}
	}
	if n := len(h.GetBucket()); n != 14 {
		t.Errorf("%d buckets, want the kubelet's 14", n)
	}
}

func TestInstrumentImages(t *testing.T) {
	w := newWorld(t)
	if err := w.rt.FailPull("example.com/missing:1", "", 0); err != nil {
		t.Fatal(err)
	}
	is := metrics.InstrumentImages(w.rt, w.m, w.k)
	var pullErr error
	w.run(t, func(ctx context.Context) {
		_, _ = is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:latest"}, false)
		_, _ = is.ListImages(ctx, nil)
		_, pullErr = is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "example.com/missing:1"}, nil, nil)
		_, _ = is.ImageFsInfo(ctx)
	})
	if pullErr == nil {
		t.Fatal("the pull of a missing image succeeded")
	}
	compare(t, w.reg, `
kubelet_runtime_operations_errors_total{operation_type="pull_image"} 1
kubelet_runtime_operations_total{operation_type="image_fs_info"} 1
kubelet_runtime_operations_total{operation_type="image_status"} 1
kubelet_runtime_operations_total{operation_type="list_images"} 1
kubelet_runtime_operations_total{operation_type="pull_image"} 1
`, metrics.RuntimeOperations, metrics.RuntimeOperationsErrors)
}

// Every measured method of the runtime decorator reports under its own
// kubelet operation name.
func TestInstrumentRuntimeOperationNames(t *testing.T) {
	w := newWorld(t)
	rs := metrics.InstrumentRuntime(w.rt, w.m, w.k)
	w.run(t, func(ctx context.Context) {
		_, _ = rs.Version(ctx, "v1")
		_, _ = rs.Status(ctx, false)
		_, _ = rs.RuntimeConfig(ctx)
		_ = rs.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{})
		_, _ = rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{}, "")
		_ = rs.StopPodSandbox(ctx, "x")
		_ = rs.RemovePodSandbox(ctx, "x")
		_, _ = rs.PodSandboxStatus(ctx, "x", false)
		_, _ = rs.ListPodSandbox(ctx, nil)
		_, _ = rs.PortForward(ctx, &runtimeapi.PortForwardRequest{})
		_, _ = rs.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{})
		_ = rs.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{})
		_, _ = rs.RestorePod(ctx, &runtimeapi.RestorePodRequest{})
		_, _ = rs.CreateContainer(ctx, "x", &runtimeapi.ContainerConfig{}, &runtimeapi.PodSandboxConfig{})
		_ = rs.StartContainer(ctx, "x")
		_ = rs.StopContainer(ctx, "x", 0)
		_ = rs.RemoveContainer(ctx, "x")
		_, _ = rs.ListContainers(ctx, nil)
		_, _ = rs.ContainerStatus(ctx, "x", false)
		_ = rs.UpdateContainerResources(ctx, "x", &runtimeapi.ContainerResources{})
		_, _, _ = rs.ExecSync(ctx, "x", []string{"true"}, time.Second)
		_, _ = rs.Exec(ctx, &runtimeapi.ExecRequest{})
		_, _ = rs.Attach(ctx, &runtimeapi.AttachRequest{})
		_ = rs.ReopenContainerLog(ctx, "x")
		_ = rs.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{})
		_, _ = rs.ContainerStats(ctx, "x")
		_, _ = rs.ListContainerStats(ctx, nil)
		_, _ = rs.PodSandboxStats(ctx, "x")
		_, _ = rs.ListPodSandboxStats(ctx, nil)
		_, _ = rs.ListMetricDescriptors(ctx)
		_, _ = rs.ListPodSandboxMetrics(ctx)
	})
	want := []string{
		"attach", "checkpoint_container", "checkpoint_pod", "container_stats", "container_status",
		"create_container", "exec", "exec_sync", "list_container_stats", "list_containers",
		"list_metric_descriptors", "list_podsandbox", "list_podsandbox_metrics", "list_podsandbox_stats",
		"podsandbox_stats", "podsandbox_status", "port_forward", "remove_container", "remove_podsandbox",
		"reopen_container_log", "restore_pod", "run_podsandbox", "runtime_config", "start_container",
		"status", "stop_container", "stop_podsandbox", "update_container", "update_podsandbox_resources",
		"update_runtime_config", "version",
	}
	var got []string
	for _, m := range family(t, w.reg, metrics.RuntimeOperations).GetMetric() {
		if m.GetCounter().GetValue() != 1 {
			t.Errorf("%v counted %v times, want 1", m.GetLabel(), m.GetCounter().GetValue())
		}
		got = append(got, m.GetLabel()[0].GetValue())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operation types (-want +got):\n%s", diff)
	}
}

func TestNilMetricsIsSafe(t *testing.T) {
	w := newWorld(t)
	if got := metrics.InstrumentRuntime(w.rt, nil, w.k); got != w.rt {
		t.Errorf("InstrumentRuntime with nil metrics wrapped the runtime")
	}
	if got := metrics.InstrumentImages(w.rt, nil, w.k); got != w.rt {
		t.Errorf("InstrumentImages with nil metrics wrapped the service")
	}
	var m *metrics.Metrics
	m.SetNodeName("n")
	m.SetRunning(1, map[string]int{"running": 1})
	m.ObservePodStartDuration(time.Second)
	m.ObserveProbe(metrics.ProbeLiveness, metrics.ProbeFailed, metrics.ProbeTarget{}, time.Second)
	m.ForgetProbes(metrics.ProbeTarget{})
	m.ObserveRelist(time.Second, time.Second, time.Unix(1, 0))
	m.ObservePodWorker(podworkers.PodRef{UID: "u"}, podworkers.OpSync, time.Second)
	m.ForgetPodWorker("u")
	m.ObserveEvictionCycle()
	m.ObserveCPUReconcile()
	m.ObserveRegistrationAttempt()
	m.ObservePodSandboxStart(nil)
	m.ObserveContainerStart(false, "")
}

func TestSetRunning(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.NewWithProbes(reg, reg)
	names := []string{metrics.RunningPods, metrics.RunningContainers}
	compare(t, reg, `
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 0
kubelet_running_containers{container_state="running"} 0
kubelet_running_containers{container_state="unknown"} 0
kubelet_running_pods 0
`, names...)

	m.SetRunning(3, map[string]int{"Running": 4, "exited": 2, "paused": 1})
	compare(t, reg, `
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 2
kubelet_running_containers{container_state="paused"} 1
kubelet_running_containers{container_state="running"} 4
kubelet_running_containers{container_state="unknown"} 0
kubelet_running_pods 3
`, names...)

	m.SetRunning(1, map[string]int{"running": 1})
	compare(t, reg, `
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 0
kubelet_running_containers{container_state="running"} 1
kubelet_running_containers{container_state="unknown"} 0
kubelet_running_pods 1
`, names...)
}

func TestCountRunning(t *testing.T) {
	ready := podstate.Sandbox{State: podstate.SandboxReady}
	notReady := podstate.Sandbox{State: podstate.SandboxNotReady}
	c := func(s podstate.ContainerState) podstate.Container { return podstate.Container{State: s} }
	for _, tc := range []struct {
		name      string
		pods      []*podstate.PodStatus
		wantPods  int
		wantState map[string]int
	}{
		{name: "none", wantState: map[string]int{}},
		{
			name: "mixed",
			pods: []*podstate.PodStatus{
				{Sandboxes: []podstate.Sandbox{ready}, Containers: []podstate.Container{c(podstate.ContainerRunning), c(podstate.ContainerExited)}},
				{Sandboxes: []podstate.Sandbox{notReady, ready}, Containers: []podstate.Container{c(podstate.ContainerCreated)}},
				{Sandboxes: []podstate.Sandbox{notReady}, Containers: []podstate.Container{c(podstate.ContainerExited), c(podstate.ContainerUnknown)}},
				nil,
			},
			wantPods:  2,
			wantState: map[string]int{"running": 1, "exited": 2, "created": 1, "unknown": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, byState := metrics.CountRunning(tc.pods)
			if pods != tc.wantPods {
				t.Errorf("running pods %d, want %d", pods, tc.wantPods)
			}
			if diff := cmp.Diff(tc.wantState, byState); diff != "" {
				t.Errorf("containers by state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeNameAndProbes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.NewWithProbes(reg, reg)
	m.SetNodeName("old")
	m.SetNodeName("node-1")
	target := metrics.ProbeTarget{Namespace: "ns", Pod: "web", PodUID: "u1", Container: "app"}
	m.ObserveProbe(metrics.ProbeReadiness, metrics.ProbeSuccessful, target, 250*time.Millisecond)
	m.ObserveProbe(metrics.ProbeReadiness, metrics.ProbeFailed, target, 500*time.Millisecond)
	m.ObserveProbe(metrics.ProbeReadiness, metrics.ProbeUnknown, target, time.Second)
	names := []string{metrics.NodeName, metrics.ProberProbeTotal, metrics.ProberProbeDurationSeconds}
	compare(t, reg, `
kubelet_node_name{node="node-1"} 1
prober_probe_duration_seconds_count{container="app",namespace="ns",pod="web",probe_type="Readiness"} 2
prober_probe_duration_seconds_sum{container="app",namespace="ns",pod="web",probe_type="Readiness"} 0.75
prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="failed"} 1
prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="successful"} 1
prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="unknown"} 1
`, names...)
	m.ForgetProbes(target)
	compare(t, reg, `
kubelet_node_name{node="node-1"} 1
`, names...)
}

func TestNewWithProbesSplitsRegistries(t *testing.T) {
	main, probes := prometheus.NewRegistry(), prometheus.NewRegistry()
	m := metrics.NewWithProbes(main, probes)
	m.ObserveProbe(metrics.ProbeLiveness, metrics.ProbeSuccessful, metrics.ProbeTarget{Pod: "p"}, time.Millisecond)
	m.ObservePodStartDuration(time.Second)
	if n, err := testutil.GatherAndCount(main, metrics.ProberProbeTotal); err != nil || n != 0 {
		t.Errorf("probe series on the main registry: %d (%v)", n, err)
	}
	if n, err := testutil.GatherAndCount(probes, metrics.ProberProbeTotal); err != nil || n != 1 {
		t.Errorf("probe series on the probes registry: %d (%v), want 1", n, err)
	}
	if n, err := testutil.GatherAndCount(probes, metrics.PodStartDuration); err != nil || n != 0 {
		t.Errorf("kubelet series on the probes registry: %d (%v)", n, err)
	}
}

// The exposition served by Handler carries exactly the kubelet's metric
// names, types and label names (a golden list: dashboards depend on it).
func TestExpositionGoldenNames(t *testing.T) {
	w := newWorld(t)
	reg, m := w.reg, w.m
	// Touch every vector once so that each family is exposed.
	m.SetNodeName("n")
	m.ObservePodStartDuration(3 * time.Second)
	m.ObservePodWorker(podworkers.PodRef{UID: "u", Namespace: "ns", Name: "p"}, podworkers.OpSync, time.Second)
	m.ObserveEvictionCycle()
	m.ObserveCPUReconcile()
	m.ObserveRegistrationAttempt()
	m.ObserveRelist(time.Millisecond, time.Second, time.Unix(1_700_000_000, 0))
	m.SetRunning(1, map[string]int{"running": 1})
	m.ObservePodSandboxStart(errors.New("boom"))
	m.ObserveContainerStart(true, "RunContainerError")
	m.ObserveProbe(metrics.ProbeStartup, metrics.ProbeSuccessful, metrics.ProbeTarget{Pod: "p"}, time.Millisecond)
	if err := w.rt.InjectError("Version", errors.New("down"), 1); err != nil {
		t.Fatal(err)
	}
	rs := metrics.InstrumentRuntime(w.rt, m, w.k)
	w.run(t, func(ctx context.Context) { _, _ = rs.Version(ctx, "v1") })

	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var types []string
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			types = append(types, rest)
		}
	}
	want := []string{
		"kubelet_node_name gauge",
		"kubelet_pleg_last_seen_seconds gauge",
		"kubelet_pleg_relist_duration_seconds histogram",
		"kubelet_pleg_relist_interval_seconds histogram",
		"kubelet_pod_start_duration_seconds histogram",
		"kubelet_pod_worker_duration_seconds histogram",
		"kubelet_running_containers gauge",
		"kubelet_running_pods gauge",
		"kubelet_runtime_operations_duration_seconds histogram",
		"kubelet_runtime_operations_errors_total counter",
		"kubelet_runtime_operations_total counter",
		"kubelet_started_containers_errors_total counter",
		"kubelet_started_containers_total counter",
		"kubelet_started_pods_errors_total counter",
		"kubelet_started_pods_total counter",
		"lockstep_cpu_manager_reconciles_total counter",
		"lockstep_eviction_manager_cycles_total counter",
		"lockstep_node_registration_attempts_total counter",
		"lockstep_pod_worker_steps_total counter",
		"prober_probe_duration_seconds histogram",
		"prober_probe_total counter",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("exposed metric families (-want +got):\n%s", diff)
	}

	labels := map[string][]string{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		var names []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
		labels[mf.GetName()] = names
	}
	wantLabels := map[string][]string{
		"kubelet_node_name":                           {"node"},
		"kubelet_pleg_last_seen_seconds":              nil,
		"kubelet_pleg_relist_duration_seconds":        nil,
		"kubelet_pleg_relist_interval_seconds":        nil,
		"kubelet_pod_start_duration_seconds":          nil,
		"kubelet_pod_worker_duration_seconds":         {"operation_type"},
		"kubelet_running_containers":                  {"container_state"},
		"kubelet_running_pods":                        nil,
		"kubelet_runtime_operations_duration_seconds": {"operation_type"},
		"kubelet_runtime_operations_errors_total":     {"operation_type"},
		"kubelet_runtime_operations_total":            {"operation_type"},
		"kubelet_started_containers_errors_total":     {"code", "container_type"},
		"kubelet_started_containers_total":            {"container_type"},
		"kubelet_started_pods_errors_total":           nil,
		"kubelet_started_pods_total":                  nil,
		"lockstep_cpu_manager_reconciles_total":       nil,
		"lockstep_eviction_manager_cycles_total":      nil,
		"lockstep_node_registration_attempts_total":   nil,
		"lockstep_pod_worker_steps_total":             {"namespace", "operation_type", "pod", "pod_uid"},
		"prober_probe_duration_seconds":               {"container", "namespace", "pod", "probe_type"},
		"prober_probe_total":                          {"container", "namespace", "pod", "pod_uid", "probe_type", "result"},
	}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("label names (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(body), `kubelet_pleg_last_seen_seconds 1.7e+09`) {
		t.Errorf("kubelet_pleg_last_seen_seconds is not the Unix time in seconds:\n%s", body)
	}
	// The kubelet's bucket layouts.
	for _, c := range []struct {
		name  string
		first float64
		n     int
	}{
		{metrics.PodStartDuration, 0.5, 25},
		{metrics.PodWorkerDuration, 0.005, 11},
		{metrics.PLEGRelistDuration, 0.005, 11},
		{metrics.ProberProbeDurationSeconds, 0.005, 11},
		{metrics.RuntimeOperationsDuration, 0.005, 14},
	} {
		b := family(t, reg, c.name).GetMetric()[0].GetHistogram().GetBucket()
		if len(b) != c.n || b[0].GetUpperBound() != c.first {
			t.Errorf("%s: %d buckets from %g, want %d from %g", c.name, len(b), b[0].GetUpperBound(), c.n, c.first)
		}
	}
}

func family(t *testing.T, g prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric family %s", name)
	return nil
}

func histogram(t *testing.T, g prometheus.Gatherer, name, op string) *dto.Histogram {
	t.Helper()
	for _, m := range family(t, g, name).GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "operation_type" && l.GetValue() == op {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("no %s{operation_type=%q}", name, op)
	return nil
}
