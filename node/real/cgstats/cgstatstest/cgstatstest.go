// Package cgstatstest lays out the kernel's files of a node running the
// node suite's summary pod stats-busybox-0 (one busybox container with
// an 80M memory limit and no CPU request, Burstable), for the tests of
// node/real/cgstats and of what is built from its figures. Two layouts:
// cgroup v2 under the cgroupfs driver, and a cgroup v1 hybrid host (one
// mount per hierarchy below the root, cpu and cpuacct co-mounted, an
// empty unified mount) under the systemd driver, each as its kernel
// shows the same workload.
package cgstatstest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Layout is a host's cgroup layout.
type Layout int

// The layouts.
const (
	// V2 is the unified hierarchy, cgroupfs driver.
	V2 Layout = iota
	// V1Hybrid is the v1 hierarchies beside an empty unified one,
	// systemd driver.
	V1Hybrid
)

// Layouts are every layout, for tests that run on each.
var Layouts = []Layout{V2, V1Hybrid}

func (l Layout) String() string {
	if l == V1Hybrid {
		return "v1-hybrid"
	}
	return "v2"
}

// ContainerID is the runtime ID of busybox-container.
const ContainerID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// PodUID is stats-busybox-0's UID.
const PodUID = "12345678-aaaa-4bbb-8ccc-0123456789ab"

// Host is a laid-out host: where its files are and how it names its
// cgroups.
type Host struct {
	// Root is the cgroup mount (v2) or the directory of the v1
	// hierarchies; Proc and Sys stand for /proc and /sys.
	Root, Proc, Sys string
	V1              bool
	// PodsCgroup, PodCgroup and ContainerCgroup are the paths of the
	// kubepods cgroup, the pod's and the container's.
	PodsCgroup, PodCgroup, ContainerCgroup string
	// Kubelet, Runtime and Misc are the paths the system containers are
	// named by.
	Kubelet, Runtime, Misc string
}

