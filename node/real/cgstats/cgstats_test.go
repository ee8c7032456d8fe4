package cgstats

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/cgstats/cgstatstest"
)

const ctrID = cgstatstest.ContainerID

// reader reads host h.
func reader(h cgstatstest.Host) Reader {
	return Reader{Root: h.Root, Proc: h.Proc, Sys: h.Sys, V1: h.V1, PodsCgroup: h.PodsCgroup}
}

// eachLayout runs f on a host of every layout.
func eachLayout(t *testing.T, f func(t *testing.T, l cgstatstest.Layout, h cgstatstest.Host)) {
	for _, l := range cgstatstest.Layouts {
		t.Run(l.String(), func(t *testing.T) { f(t, l, cgstatstest.New(t, l)) })
	}
}

// The container's figures are the same whichever the layout but for
// what one version has and the other lacks: v1 has no pressure (all
// zero, as upstream reports it) and keeps the memsw limit (80M here)
// where v2 has memory.swap.max (0).
func TestContainerOnEachLayout(t *testing.T) {
	eachLayout(t, func(t *testing.T, l cgstatstest.Layout, h cgstatstest.Host) {
		got, err := reader(h).Containers(context.Background(), []string{ctrID, "gone"})
		if err != nil {
			t.Fatal(err)
		}
		want := deps.CgroupStats{
			Path: h.ContainerCgroup,
			CPU:  deps.CgroupCPU{UsageNanos: 51234000, UserNanos: 30000000, SystemNanos: 20000000},
			Memory: deps.CgroupMemory{Usage: 1302528, MaxUsage: 2199552, WorkingSet: 1302528 - 565248,
				Cache: 856064, RSS: 319488, PageFaults: 1979},
			// The limit as the kernel holds it (80M rounded down to
			// pages), 2 shares (no CPU request; on v2 from weight 1).
			Spec: deps.CgroupSpec{MemoryLimit: cgstatstest.LimitBytes, CPUPeriod: 100000, CPUQuota: deps.Unlimited, CPUShares: 2},
			IO:   []deps.DeviceIO{{Major: 254, Device: "/dev/vda", ReadBytes: 8192, WriteBytes: 8192, Reads: 2, Writes: 2}},
			// 4300 ended: its files are not there; threads from
			// pids.current.
			Processes: deps.ProcessStats{Processes: 2, Threads: 2, FileDescriptors: 3, Sockets: 1, OpenFilesSoftLimit: 1048576},
		}
		switch l {
		case cgstatstest.V2:
			want.CPU.SystemNanos = 21234000
			want.PSI = &deps.CgroupPSI{
				CPU:    deps.PSI{Some: deps.PSIData{Total: 120}, Full: deps.PSIData{Total: 100}},
				Memory: deps.PSI{},
				IO:     deps.PSI{Some: deps.PSIData{Total: 3000, Avg10: 1.5, Avg60: 0.25, Avg300: 0.05}, Full: deps.PSIData{Total: 2000, Avg10: 1, Avg60: 0.2, Avg300: 0.04}},
			}
		case cgstatstest.V1Hybrid:
			// cpuacct.stat: 3 and 2 ticks of 10 ms.
			want.PSI = &deps.CgroupPSI{}
			want.Spec.SwapLimit = cgstatstest.LimitBytes
		}
		if diff := cmp.Diff(map[string]deps.CgroupStats{ctrID: want}, got, cmpopts.IgnoreFields(deps.CgroupStats{}, "Created")); diff != "" {
			t.Errorf("containers (-want +got):\n%s", diff)
		}
		if c := got[ctrID].Created; time.Since(c) > time.Hour {
			t.Errorf("created %v, want the directory's time", c)
		}
	})
}

