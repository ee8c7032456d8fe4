package statsmetrics

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// cadvisorLabels are the labels of a container series, as cAdvisor sets
// them for a CRI container: id and name are the runtime's container ID
// (cAdvisor's id is the cgroup path, which the CRI does not report).
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// cadvisorDescs are the /metrics/cadvisor descriptions.
type cadvisorDescs struct {
	cpu, workingSet, usage, rss, fsUsage, fsInodes            *prometheus.Desc
	memLimit, cpuQuota, cpuPeriod, cpuShares, start, lastSeen *prometheus.Desc
	rxBytes, txBytes, rxErrors, txErrors                      *prometheus.Desc
	machineCores, machineMemory                               *prometheus.Desc
}

func newCadvisorDescs() cadvisorDescs {
	l := cadvisorLabels
	withCPU := append(append([]string{}, l...), "cpu")
	withDev := append(append([]string{}, l...), "device")
	withIf := append(append([]string{}, l...), "interface")
	return cadvisorDescs{
		cpu:           prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", withCPU, nil),
		workingSet:    prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes.", l, nil),
		usage:         prometheus.NewDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", l, nil),
		rss:           prometheus.NewDesc("container_memory_rss", "Size of RSS in bytes.", l, nil),
		fsUsage:       prometheus.NewDesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", withDev, nil),
		fsInodes:      prometheus.NewDesc("container_fs_inodes_used", "Number of inodes used by the container on this filesystem.", withDev, nil),
		memLimit:      prometheus.NewDesc("container_spec_memory_limit_bytes", "Memory limit for the container.", l, nil),
		cpuQuota:      prometheus.NewDesc("container_spec_cpu_quota", "CPU quota of the container.", l, nil),
		cpuPeriod:     prometheus.NewDesc("container_spec_cpu_period", "CPU period of the container.", l, nil),
		cpuShares:     prometheus.NewDesc("container_spec_cpu_shares", "CPU share of the container.", l, nil),
		start:         prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", l, nil),
		lastSeen:      prometheus.NewDesc("container_last_seen", "Last time a container was seen by the exporter", l, nil),
		rxBytes:       prometheus.NewDesc("container_network_receive_bytes_total", "Cumulative count of bytes received", withIf, nil),
		txBytes:       prometheus.NewDesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", withIf, nil),
		rxErrors:      prometheus.NewDesc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", withIf, nil),
		txErrors:      prometheus.NewDesc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", withIf, nil),
		machineCores:  prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", nil, nil),
		machineMemory: prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", nil, nil),
	}
}

// all are every description.
func (d cadvisorDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.cpu, d.workingSet, d.usage, d.rss, d.fsUsage, d.fsInodes, d.memLimit, d.cpuQuota,
		d.cpuPeriod, d.cpuShares, d.start, d.lastSeen, d.rxBytes, d.txBytes, d.rxErrors, d.txErrors, d.machineCores, d.machineMemory}
}

// NewCadvisor returns the /metrics/cadvisor collector over src: the
// latest sample's series, none when there is no sample.
func NewCadvisor(src Source, log *slog.Logger) prometheus.Collector {
	d := newCadvisorDescs()
	build := func(s stats.Sample) []prometheus.Metric { return cadvisorMetrics(d, s, src.Pods()) }
	return newSampleCollector(src, log, "/metrics/cadvisor", d.all(), build, nil)
}

// cadvisorMetrics are the series of one sample: the machine's, each
// running container's, and each pod sandbox's network (container "POD").
func cadvisorMetrics(d cadvisorDescs, s stats.Sample, pods []*corev1.Pod) []prometheus.Metric {
	var out metrics
	if s.Machine.CPUs > 0 {
		out.put(d.machineCores, 0, prometheus.GaugeValue, float64(s.Machine.CPUs))
	}
	if s.Machine.MemoryBytes > 0 {
		out.put(d.machineMemory, 0, prometheus.GaugeValue, float64(s.Machine.MemoryBytes))
	}
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	statsByID := make(map[string]*runtimeapi.ContainerStats, len(s.ContainerStats))
	for _, cs := range s.ContainerStats {
		statsByID[cs.GetAttributes().GetId()] = cs
	}
	now := s.Time.UnixNano()
	for _, c := range s.Containers {
		cs := statsByID[c.GetId()]
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || cs == nil {
			continue
		}
		out.container(d, c, cs, byUID, now)
	}
	for _, sb := range s.SandboxStats {
		out.sandboxNetwork(d, sb)
	}
	return out
}

// put appends one sample of desc at t (Unix nanoseconds; zero: none).
func (out *metrics) put(desc *prometheus.Desc, t int64, typ prometheus.ValueType, v float64, labels ...string) {
	out.add(desc, unixNano(t), typ, v, labels...)
}

