package statsmetrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/stats"
)

type source struct {
	s    stats.Sample
	err  error
	pods []*corev1.Pod
}

func (s source) Stats(context.Context) (stats.Sample, error) { return s.s, s.err }
func (s source) Pods() []*corev1.Pod                         { return s.pods }
func (s source) NodeName() string                            { return "node-a" }

var (
	sampleAt = time.Unix(1000, 0)
	created  = time.Unix(900, 500_000_000)
)

func u64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

// fixture is one pod "web" with a running container "app" (2.5 core-s,
// 10 MiB working set) and an exited one, on a 2-CPU, 4 GiB node.
func fixture() source {
	at := sampleAt.UnixNano()
	labels := map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.pod.name": "web",
		"io.kubernetes.pod.namespace": "default", "io.kubernetes.container.name": "app"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:e2e", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}}},
	}
	return source{pods: []*corev1.Pod{pod}, s: stats.Sample{
		Time:    sampleAt,
		Machine: deps.MachineInfo{CPUs: 2, MemoryBytes: 4 << 30},
		Usage:   deps.MachineUsage{MemoryAvailableBytes: 3 << 30},
		Containers: []*runtimeapi.Container{
			{Id: "c1", PodSandboxId: "s1", State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: created.UnixNano(), Labels: labels,
				Image: &runtimeapi.ImageSpec{Image: "sha256:abc"}},
			{Id: "c0", PodSandboxId: "s1", State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: 1, Labels: labels},
		},
		ContainerStats: []*runtimeapi.ContainerStats{{
			Attributes:    &runtimeapi.ContainerAttributes{Id: "c1"},
			Cpu:           &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u64(2_500_000_000), UsageNanoCores: u64(100_000_000)},
			Memory:        &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: u64(10 << 20), UsageBytes: u64(12 << 20), RssBytes: u64(8 << 20)},
			WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"}, UsedBytes: u64(4096), InodesUsed: u64(3)},
			Swap:          &runtimeapi.SwapUsage{Timestamp: at, SwapUsageBytes: u64(1000), SwapAvailableBytes: u64(3000)},
		}},
		SandboxStats: []*runtimeapi.PodSandboxStats{{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: "s1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"}},
			Linux: &runtimeapi.LinuxPodSandboxStats{Network: &runtimeapi.NetworkUsage{Timestamp: at,
				DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: u64(100), TxBytes: u64(200), RxErrors: u64(0), TxErrors: u64(1)}}},
		}},
	}}
}

// scrape serves the collector and parses the exposition: one line per
// series, "name{labels} value @ms", sorted.
func scrape(t *testing.T, h interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/x", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, rec.Body)
	}
	var out []string
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			line := name + "{" + strings.Join(labels, ",") + "} " + model.SampleValue(v).String()
			if m.TimestampMs != nil {
				line += " @" + model.Time(m.GetTimestampMs()).String()
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

// /metrics/resource carries the kubelet's series for the node, the pod
// and its running container (swap as the runtime reports it; the limit is
// usage plus available), timestamped with the sample, and
// resource_scrape_error 0; without a sample, only resource_scrape_error 1.
func TestResource(t *testing.T) {
	got := scrape(t, Handler(NewResource(fixture(), nil)))
	want := []string{
		"container_cpu_usage_seconds_total{container=app,namespace=default,pod=web} 2.5 @1000",
		"container_memory_working_set_bytes{container=app,namespace=default,pod=web} 10485760 @1000",
		"container_start_time_seconds{container=app,namespace=default,pod=web} 900.5",
		"container_swap_limit_bytes{container=app,namespace=default,pod=web} 4000 @1000",
		"container_swap_usage_bytes{container=app,namespace=default,pod=web} 1000 @1000",
		"node_cpu_usage_seconds_total{} 2.5 @1000",
		"node_memory_working_set_bytes{} 1073741824 @1000",
		"pod_cpu_usage_seconds_total{namespace=default,pod=web} 2.5 @1000",
		"pod_memory_working_set_bytes{namespace=default,pod=web} 10485760 @1000",
		"pod_swap_usage_bytes{namespace=default,pod=web} 1000 @1000",
		"resource_scrape_error{} 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/metrics/resource (-want +got):\n%s", diff)
	}
	got = scrape(t, Handler(NewResource(source{err: errors.New("runtime down")}, nil)))
	if diff := cmp.Diff([]string{"resource_scrape_error{} 1"}, got); diff != "" {
		t.Errorf("/metrics/resource without stats (-want +got):\n%s", diff)
	}
}

// /metrics/cadvisor carries cAdvisor's container_* series for the running
// container, labelled as cAdvisor labels a CRI container, its spec's
// limits, the sandbox's network as container "POD", and the machine.
func TestCadvisor(t *testing.T) {
	got := scrape(t, Handler(NewCadvisor(fixture(), nil)))
	l := "container=app,id=c1,image=busybox:e2e,name=c1,namespace=default,pod=web"
	dev := "container=app,device=/var/lib/containerd,id=c1,image=busybox:e2e,name=c1,namespace=default,pod=web"
	pod := "container=POD,id=s1,image=,interface=eth0,name=s1,namespace=default,pod=web"
	want := []string{
		"container_cpu_usage_seconds_total{container=app,cpu=total,id=c1,image=busybox:e2e,name=c1,namespace=default,pod=web} 2.5 @1000",
		"container_fs_inodes_used{" + dev + "} 3 @1000",
		"container_fs_usage_bytes{" + dev + "} 4096 @1000",
		"container_last_seen{" + l + "} 1000",
		"container_memory_rss{" + l + "} 8388608 @1000",
		"container_memory_usage_bytes{" + l + "} 12582912 @1000",
		"container_memory_working_set_bytes{" + l + "} 10485760 @1000",
		"container_network_receive_bytes_total{" + pod + "} 100 @1000",
		"container_network_receive_errors_total{" + pod + "} 0 @1000",
		"container_network_transmit_bytes_total{" + pod + "} 200 @1000",
		"container_network_transmit_errors_total{" + pod + "} 1 @1000",
		"container_spec_cpu_period{" + l + "} 100000",
		"container_spec_cpu_quota{" + l + "} 50000",
		"container_spec_cpu_shares{" + l + "} 102",
		"container_spec_memory_limit_bytes{" + l + "} 67108864",
		"container_start_time_seconds{" + l + "} 900.5",
		"machine_cpu_cores{} 2",
		"machine_memory_bytes{} 4294967296",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/metrics/cadvisor (-want +got):\n%s", diff)
	}
}
