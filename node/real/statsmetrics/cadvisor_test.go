package statsmetrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/cgstats"
	"github.com/lockstep-dev/lockstep/node/real/cgstats/cgstatstest"
	"github.com/lockstep-dev/lockstep/node/stats"
)

const mb, kb = 1000 * 1000, 1000

// bound is a series' allowed range for the node suite's pods.
type bound struct{ lo, hi float64 }

// suiteBounds are container_metrics_test.go's matchers for
// busybox-container (v1.37.2): every one must be present.
func suiteBounds(now time.Time) map[string]bound {
	ts := bound{float64(now.Add(-time.Minute).Unix()), float64(now.Add(2 * time.Minute).Unix())}
	return map[string]bound{
		"container_blkio_device_usage_total": {0, 10 * mb}, "container_cpu_system_seconds_total": {0, 100},
		"container_cpu_usage_seconds_total": {0, 100}, "container_cpu_user_seconds_total": {0, 100},
		"container_file_descriptors": {0, 100}, "container_fs_reads_bytes_total": {0, 10 * mb},
		"container_fs_reads_total": {0, 100}, "container_fs_usage_bytes": {0, 1 * mb},
		"container_fs_writes_bytes_total": {0, 1 * mb}, "container_fs_writes_total": {0, 200},
		"container_last_seen": ts, "container_memory_cache": {0, 10 * mb},
		"container_memory_events_high_total": {0, 100}, "container_memory_events_max_total": {0, 100},
		"container_memory_failcnt": {0, 0}, "container_memory_failures_total": {0, 1 * mb},
		"container_memory_mapped_file": {0, 10 * mb}, "container_memory_max_usage_bytes": {0, 80 * mb},
		"container_memory_rss": {10 * kb, 80 * mb}, "container_memory_swap": {0, 0},
		"container_memory_usage_bytes": {10 * kb, 80 * mb}, "container_memory_working_set_bytes": {10 * kb, 80 * mb},
		"container_oom_events_total": {0, 0}, "container_processes": {0, 10}, "container_sockets": {0, 10},
		"container_spec_cpu_period": {100000, 100000}, "container_spec_cpu_shares": {2, 2},
		"container_spec_memory_limit_bytes": {79953920, 79998976}, "container_spec_memory_reservation_limit_bytes": {0, 0},
		"container_spec_memory_swap_limit_bytes": {0, 80 * mb}, "container_start_time_seconds": ts,
		"container_threads": {0, 10}, "container_threads_max": {0, 100000}, "container_ulimits_soft": {0, 1073741816},
	}
}

// suiteOptional are the spec's series a container may lack but the
// scrape must carry (gstruct.MatchKeys without IgnoreMissing); podBounds
// its network series of container "POD", the same.
var suiteOptional = []string{"container_fs_io_current", "container_fs_io_time_seconds_total", "container_fs_io_time_weighted_seconds_total",
	"container_fs_inodes_free", "container_fs_inodes_total", "container_fs_limit_bytes", "container_fs_read_seconds_total",
	"container_fs_reads_merged_total", "container_fs_sector_reads_total", "container_fs_sector_writes_total",
	"container_fs_write_seconds_total", "container_fs_writes_merged_total"}

var podBounds = map[string]bound{
	"container_network_receive_bytes_total": {10, 10 * mb}, "container_network_receive_errors_total": {0, 1000},
	"container_network_receive_packets_dropped_total": {0, 1000}, "container_network_receive_packets_total": {0, 1000},
	"container_network_transmit_bytes_total": {10, 10 * mb}, "container_network_transmit_errors_total": {0, 1000},
	"container_network_transmit_packets_dropped_total": {0, 1000}, "container_network_transmit_packets_total": {0, 1000},
}

