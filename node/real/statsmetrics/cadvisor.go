package statsmetrics

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// cadvisorLabels are the labels of a container series, as cAdvisor sets
// them for a CRI container: id and name are the runtime's container ID
// (cAdvisor's id is the cgroup path, which the CRI does not report).
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// cadvisorSeries are the /metrics/cadvisor series: name, help and the
// labels after cadvisorLabels (none for the machine's, which have no
// container labels).
var cadvisorSeries = []struct {
	name, help string
	extra      []string
}{
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", []string{"cpu"}},
	{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", nil},
	{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", nil},
	{"container_memory_working_set_bytes", "Current working set in bytes.", nil},
	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", nil},
	{"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", nil},
	{"container_memory_rss", "Size of RSS in bytes.", nil},
	{"container_memory_cache", "Number of bytes of page cache memory.", nil},
	{"container_memory_mapped_file", "Size of memory mapped files in bytes.", nil},
	{"container_memory_swap", "Container swap usage in bytes.", nil},
	{"container_memory_failcnt", "Number of memory usage hits limits", nil},
	{"container_memory_failures_total", "Cumulative count of memory allocation failures.", []string{"failure_type", "scope"}},
	{"container_memory_events_high_total", "Cumulative count of times the memory.high limit was hit.", nil},
	{"container_memory_events_max_total", "Cumulative count of times the memory.max limit was hit.", nil},
	{"container_oom_events_total", "Count of out of memory events observed for the container", nil},
	{"container_blkio_device_usage_total", "Blkio Device bytes usage", []string{"device", "major", "minor", "operation"}},
	{"container_fs_reads_bytes_total", "Cumulative count of bytes read", []string{"device"}},
	{"container_fs_reads_total", "Cumulative count of reads completed", []string{"device"}},
	{"container_fs_writes_bytes_total", "Cumulative count of bytes written", []string{"device"}},
	{"container_fs_writes_total", "Cumulative count of writes completed", []string{"device"}},
	{"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", []string{"device"}},
	{"container_fs_inodes_used", "Number of inodes used by the container on this filesystem.", []string{"device"}},
	{"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", []string{"device"}},
	{"container_fs_inodes_free", "Number of available Inodes", []string{"device"}},
	{"container_fs_inodes_total", "Number of Inodes", []string{"device"}},
	{"container_fs_io_current", "Number of I/Os currently in progress", []string{"device"}},
	{"container_fs_io_time_seconds_total", "Cumulative count of seconds spent doing I/Os", []string{"device"}},
	{"container_fs_io_time_weighted_seconds_total", "Cumulative weighted I/O time in seconds", []string{"device"}},
	{"container_fs_read_seconds_total", "Cumulative count of seconds spent reading", []string{"device"}},
	{"container_fs_reads_merged_total", "Cumulative count of reads merged", []string{"device"}},
	{"container_fs_sector_reads_total", "Cumulative count of sector reads completed", []string{"device"}},
	{"container_fs_sector_writes_total", "Cumulative count of sector writes completed", []string{"device"}},
	{"container_fs_write_seconds_total", "Cumulative count of seconds spent writing", []string{"device"}},
	{"container_fs_writes_merged_total", "Cumulative count of writes merged", []string{"device"}},
	{"container_processes", "Number of processes running inside the container.", nil},
	{"container_threads", "Number of threads running inside the container", nil},
	{"container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", nil},
	{"container_file_descriptors", "Number of open file descriptors for the container.", nil},
	{"container_sockets", "Number of open sockets for the container.", nil},
	{"container_ulimits_soft", "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice", []string{"ulimit"}},
	{"container_spec_memory_limit_bytes", "Memory limit for the container.", nil},
	{"container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.", nil},
	{"container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", nil},
	{"container_spec_cpu_quota", "CPU quota of the container.", nil},
	{"container_spec_cpu_period", "CPU period of the container.", nil},
	{"container_spec_cpu_shares", "CPU share of the container.", nil},
	{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", nil},
	{"container_last_seen", "Last time a container was seen by the exporter", nil},
	{"container_network_receive_bytes_total", "Cumulative count of bytes received", []string{"interface"}},
	{"container_network_receive_packets_total", "Cumulative count of packets received", []string{"interface"}},
	{"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", []string{"interface"}},
	{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", []string{"interface"}},
	{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", []string{"interface"}},
	{"container_network_transmit_packets_total", "Cumulative count of packets transmitted", []string{"interface"}},
	{"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", []string{"interface"}},
	{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", []string{"interface"}},
}

// cadvisorDescs are the /metrics/cadvisor descriptions by series name.
type cadvisorDescs map[string]*prometheus.Desc

func newCadvisorDescs() cadvisorDescs {
	d := cadvisorDescs{
		"machine_cpu_cores":    prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", nil, nil),
		"machine_memory_bytes": prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", nil, nil),
	}
	for _, s := range cadvisorSeries {
		d[s.name] = prometheus.NewDesc(s.name, s.help, append(append([]string{}, cadvisorLabels...), s.extra...), nil)
	}
	return d
}

// all are every description, in cadvisorSeries' order, the machine's
// last.
func (d cadvisorDescs) all() []*prometheus.Desc {
	out := make([]*prometheus.Desc, 0, len(d))
	for _, s := range cadvisorSeries {
		out = append(out, d[s.name])
	}
	return append(out, d["machine_cpu_cores"], d["machine_memory_bytes"])
}

// NewCadvisor returns the /metrics/cadvisor collector over src: the
// latest sample's series, none when there is no sample.
func NewCadvisor(src Source, log *slog.Logger) prometheus.Collector {
	d := newCadvisorDescs()
	build := func(s stats.Sample) []prometheus.Metric { return cadvisorMetrics(d, s, src.Pods()) }
	return newSampleCollector(src, log, "/metrics/cadvisor", d.all(), build, nil)
}

// cadvisorMetrics are the series of one sample: the machine's, each
// running container's, each pod sandbox's network (container "POD") and,
// where the kernel was read, the node's root cgroup's disks (id "/").
func cadvisorMetrics(d cadvisorDescs, s stats.Sample, pods []*corev1.Pod) []prometheus.Metric {
	out := &series{d: d}
	if s.Machine.CPUs > 0 {
		out.put("machine_cpu_cores", 0, prometheus.GaugeValue, float64(s.Machine.CPUs))
	}
	if s.Machine.MemoryBytes > 0 {
		out.put("machine_memory_bytes", 0, prometheus.GaugeValue, float64(s.Machine.MemoryBytes))
	}
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	statsByID := make(map[string]*runtimeapi.ContainerStats, len(s.ContainerStats))
	for _, cs := range s.ContainerStats {
		statsByID[cs.GetAttributes().GetId()] = cs
	}
	for _, c := range s.Containers {
		cs := statsByID[c.GetId()]
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || cs == nil {
			continue
		}
		out.container(s, c, cs, byUID)
	}
	for _, sb := range s.SandboxStats {
		out.sandboxNetwork(s, sb)
	}
	if s.Kernel != nil {
		out.rootDisks(s)
	}
	return out.ms
}

// series accumulates the samples of the descriptions d.
type series struct {
	d  cadvisorDescs
	ms metrics
}

// put appends one sample of series name at t (Unix nanoseconds; zero:
// none).
func (out *series) put(name string, t int64, typ prometheus.ValueType, v float64, labels ...string) {
	out.ms.add(out.d[name], unixNano(t), typ, v, labels...)
}

// with is labels with more appended, in a new slice.
func with(labels []string, more ...string) []string {
	return append(append(make([]string, 0, len(labels)+len(more)), labels...), more...)
}

// container appends the samples of one running container c with its
// stats cs, the kernel's figures of its cgroup when read, and its spec
// in its pod, if known.
func (out *series) container(s stats.Sample, c *runtimeapi.Container, cs *runtimeapi.ContainerStats, byUID map[types.UID]*corev1.Pod) {
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
		out.put("container_cpu_usage_seconds_total", cpu.GetTimestamp(), prometheus.CounterValue, seconds(cpu.GetUsageCoreNanoSeconds().GetValue()), with(labels, "total")...)
	}
	var k deps.CgroupStats
	kernel := false
	if s.Kernel != nil {
		k, kernel = s.Kernel.Containers[c.GetId()]
	}
	if m := cs.GetMemory(); m != nil && !kernel {
		out.gauge("container_memory_working_set_bytes", m.GetTimestamp(), m.GetWorkingSetBytes(), labels)
		out.gauge("container_memory_usage_bytes", m.GetTimestamp(), m.GetUsageBytes(), labels)
		out.gauge("container_memory_rss", m.GetTimestamp(), m.GetRssBytes(), labels)
	}
	if l := cs.GetWritableLayer(); l != nil {
		dev := l.GetFsId().GetMountpoint()
		out.put("container_fs_usage_bytes", l.GetTimestamp(), prometheus.GaugeValue, float64(l.GetUsedBytes().GetValue()), with(labels, dev)...)
		if l.GetInodesUsed() != nil {
			out.put("container_fs_inodes_used", l.GetTimestamp(), prometheus.GaugeValue, float64(l.GetInodesUsed().GetValue()), with(labels, dev)...)
		}
	}
	at := s.Time.UnixNano()
	if kernel {
		out.kernel(k, at, labels)
	}
	if limit, ok := s.MemoryLimit(c.GetId(), spec); ok || kernel {
		out.put("container_spec_memory_limit_bytes", 0, prometheus.GaugeValue, limitValue(limit, ok), labels...)
	}
	switch {
	case kernel:
		out.kernelSpec(k.Spec, labels)
	case spec != nil:
		if cpu := spec.Resources.Limits.Cpu(); !cpu.IsZero() {
			out.put("container_spec_cpu_quota", 0, prometheus.GaugeValue, float64(cgroups.MilliCPUToQuota(cpu.MilliValue())), labels...)
		}
		out.put("container_spec_cpu_period", 0, prometheus.GaugeValue, 100000, labels...)
		out.put("container_spec_cpu_shares", 0, prometheus.GaugeValue, float64(cgroups.MilliCPUToShares(spec.Resources.Requests.Cpu().MilliValue())), labels...)
	}
	if created := c.GetCreatedAt(); created > 0 {
		out.put("container_start_time_seconds", 0, prometheus.GaugeValue, float64(created)/float64(time.Second), labels...)
	}
	out.put("container_last_seen", 0, prometheus.GaugeValue, float64(at)/float64(time.Second), labels...)
}

// gauge appends a gauge of a CRI value, none when it is unset.
func (out *series) gauge(name string, t int64, v *runtimeapi.UInt64Value, labels []string) {
	if v != nil {
		out.put(name, t, prometheus.GaugeValue, float64(v.GetValue()), labels...)
	}
}

// limitValue is a limit as cAdvisor exposes it: 0 for none.
func limitValue(l uint64, limited bool) float64 {
	if !limited {
		return 0
	}
	return float64(l)
}

// kernel appends what the kernel reports of a container's cgroup and
// processes, at t.
func (out *series) kernel(k deps.CgroupStats, t int64, labels []string) {
	g, c := prometheus.GaugeValue, prometheus.CounterValue
	out.put("container_cpu_user_seconds_total", t, c, seconds(k.CPU.UserNanos), labels...)
	out.put("container_cpu_system_seconds_total", t, c, seconds(k.CPU.SystemNanos), labels...)
	m := k.Memory
	for _, x := range []struct {
		name string
		v    uint64
	}{
		{"container_memory_working_set_bytes", m.WorkingSet}, {"container_memory_usage_bytes", m.Usage},
		{"container_memory_max_usage_bytes", m.MaxUsage}, {"container_memory_rss", m.RSS},
		{"container_memory_cache", m.Cache}, {"container_memory_mapped_file", m.MappedFile},
		{"container_memory_swap", m.Swap}, {"container_memory_failcnt", m.Failcnt},
		{"container_processes", k.Processes.Processes}, {"container_threads", k.Processes.Threads},
		{"container_threads_max", k.Spec.PidsMax}, {"container_file_descriptors", k.Processes.FileDescriptors},
		{"container_sockets", k.Processes.Sockets},
	} {
		out.put(x.name, t, g, float64(x.v), labels...)
	}
	out.put("container_memory_events_high_total", t, c, float64(m.EventsHigh), labels...)
	out.put("container_memory_events_max_total", t, c, float64(m.EventsMax), labels...)
	out.put("container_oom_events_total", t, c, float64(m.EventsOOMKill), labels...)
	for _, scope := range []string{"container", "hierarchy"} {
		out.put("container_memory_failures_total", t, c, float64(m.PageFaults), with(labels, "pgfault", scope)...)
		out.put("container_memory_failures_total", t, c, float64(m.MajorPageFaults), with(labels, "pgmajfault", scope)...)
	}
	if n := k.Processes.OpenFilesSoftLimit; n > 0 {
		out.put("container_ulimits_soft", t, g, float64(n), with(labels, "max_open_files")...)
	}
	for _, io := range k.IO {
		dev := io.Device
		maj, mnr := strconv.FormatUint(io.Major, 10), strconv.FormatUint(io.Minor, 10)
		out.put("container_blkio_device_usage_total", t, c, float64(io.ReadBytes), with(labels, dev, maj, mnr, "Read")...)
		out.put("container_blkio_device_usage_total", t, c, float64(io.WriteBytes), with(labels, dev, maj, mnr, "Write")...)
		out.put("container_fs_reads_bytes_total", t, c, float64(io.ReadBytes), with(labels, dev)...)
		out.put("container_fs_reads_total", t, c, float64(io.Reads), with(labels, dev)...)
		out.put("container_fs_writes_bytes_total", t, c, float64(io.WriteBytes), with(labels, dev)...)
		out.put("container_fs_writes_total", t, c, float64(io.Writes), with(labels, dev)...)
	}
}

// kernelSpec appends a cgroup's limits as the kernel holds them.
func (out *series) kernelSpec(sp deps.CgroupSpec, labels []string) {
	g := prometheus.GaugeValue
	out.put("container_spec_memory_reservation_limit_bytes", 0, g, limitValue(sp.MemoryReservation, sp.MemoryReservation != deps.Unlimited), labels...)
	out.put("container_spec_memory_swap_limit_bytes", 0, g, limitValue(sp.SwapLimit, sp.SwapLimit != deps.Unlimited), labels...)
	if sp.CPUQuota != deps.Unlimited && sp.CPUQuota != 0 {
		out.put("container_spec_cpu_quota", 0, g, float64(sp.CPUQuota), labels...)
	}
	out.put("container_spec_cpu_period", 0, g, float64(sp.CPUPeriod), labels...)
	out.put("container_spec_cpu_shares", 0, g, float64(sp.CPUShares), labels...)
}

// rootDisks appends the node's filesystem as the root cgroup's (id "/",
// no container labels), as cAdvisor reports the machine's filesystems.
func (out *series) rootDisks(s stats.Sample) {
	u := s.Usage
	if u.NodeFSCapacityBytes == 0 {
		return
	}
	labels := []string{"", "/", "", "/", "", "", "/"}
	g := prometheus.GaugeValue
	at := s.Time.UnixNano()
	out.put("container_fs_limit_bytes", at, g, float64(u.NodeFSCapacityBytes), labels...)
	out.put("container_fs_usage_bytes", at, g, float64(u.NodeFSCapacityBytes-min(u.NodeFSCapacityBytes, u.NodeFSAvailableBytes)), labels...)
	out.put("container_fs_inodes_total", at, g, float64(u.NodeFSInodes), labels...)
	out.put("container_fs_inodes_free", at, g, float64(u.NodeFSInodesFree), labels...)
	root := s.Kernel.System[""]
	for _, dk := range root.Disks {
		l := with(labels[:6], dk.Device)
		c := prometheus.CounterValue
		out.put("container_fs_io_current", at, g, float64(dk.IOInProgress), l...)
		out.put("container_fs_io_time_seconds_total", at, c, float64(dk.IOTimeMillis)/1e3, l...)
		out.put("container_fs_io_time_weighted_seconds_total", at, c, float64(dk.WeightedIOTimeMillis)/1e3, l...)
		out.put("container_fs_read_seconds_total", at, c, float64(dk.ReadTimeMillis)/1e3, l...)
		out.put("container_fs_write_seconds_total", at, c, float64(dk.WriteTimeMillis)/1e3, l...)
		out.put("container_fs_reads_merged_total", at, c, float64(dk.ReadsMerged), l...)
		out.put("container_fs_writes_merged_total", at, c, float64(dk.WritesMerged), l...)
		out.put("container_fs_sector_reads_total", at, c, float64(dk.SectorsRead), l...)
		out.put("container_fs_sector_writes_total", at, c, float64(dk.SectorsWritten), l...)
	}
}

// sandboxNetwork appends the network samples of one pod sandbox: every
// interface's counters where the kernel's were read (packets and drops
// too), else the runtime's.
func (out *series) sandboxNetwork(s stats.Sample, sb *runtimeapi.PodSandboxStats) {
	net := sb.GetLinux().GetNetwork()
	if net == nil {
		return
	}
	a := sb.GetAttributes()
	labels := []string{"POD", a.GetId(), "", a.GetId(), a.GetMetadata().GetNamespace(), a.GetMetadata().GetName()}
	t, c := net.GetTimestamp(), prometheus.CounterValue
	if s.Kernel != nil {
		if ifaces, ok := s.Kernel.Network[a.GetId()]; ok {
			for _, i := range ifaces {
				il := with(labels, i.Name)
				for _, x := range []struct {
					name string
					v    uint64
				}{
					{"container_network_receive_bytes_total", i.RxBytes}, {"container_network_receive_packets_total", i.RxPackets},
					{"container_network_receive_packets_dropped_total", i.RxDropped}, {"container_network_receive_errors_total", i.RxErrors},
					{"container_network_transmit_bytes_total", i.TxBytes}, {"container_network_transmit_packets_total", i.TxPackets},
					{"container_network_transmit_packets_dropped_total", i.TxDropped}, {"container_network_transmit_errors_total", i.TxErrors},
				} {
					out.put(x.name, t, c, float64(x.v), il...)
				}
			}
			return
		}
	}
	ifaces := net.GetInterfaces()
	if len(ifaces) == 0 && net.GetDefaultInterface() != nil {
		ifaces = []*runtimeapi.NetworkInterfaceUsage{net.GetDefaultInterface()}
	}
	for _, i := range ifaces {
		il := with(labels, i.GetName())
		out.put("container_network_receive_bytes_total", t, c, float64(i.GetRxBytes().GetValue()), il...)
		out.put("container_network_transmit_bytes_total", t, c, float64(i.GetTxBytes().GetValue()), il...)
		out.put("container_network_receive_errors_total", t, c, float64(i.GetRxErrors().GetValue()), il...)
		out.put("container_network_transmit_errors_total", t, c, float64(i.GetTxErrors().GetValue()), il...)
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