// New lays out a host of layout l below a test directory.
func New(t testing.TB, l Layout) Host {
	t.Helper()
	dir := t.TempDir()
	h := Host{Root: filepath.Join(dir, "cgroup"), Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys"), V1: l == V1Hybrid}
	if h.V1 {
		h.layV1(t)
	} else {
		h.layV2(t)
	}
	h.layProc(t)
	return h
}

// Container is busybox-container's figures, the same in both layouts:
// 1302528 bytes in use of which 565248 inactive page cache, 319488 of
// anonymous memory, 2199552 at peak; 51.234 ms of CPU (30 ms user, 21.234
// ms system); 8 KiB read and written in 2 operations each on 254:0; 2
// processes of which 4300 has ended.
const (
	ctrUsage, ctrPeak, ctrInactiveFile, ctrAnon, ctrFile = 1302528, 2199552, 565248, 319488, 856064
	ctrPageFaults                                        = 1979
	// The 80M limit as the kernel holds it: rounded down to 4 KiB pages.
	LimitBytes = 79998976
)

func (h *Host) layV2(t testing.TB) {
	h.PodsCgroup, h.PodCgroup = "/kubepods", "/kubepods/burstable/pod"+PodUID
	h.ContainerCgroup = h.PodCgroup + "/" + ContainerID
	h.Kubelet, h.Runtime, h.Misc = "/lockstep", "/system.slice/containerd.service", "/init.scope"
	ctr, pod := h.ContainerCgroup[1:]+"/", h.PodCgroup[1:]+"/"
	files := map[string]string{
		ctr + "cpu.stat":            "usage_usec 51234\nuser_usec 30000\nsystem_usec 21234\nnr_periods 0\n",
		ctr + "cpu.max":             "max 100000\n",
		ctr + "cpu.weight":          "1\n",
		ctr + "memory.current":      "1302528\n",
		ctr + "memory.peak":         "2199552\n",
		ctr + "memory.max":          "79998976\n",
		ctr + "memory.low":          "0\n",
		ctr + "memory.swap.max":     "0\n",
		ctr + "memory.swap.current": "0\n",
		ctr + "memory.stat":         "anon 319488\nfile 856064\nfile_mapped 0\ninactive_file 565248\nactive_file 290816\npgfault 1979\npgmajfault 0\n",
		ctr + "memory.events":       "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
		ctr + "io.stat":             "254:0 rbytes=8192 wbytes=8192 rios=2 wios=2 dbytes=0 dios=0\n",
		ctr + "pids.current":        "2\n",
		ctr + "pids.max":            "max\n",
		ctr + "cgroup.procs":        "4242\n4300\n",
		ctr + "cpu.pressure":        "some avg10=0.00 avg60=0.00 avg300=0.00 total=120\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=100\n",
		ctr + "memory.pressure":     "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		ctr + "io.pressure":         "some avg10=1.50 avg60=0.25 avg300=0.05 total=3000\nfull avg10=1.00 avg60=0.20 avg300=0.04 total=2000\n",
		pod + "cpu.stat":            "usage_usec 60000\nuser_usec 35000\nsystem_usec 25000\n",
		pod + "memory.current":      "1500000\n",
		pod + "memory.max":          "79998976\n",
		pod + "memory.stat":         "anon 400000\nfile 900000\ninactive_file 600000\npgfault 2500\npgmajfault 0\n",

		"kubepods/cpu.stat":       "usage_usec 900000\nuser_usec 500000\nsystem_usec 400000\n",
		"kubepods/memory.current": "52428800\n",
		"kubepods/memory.stat":    "anon 20971520\nfile 31457280\ninactive_file 10485760\npgfault 50000\npgmajfault 3\n",
		"kubepods/memory.max":     "3758096384\n",
		"cpu.stat":                "usage_usec 9000000\nuser_usec 5000000\nsystem_usec 4000000\n",
		"memory.stat":             "anon 209715200\nfile 314572800\nfile_mapped 1000\npgfault 900000\npgmajfault 30\n",
		"cpu.pressure":            "some avg10=0.10 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"memory.pressure":         "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n",
		"io.pressure":             "some avg10=0.00 avg60=0.00 avg300=0.00 total=11\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=9\n",
	}
	for _, d := range []string{pod, "kubepods/", h.Kubelet[1:] + "/", h.Runtime[1:] + "/", h.Misc[1:] + "/"} {
		for _, res := range []string{"cpu", "memory", "io"} {
			files[d+res+".pressure"] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=150\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		}
	}
	for _, d := range []string{h.Kubelet, h.Runtime, h.Misc} {
		files[d[1:]+"/cpu.stat"] = "usage_usec 2000000\nuser_usec 1500000\nsystem_usec 500000\n"
		files[d[1:]+"/memory.current"] = "4194304\n"
		files[d[1:]+"/memory.stat"] = "anon 2097152\nfile 1048576\ninactive_file 524288\npgfault 5000\n"
	}
	Write(t, h.Root, files)
	Write(t, h.Proc, map[string]string{
		"4242/cgroup": "0::" + h.ContainerCgroup + "\n",
		"self/cgroup": "0::" + h.Kubelet + "\n",
		"900/cgroup":  "0::" + h.Runtime + "\n",
		"1/cgroup":    "0::" + h.Misc + "\n",
		"meminfo":     "MemTotal:       16000000 kB\nMemFree:         8000000 kB\nInactive(file):  1000000 kB\n",
	})
}

func (h *Host) layV1(t testing.TB) {
	h.PodsCgroup = "/kubepods.slice"
	h.PodCgroup = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(PodUID, "-", "_") + ".slice"
	h.ContainerCgroup = h.PodCgroup + "/cri-containerd-" + ContainerID + ".scope"
	h.Kubelet, h.Runtime, h.Misc = "/system.slice/lockstep.service", "/system.slice/containerd.service", "/init.scope"
	const cpu, mem, blkio, pids = "cpu,cpuacct/", "memory/", "blkio/", "pids/"
	ctr, pod, pods := h.ContainerCgroup[1:]+"/", h.PodCgroup[1:]+"/", h.PodsCgroup[1:]+"/"
	const unlimited = "9223372036854771712\n"
	// memory.stat: the cgroup's own counters, then the hierarchy's.
	memStat := func(cache, rss, mapped, inactiveFile, pgfault, pgmajfault, totalPgfault int) string {
		var b strings.Builder
		for _, pre := range []string{"", "total_"} {
			pf := pgfault
			if pre != "" {
				pf = totalPgfault
			}
			for _, kv := range []struct {
				k string
				v int
			}{{"cache", cache}, {"rss", rss}, {"rss_huge", 0}, {"shmem", 0}, {"mapped_file", mapped}, {"dirty", 0}, {"writeback", 0},
				{"swap", 0}, {"pgpgin", 900}, {"pgpgout", 600}, {"pgfault", pf}, {"pgmajfault", pgmajfault},
				{"inactive_anon", rss}, {"active_anon", 0}, {"inactive_file", inactiveFile}, {"active_file", cache - inactiveFile}, {"unevictable", 0}} {
				b.WriteString(pre + kv.k + " " + itoa(kv.v) + "\n")
			}
			if pre == "" {
				b.WriteString("hierarchical_memory_limit " + strings.TrimSpace(unlimited) + "\n")
			}
		}
		return b.String()
	}
	blkioStat := func(read, write int) string {
		return "254:0 Read " + itoa(read) + "\n254:0 Write " + itoa(write) + "\n254:0 Sync " + itoa(read+write) +
			"\n254:0 Async 0\n254:0 Discard 0\n254:0 Total " + itoa(read+write) + "\nTotal " + itoa(read+write) + "\n"
	}
	files := map[string]string{
		// The container.
		cpu + ctr + "cpuacct.usage":                               "51234000\n",
		cpu + ctr + "cpuacct.stat":                                "user 3\nsystem 2\n",
		cpu + ctr + "cpu.shares":                                  "2\n",
		cpu + ctr + "cpu.cfs_period_us":                           "100000\n",
		cpu + ctr + "cpu.cfs_quota_us":                            "-1\n",
		cpu + ctr + "cpu.stat":                                    "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		cpu + ctr + "cgroup.procs":                                "4242\n4300\n",
		mem + ctr + "memory.usage_in_bytes":                       "1302528\n",
		mem + ctr + "memory.max_usage_in_bytes":                   "2199552\n",
		mem + ctr + "memory.limit_in_bytes":                       "79998976\n",
		mem + ctr + "memory.soft_limit_in_bytes":                  unlimited,
		mem + ctr + "memory.memsw.limit_in_bytes":                 "79998976\n",
		mem + ctr + "memory.failcnt":                              "0\n",
		mem + ctr + "memory.use_hierarchy":                        "1\n",
		mem + ctr + "memory.oom_control":                          "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		mem + ctr + "memory.stat":                                 memStat(ctrFile, ctrAnon, 0, ctrInactiveFile, ctrPageFaults, 0, ctrPageFaults),
		mem + ctr + "cgroup.procs":                                "4242\n4300\n",
		blkio + ctr + "blkio.throttle.io_service_bytes_recursive": blkioStat(8192, 8192),
		blkio + ctr + "blkio.throttle.io_serviced_recursive":      blkioStat(2, 2),
		blkio + ctr + "blkio.throttle.io_service_bytes":           blkioStat(8192, 8192),
		blkio + ctr + "blkio.throttle.io_serviced":                blkioStat(2, 2),
		pids + ctr + "pids.current":                               "2\n",
		pids + ctr + "pids.max":                                   "max\n",
		pids + ctr + "cgroup.procs":                               "4242\n4300\n",
		// The pod: its processes are in its containers' cgroups, its
		// own page faults none.
		cpu + pod + "cpuacct.usage":          "60000000\n",
		cpu + pod + "cpuacct.stat":           "user 3\nsystem 3\n",
		cpu + pod + "cpu.shares":             "2\n",
		mem + pod + "memory.usage_in_bytes":  "1500000\n",
		mem + pod + "memory.limit_in_bytes":  "79998976\n",
		mem + pod + "memory.use_hierarchy":   "1\n",
		mem + pod + "memory.stat":            memStat(900000, 400000, 0, 600000, 0, 0, 2500),
		pids + pod + "pids.current":          "3\n",
		pids + pod + "cgroup.procs":          "",
		cpu + pods + "cpuacct.usage":         "900000000\n",
		cpu + pods + "cpuacct.stat":          "user 50\nsystem 40\n",
		mem + pods + "memory.usage_in_bytes": "52428800\n",
		mem + pods + "memory.limit_in_bytes": "3758096384\n",
		mem + pods + "memory.use_hierarchy":  "1\n",
		mem + pods + "memory.stat":           memStat(31457280, 20971520, 0, 10485760, 0, 0, 50000),
		cpu + "cpuacct.usage":                "9000000000\n",
		cpu + "cpuacct.stat":                 "user 500\nsystem 400\n",
		cpu + "cpu.shares":                   "1024\n",
		cpu + "cpu.cfs_period_us":            "100000\n",
		cpu + "cpu.cfs_quota_us":             "-1\n",
		mem + "memory.usage_in_bytes":        "524288000\n",
		mem + "memory.limit_in_bytes":        unlimited,
		mem + "memory.use_hierarchy":         "1\n",
		mem + "memory.stat":                  memStat(314572800, 209715200, 1000, 104857600, 31820, 2, 900000),
		blkio + "blkio.throttle.io_serviced": "Total 0\n",
		"systemd/" + ctr + "cgroup.procs":    "4242\n4300\n",
		"unified/cgroup.procs":               "1\n",
		"cpuset/" + ctr + "cpuset.cpus":      "0-1\n",
		"devices/" + ctr + "devices.list":    "",
		"freezer/" + ctr + "freezer.state":   "THAWED\n",
	}
	for _, d := range []string{h.Kubelet, h.Runtime} {
		files[cpu+d[1:]+"/cpuacct.usage"] = "2000000000\n"
		files[cpu+d[1:]+"/cpuacct.stat"] = "user 150\nsystem 50\n"
		files[mem+d[1:]+"/memory.usage_in_bytes"] = "4194304\n"
		files[mem+d[1:]+"/memory.use_hierarchy"] = "1\n"
		files[mem+d[1:]+"/memory.stat"] = memStat(1048576, 2097152, 0, 524288, 5000, 0, 5000)
		files["systemd/"+d[1:]+"/cgroup.procs"] = ""
	}
	Write(t, h.Root, files)
	// Where each process is in each hierarchy: init (systemd) in the
	// controllers' roots, in /init.scope only by name.
	in := func(named, controllers string) string {
		return "12:pids:" + controllers + "\n11:memory:" + controllers + "\n10:freezer:" + controllers + "\n9:devices:" + controllers +
			"\n8:cpuset:" + controllers + "\n4:cpu,cpuacct:" + controllers + "\n3:blkio:" + controllers + "\n1:name=systemd:" + named + "\n0::" + named + "\n"
	}
	Write(t, h.Proc, map[string]string{
		"4242/cgroup":     in(h.ContainerCgroup, h.ContainerCgroup),
		"self/cgroup":     in(h.Kubelet, h.Kubelet),
		"900/cgroup":      in(h.Runtime, h.Runtime),
		"1/cgroup":        in(h.Misc, "/"),
		"pressure/cpu":    "some avg10=0.10 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"pressure/memory": "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n",
		"pressure/io":     "some avg10=0.00 avg60=0.00 avg300=0.00 total=11\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=9\n",
	})
}

// layProc lays out what both layouts' /proc and /sys hold besides the
// cgroups: the container's shell (4242; 4300 has ended), the runtime
// (900), init, the machine's interfaces and disks.
func (h *Host) layProc(t testing.TB) {
	t.Helper()
	Write(t, h.Proc, map[string]string{
		"4242/limits": "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n",
		"4242/comm":   "sh\n",
		"900/comm":    "containerd\n",
		"1/comm":      "systemd\n",
		"net/dev": "Inter-|   Receive                                                |  Transmit\n" +
			" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
			"    lo:  757498    5383    0    0    0     0          0         0   757498    5383    0    0    0     0       0          0\n" +
			"  eth0: 5000000    4000    0    1    0     0          0         0  1000000    3000    0    0    0     0       0          0\n",
		"diskstats": "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 254       0 vda 9000 100 5000 1200 4000 300 8000 2400 0 1200 3600 0 0 0 0 0 0\n",
	})
	for _, fd := range []struct{ n, target string }{{"0", "/dev/null"}, {"1", "pipe:[77]"}, {"3", "socket:[12345]"}} {
		if err := os.MkdirAll(filepath.Join(h.Proc, "4242", "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(fd.target, filepath.Join(h.Proc, "4242", "fd", fd.n)); err != nil {
			t.Fatal(err)
		}
	}
	Write(t, h.Sys, map[string]string{"dev/block/254:0/uevent": "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n"})
}

// Write lays files out below dir: path → content.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Figures are what the kernel reports of a host's cgroups, as
// node/real/cgstats reads them (by the deps.CgroupStatsReader's keys).
type Figures struct {
	// Containers by runtime ID, Pods by UID, System by the Summary's
	// system container names and "" for the root.
	Containers, Pods, System map[string]deps.CgroupStats
}

// Created is the creation time Figures give every cgroup (the laid-out
// directories' own times are the test's).
var Created = time.Unix(1_700_000_000, 0)

// Want is what a cgstats reader of h (with SystemdRunning false) reads:
// the figures laid out, converted as cAdvisor converts each version's.
// On v1: hierarchical cache and RSS, the cgroup's own page faults,
// cpuacct.stat's ticks, v1's unlimited as deps.Unlimited, all-zero
// pressure but the root's (/proc/pressure).
func (h Host) Want() Figures {
	c := func(usage, user, system uint64) deps.CgroupCPU {
		return deps.CgroupCPU{UsageNanos: usage, UserNanos: user, SystemNanos: system}
	}
	unlimited := deps.CgroupSpec{MemoryLimit: deps.Unlimited, SwapLimit: deps.Unlimited}
	ctr := deps.CgroupStats{
		Path: h.ContainerCgroup, CPU: c(51234000, 30000000, 20000000),
		Memory: deps.CgroupMemory{Usage: ctrUsage, MaxUsage: ctrPeak, WorkingSet: ctrUsage - ctrInactiveFile,
			Cache: ctrFile, RSS: ctrAnon, PageFaults: ctrPageFaults},
		// The limit as the kernel holds it, 2 shares (no CPU request;
		// on v2 from weight 1).
		Spec:      deps.CgroupSpec{MemoryLimit: LimitBytes, CPUPeriod: 100000, CPUQuota: deps.Unlimited, CPUShares: 2},
		IO:        []deps.DeviceIO{{Major: 254, Device: "/dev/vda", ReadBytes: 8192, WriteBytes: 8192, Reads: 2, Writes: 2}},
		Processes: deps.ProcessStats{Processes: 2, Threads: 2, FileDescriptors: 3, Sockets: 1, OpenFilesSoftLimit: 1048576},
	}
	pod := deps.CgroupStats{Path: h.PodCgroup, CPU: c(60000000, 35000000, 25000000),
		Memory: deps.CgroupMemory{Usage: 1500000, WorkingSet: 900000, Cache: 900000, RSS: 400000, PageFaults: 2500},
		Spec:   deps.CgroupSpec{MemoryLimit: LimitBytes, SwapLimit: deps.Unlimited}}
	pods := deps.CgroupStats{Path: h.PodsCgroup, CPU: c(900000000, 500000000, 400000000),
		Memory: deps.CgroupMemory{Usage: 52428800, WorkingSet: 52428800 - 10485760, Cache: 31457280, RSS: 20971520, PageFaults: 50000, MajorPageFaults: 3},
		Spec:   deps.CgroupSpec{MemoryLimit: 3758096384, SwapLimit: deps.Unlimited}}
	sys := deps.CgroupStats{CPU: c(2000000000, 1500000000, 500000000),
		Memory: deps.CgroupMemory{Usage: 4194304, WorkingSet: 4194304 - 524288, Cache: 1048576, RSS: 2097152, PageFaults: 5000}, Spec: unlimited}
	root := deps.CgroupStats{Path: "/", CPU: c(9000000000, 5000000000, 4000000000),
		Memory: deps.CgroupMemory{Usage: 8000000 * 1024, WorkingSet: 7000000 * 1024, Cache: 314572800, RSS: 209715200, MappedFile: 1000, PageFaults: 900000, MajorPageFaults: 30},
		Spec:   unlimited,
		PSI: &deps.CgroupPSI{CPU: deps.PSI{Some: deps.PSIData{Total: 5, Avg10: 0.1}}, Memory: deps.PSI{Some: deps.PSIData{Total: 7}, Full: deps.PSIData{Total: 3}},
			IO: deps.PSI{Some: deps.PSIData{Total: 11}, Full: deps.PSIData{Total: 9}}},
		Disks: []deps.DiskStats{{Device: "/dev/vda", ReadsMerged: 100, SectorsRead: 5000, ReadTimeMillis: 1200, WritesMerged: 300, SectorsWritten: 8000,
			WriteTimeMillis: 2400, IOTimeMillis: 1200, WeightedIOTimeMillis: 3600}},
		Network: []deps.NetInterface{{Name: "eth0", RxBytes: 5000000, RxPackets: 4000, RxDropped: 1, TxBytes: 1000000, TxPackets: 3000}},
	}
	if h.V1 {
		ctr.PSI, pod.PSI, pods.PSI, sys.PSI = &deps.CgroupPSI{}, &deps.CgroupPSI{}, &deps.CgroupPSI{}, &deps.CgroupPSI{}
		ctr.Spec.SwapLimit = LimitBytes // memory.memsw.limit_in_bytes
		// The cgroups' own page faults: none of the pod's or kubepods'
		// processes are directly in them; pids.current counts the
		// hierarchy's.
		pod.CPU, pod.Memory.PageFaults, pod.Spec.CPUShares, pod.Processes.Threads = c(60000000, 30000000, 30000000), 0, 2, 3
		pods.Memory.PageFaults, pods.Memory.MajorPageFaults = 0, 0
		root.Memory = deps.CgroupMemory{Usage: 524288000, WorkingSet: 524288000 - 104857600, Cache: 314572800, RSS: 209715200, MappedFile: 1000, PageFaults: 31820, MajorPageFaults: 2}
		root.Spec = deps.CgroupSpec{MemoryLimit: deps.Unlimited, SwapLimit: deps.Unlimited, CPUShares: 1024, CPUPeriod: 100000, CPUQuota: deps.Unlimited}
	} else {
		psi := &deps.CgroupPSI{CPU: deps.PSI{Some: deps.PSIData{Total: 150}}, Memory: deps.PSI{Some: deps.PSIData{Total: 150}}, IO: deps.PSI{Some: deps.PSIData{Total: 150}}}
		pod.PSI, pods.PSI, sys.PSI = psi, psi, psi
		ctr.CPU.SystemNanos = 21234000
		ctr.PSI = &deps.CgroupPSI{
			CPU: deps.PSI{Some: deps.PSIData{Total: 120}, Full: deps.PSIData{Total: 100}},
			IO:  deps.PSI{Some: deps.PSIData{Total: 3000, Avg10: 1.5, Avg60: 0.25, Avg300: 0.05}, Full: deps.PSIData{Total: 2000, Avg10: 1, Avg60: 0.2, Avg300: 0.04}},
		}
	}
	kubelet, runtime, misc := sys, sys, sys
	kubelet.Path, runtime.Path, misc.Path = h.Kubelet, h.Runtime, h.Misc
	if h.V1 {
		// Init is in the controllers' roots, /init.scope only by name.
		misc.CPU, misc.Memory, misc.Spec = root.CPU, root.Memory, root.Spec
	}
	out := Figures{Containers: map[string]deps.CgroupStats{ContainerID: ctr}, Pods: map[string]deps.CgroupStats{PodUID: pod},
		System: map[string]deps.CgroupStats{"": root, "pods": pods, "kubelet": kubelet, "runtime": runtime, "misc": misc}}
	for _, m := range []map[string]deps.CgroupStats{out.Containers, out.Pods, out.System} {
		for k, s := range m {
			s.Created = Created
			m[k] = s
		}
	}
	return out
}