// suiteSample is the node suite's pod stats-busybox-0 a few seconds after
// its container's restart, the kernel's figures of its container and of
// the root as cgstats reads them on a host of layout l.
func suiteSample(t *testing.T, now time.Time, l cgstatstest.Layout) source {
	h := cgstatstest.New(t, l)
	r := cgstats.Reader{Root: h.Root, Proc: h.Proc, Sys: h.Sys, V1: h.V1, PodsCgroup: h.PodsCgroup}
	kernel, err := r.Cgroup(h.ContainerCgroup)
	if err != nil {
		t.Fatal(err)
	}
	root, err := r.Cgroup("/")
	if err != nil {
		t.Fatal(err)
	}
	at := now.UnixNano()
	labels := map[string]string{"io.kubernetes.pod.uid": "uid-0", "io.kubernetes.pod.name": "stats-busybox-0",
		"io.kubernetes.pod.namespace": "ns", "io.kubernetes.container.name": "busybox-container"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stats-busybox-0", Namespace: "ns", UID: "uid-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "busybox-container", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("80M")}}}}}}
	return source{pods: []*corev1.Pod{pod}, s: stats.Sample{
		Time:    now,
		Machine: deps.MachineInfo{CPUs: 2, MemoryBytes: 4 << 30},
		Usage:   deps.MachineUsage{NodeFSCapacityBytes: 100 << 30, NodeFSAvailableBytes: 60 << 30, NodeFSInodes: 6e6, NodeFSInodesFree: 5e6},
		Containers: []*runtimeapi.Container{{Id: "c1", PodSandboxId: "s1", State: runtimeapi.ContainerState_CONTAINER_RUNNING,
			CreatedAt: now.Add(-20 * time.Second).UnixNano(), Labels: labels}},
		ContainerStats: []*runtimeapi.ContainerStats{{
			Attributes:    &runtimeapi.ContainerAttributes{Id: "c1"},
			Cpu:           &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u64(90e6)},
			Memory:        &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: u64(737280), UsageBytes: u64(1302528)},
			WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"}, UsedBytes: u64(12288), InodesUsed: u64(3)},
		}},
		SandboxStats: []*runtimeapi.PodSandboxStats{{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: "s1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "stats-busybox-0", Namespace: "ns", Uid: "uid-0"}},
			Linux:      &runtimeapi.LinuxPodSandboxStats{Network: stats.NetworkUsage([]deps.NetInterface{{Name: "eth0", RxBytes: 1200, RxPackets: 12, TxBytes: 800, TxPackets: 9}}, at)},
		}},
		Kernel: &stats.KernelStats{
			Containers: map[string]deps.CgroupStats{"c1": kernel},
			System:     map[string]deps.CgroupStats{"": root},
			Network:    map[string][]deps.NetInterface{"s1": {{Name: "eth0", RxBytes: 1200, RxPackets: 12, TxBytes: 800, TxPackets: 9}}},
		},
	}}
}

// Every series container_metrics_test.go's matchers name is scraped,
// and each of busybox-container's samples (and of its pod's "POD"
// network) lies within the spec's bounds; the memory limit is the
// cgroup's page-rounded value, not the spec's 80000000. The spec does
// not depend on the cgroup version: so on a v2 host and a v1 hybrid one.
func TestCadvisorMeetsTheNodeSuitesBounds(t *testing.T) {
	for _, l := range cgstatstest.Layouts {
		t.Run(l.String(), func(t *testing.T) { cadvisorMeetsTheNodeSuitesBounds(t, l) })
	}
}

func cadvisorMeetsTheNodeSuitesBounds(t *testing.T, l cgstatstest.Layout) {
	now := time.Unix(1_700_000_000, 0)
	rec := httptest.NewRecorder()
	Handler(NewCadvisor(suiteSample(t, now, l), nil)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/cadvisor", nil))
	dec := expfmt.SampleDecoder{Dec: expfmt.NewDecoder(strings.NewReader(rec.Body.String()), expfmt.NewFormat(expfmt.TypeTextPlain)), Opts: &expfmt.DecodeOptions{}}
	byName := map[string][]*model.Sample{}
	for {
		var v model.Vector
		if err := dec.Decode(&v); err != nil {
			break
		}
		for _, s := range v {
			n := string(s.Metric[model.MetricNameLabel])
			byName[n] = append(byName[n], s)
		}
	}
	check := func(name, ctr string, b bound, required bool) {
		t.Helper()
		found := 0
		for _, s := range byName[name] {
			if s.Metric["namespace"] != "ns" || s.Metric["pod"] != "stats-busybox-0" || string(s.Metric["container"]) != ctr {
				continue
			}
			found++
			if v := float64(s.Value); v < b.lo || v > b.hi {
				t.Errorf("%s %v = %v, want within [%v, %v]", name, s.Metric, v, b.lo, b.hi)
			}
		}
		if required && found == 0 {
			t.Errorf("%s: no sample of %s", name, ctr)
		}
		if len(byName[name]) == 0 {
			t.Errorf("%s: not scraped at all (the spec's MatchKeys needs the key)", name)
		}
	}
	for name, b := range suiteBounds(now) {
		check(name, "busybox-container", b, true)
	}
	for _, name := range suiteOptional {
		check(name, "busybox-container", bound{0, 0}, false)
	}
	for name, b := range podBounds {
		check(name, "POD", b, true)
	}
	for _, s := range byName["container_spec_memory_limit_bytes"] {
		if s.Value != 79998976 {
			t.Errorf("memory limit %v, want the cgroup's 79998976", s.Value)
		}
	}
}