func TestPodCgroup(t *testing.T) {
	eachLayout(t, func(t *testing.T, l cgstatstest.Layout, h cgstatstest.Host) {
		got, err := reader(h).Pods(context.Background(), []string{cgstatstest.PodUID, "5678"})
		if err != nil {
			t.Fatal(err)
		}
		type pod struct {
			Path        string
			CPU, Memory uint64
			Limit       uint64
		}
		gotPods := map[string]pod{}
		for uid, s := range got {
			gotPods[uid] = pod{s.Path, s.CPU.UsageNanos, s.Memory.Usage, s.Spec.MemoryLimit}
		}
		want := map[string]pod{cgstatstest.PodUID: {h.PodCgroup, 60000000, 1500000, cgstatstest.LimitBytes}}
		if diff := cmp.Diff(want, gotPods); diff != "" {
			t.Errorf("pods (-want +got):\n%s", diff)
		}
	})
	for name, want := range map[string]string{"pod1234": "1234", "kubepods-burstable-pod12_34.slice": "12-34", "kubepods": "", "kubepods-besteffort.slice": "", "burstable": ""} {
		if got := podUID(name); got != want {
			t.Errorf("podUID(%q) = %q, want %q", name, got, want)
		}
	}
}

// The node's cgroups by the Summary's names: the agent's own (as the
// kubelet names it: on v1 its name=systemd path), the runtime's, the
// pods', init's (misc) and the root; the root's pressure is the
// machine's.
func TestSystemContainers(t *testing.T) {
	eachLayout(t, func(t *testing.T, l cgstatstest.Layout, h cgstatstest.Host) {
		r := reader(h)
		got, err := r.System(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		paths := map[string]string{}
		for k, v := range got {
			paths[k] = v.Path
		}
		if diff := cmp.Diff(map[string]string{"": "/", "pods": h.PodsCgroup, "kubelet": h.Kubelet, "runtime": h.Runtime, "misc": h.Misc}, paths); diff != "" {
			t.Errorf("system containers (-want +got):\n%s", diff)
		}
		root := got[""]
		wantRoot := deps.CgroupMemory{Usage: 8000000 * 1024, WorkingSet: 7000000 * 1024, Cache: 314572800, RSS: 209715200, MappedFile: 1000, PageFaults: 900000, MajorPageFaults: 30}
		if l == cgstatstest.V1Hybrid {
			// The root memory cgroup's: the hierarchy's cache, RSS and
			// mapped file, the root's own page faults.
			wantRoot = deps.CgroupMemory{Usage: 524288000, WorkingSet: 524288000 - 104857600, Cache: 314572800, RSS: 209715200, MappedFile: 1000, PageFaults: 31820, MajorPageFaults: 2}
		}
		if diff := cmp.Diff(wantRoot, root.Memory); diff != "" {
			t.Errorf("root memory (-want +got):\n%s", diff)
		}
		wantPSI := &deps.CgroupPSI{CPU: deps.PSI{Some: deps.PSIData{Total: 5, Avg10: 0.1}}, Memory: deps.PSI{Some: deps.PSIData{Total: 7}, Full: deps.PSIData{Total: 3}},
			IO: deps.PSI{Some: deps.PSIData{Total: 11}, Full: deps.PSIData{Total: 9}}}
		if diff := cmp.Diff(wantPSI, root.PSI); diff != "" {
			t.Errorf("root PSI (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]deps.NetInterface{{Name: "eth0", RxBytes: 5000000, RxPackets: 4000, RxDropped: 1, TxBytes: 1000000, TxPackets: 3000}}, root.Network); diff != "" {
			t.Errorf("root network (-want +got):\n%s", diff)
		}
		if len(root.Disks) != 1 || root.Disks[0].Device != "/dev/vda" {
			t.Errorf("root disks %+v, want vda's", root.Disks)
		}
		if k := got["kubelet"]; k.Memory.Usage != 4194304 || k.Memory.RSS != 2097152 || k.Memory.PageFaults != 5000 || k.CPU.UsageNanos != 2e9 {
			t.Errorf("kubelet %+v", k)
		}
		if m := got["misc"]; l == cgstatstest.V1Hybrid && m.Memory.Usage != 524288000 {
			t.Errorf("misc memory %+v, want the memory root's, where init is on v1", m.Memory)
		}
		r.SystemdRunning = true
		got, _ = r.System(context.Background())
		if _, ok := got["misc"]; ok {
			t.Errorf("misc reported on a systemd host without --system-cgroups")
		}
	})
}

func TestContainerIDFromDirectoryName(t *testing.T) {
	for name, want := range map[string]string{
		ctrID:                                ctrID,
		"cri-containerd-" + ctrID + ".scope": ctrID,
		"crio-" + ctrID + ".scope":           ctrID,
		"pod1234":                            "",
		"burstable":                          "",
		strings.ToUpper(ctrID):               "",
		"kubepods-burstable-pod12_34.slice":  "",
	} {
		if got := containerID(name); got != want {
			t.Errorf("containerID(%q) = %q, want %q", name, got, want)
		}
	}
}

// On v1 the cgroupfs driver's names are found as the systemd driver's
// are, each hierarchy at its own mount (cpu and cpuacct apart here, as
// on this project's CI host); a hierarchy the host lacks leaves its
// figures out rather than failing.
func TestV1CgroupfsNamesAndSeparateHierarchies(t *testing.T) {
	dir := t.TempDir()
	ctr := "kubepods/besteffort/pod" + cgstatstest.PodUID + "/" + ctrID + "/"
	cgstatstest.Write(t, dir, map[string]string{
		"cpu/" + ctr + "cpu.shares":                         "2\n",
		"cpu/" + ctr + "cpu.cfs_quota_us":                   "50000\n",
		"cpu/" + ctr + "cpu.cfs_period_us":                  "100000\n",
		"cpuacct/" + ctr + "cpuacct.usage":                  "7000\n",
		"memory/" + ctr + "memory.usage_in_bytes":           "4096\n",
		"memory/" + ctr + "memory.limit_in_bytes":           "9223372036854771712\n",
		"memory/" + ctr + "memory.use_hierarchy":            "0\n",
		"memory/" + ctr + "memory.stat":                     "cache 10\nrss 20\nmapped_file 30\nswap 40\ntotal_cache 11\ntotal_rss 21\ntotal_inactive_file 1000\n",
		"memory/" + ctr + "memory.oom_control":              "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
		"memory/" + ctr + "memory.failcnt":                  "5\n",
		"memory/kubepods/memory.usage_in_bytes":             "8192\n",
		"unified/cgroup.procs":                              "",
		"memory/" + ctr + "cgroup.procs":                    "",
		"blkio/" + ctr + "blkio.io_serviced_recursive":      "8:0 Read 1\n8:0 Write 2\n8:16 Read 3\n8:16 Write 4\nTotal 10\n",
		"blkio/" + ctr + "blkio.io_service_bytes_recursive": "8:16 Read 300\n8:16 Write 400\n8:0 Read 100\n8:0 Write 200\nTotal 1000\n",
		"blkio/" + ctr + "blkio.throttle.io_serviced":       "8:0 Read 99\n",
	})
	r := Reader{Root: dir, Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys"), V1: true, PodsCgroup: "/kubepods"}
	got, err := r.Containers(context.Background(), []string{ctrID})
	if err != nil {
		t.Fatal(err)
	}
	want := deps.CgroupStats{Path: "/" + strings.TrimSuffix(ctr, "/"),
		CPU: deps.CgroupCPU{UsageNanos: 7000},
		// use_hierarchy off: the cgroup's own counters; the working
		// set less total_inactive_file all the same, as cAdvisor's.
		Memory: deps.CgroupMemory{Usage: 4096, WorkingSet: 4096 - 1000, Cache: 10, RSS: 20, MappedFile: 30, Swap: 40, Failcnt: 5, EventsOOMKill: 3},
		Spec:   deps.CgroupSpec{MemoryLimit: deps.Unlimited, SwapLimit: deps.Unlimited, CPUShares: 2, CPUPeriod: 100000, CPUQuota: 50000},
		// CFQ's counters before the throttling layer's, by device.
		IO:  []deps.DeviceIO{{Major: 8, ReadBytes: 100, WriteBytes: 200, Reads: 1, Writes: 2}, {Major: 8, Minor: 16, ReadBytes: 300, WriteBytes: 400, Reads: 3, Writes: 4}},
		PSI: &deps.CgroupPSI{},
	}
	if diff := cmp.Diff(map[string]deps.CgroupStats{ctrID: want}, got, cmpopts.IgnoreFields(deps.CgroupStats{}, "Created")); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
}

// A cgroup in no memory or cpuacct hierarchy is an error naming it.
func TestV1MissingCgroup(t *testing.T) {
	h := cgstatstest.New(t, cgstatstest.V1Hybrid)
	_, err := reader(h).Cgroup("/nowhere")
	if err == nil || !strings.Contains(err.Error(), "/nowhere") {
		t.Errorf("err %v, want one naming /nowhere", err)
	}
}