// container appends the samples of one running container c with its
// stats cs (and its spec in its pod, if known).
func (out *metrics) container(d cadvisorDescs, c *runtimeapi.Container, cs *runtimeapi.ContainerStats, byUID map[types.UID]*corev1.Pod, now int64) {
	lbl := c.GetLabels()
	name := lbl[podstate.LabelContainerName]
	pod := byUID[types.UID(lbl[podstate.LabelPodUID])]
	spec := containerSpec(pod, name)
	image := c.GetImage().GetImage()
	if spec != nil && spec.Image != "" {
		image = spec.Image
	}
	labels := []string{name, c.GetId(), image, c.GetId(), lbl[podstate.LabelPodNamespace], lbl[podstate.LabelPodName]}
	if cpu := cs.GetCpu(); cpu.GetUsageCoreNanoSeconds() != nil {
		out.put(d.cpu, cpu.GetTimestamp(), prometheus.CounterValue, seconds(cpu.GetUsageCoreNanoSeconds().GetValue()), append(labels, "total")...)
	}
	if m := cs.GetMemory(); m != nil {
		if m.GetWorkingSetBytes() != nil {
			out.put(d.workingSet, m.GetTimestamp(), prometheus.GaugeValue, float64(m.GetWorkingSetBytes().GetValue()), labels...)
		}
		if m.GetUsageBytes() != nil {
			out.put(d.usage, m.GetTimestamp(), prometheus.GaugeValue, float64(m.GetUsageBytes().GetValue()), labels...)
		}
		if m.GetRssBytes() != nil {
			out.put(d.rss, m.GetTimestamp(), prometheus.GaugeValue, float64(m.GetRssBytes().GetValue()), labels...)
		}
	}
	if l := cs.GetWritableLayer(); l != nil {
		dev := l.GetFsId().GetMountpoint()
		out.put(d.fsUsage, l.GetTimestamp(), prometheus.GaugeValue, float64(l.GetUsedBytes().GetValue()), append(labels, dev)...)
		if l.GetInodesUsed() != nil {
			out.put(d.fsInodes, l.GetTimestamp(), prometheus.GaugeValue, float64(l.GetInodesUsed().GetValue()), append(labels, dev)...)
		}
	}
	if spec != nil {
		out.put(d.memLimit, 0, prometheus.GaugeValue, float64(spec.Resources.Limits.Memory().Value()), labels...)
		if cpu := spec.Resources.Limits.Cpu(); !cpu.IsZero() {
			out.put(d.cpuQuota, 0, prometheus.GaugeValue, float64(cgroups.MilliCPUToQuota(cpu.MilliValue())), labels...)
		}
		out.put(d.cpuPeriod, 0, prometheus.GaugeValue, 100000, labels...)
		out.put(d.cpuShares, 0, prometheus.GaugeValue, float64(cgroups.MilliCPUToShares(spec.Resources.Requests.Cpu().MilliValue())), labels...)
	}
	if created := c.GetCreatedAt(); created > 0 {
		out.put(d.start, 0, prometheus.GaugeValue, float64(created)/float64(time.Second), labels...)
	}
	out.put(d.lastSeen, 0, prometheus.GaugeValue, float64(now)/float64(time.Second), labels...)
}

// sandboxNetwork appends the network samples of one pod sandbox.
func (out *metrics) sandboxNetwork(d cadvisorDescs, sb *runtimeapi.PodSandboxStats) {
	net := sb.GetLinux().GetNetwork()
	if net == nil {
		return
	}
	a := sb.GetAttributes()
	labels := []string{"POD", a.GetId(), "", a.GetId(), a.GetMetadata().GetNamespace(), a.GetMetadata().GetName()}
	ifaces := net.GetInterfaces()
	if len(ifaces) == 0 && net.GetDefaultInterface() != nil {
		ifaces = []*runtimeapi.NetworkInterfaceUsage{net.GetDefaultInterface()}
	}
	for _, i := range ifaces {
		il := append(append([]string{}, labels...), i.GetName())
		out.put(d.rxBytes, net.GetTimestamp(), prometheus.CounterValue, float64(i.GetRxBytes().GetValue()), il...)
		out.put(d.txBytes, net.GetTimestamp(), prometheus.CounterValue, float64(i.GetTxBytes().GetValue()), il...)
		out.put(d.rxErrors, net.GetTimestamp(), prometheus.CounterValue, float64(i.GetRxErrors().GetValue()), il...)
		out.put(d.txErrors, net.GetTimestamp(), prometheus.CounterValue, float64(i.GetTxErrors().GetValue()), il...)
	}
}

// containerSpec returns pod's container (regular, init or ephemeral) of
// that name; nil when unknown.
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	return nil
}
