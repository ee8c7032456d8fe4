package cgstats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lockstep-dev/lockstep/node/deps"
)

const ctrID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// write lays files out below dir: path → content.
func write(t *testing.T, dir string, files map[string]string) {
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

// fixture is a host with one busybox container of the node suite's
// summary pod (80M limit, no CPU request) under the cgroupfs driver on
// cgroup v2, as the kernel shows it.
func fixture(t *testing.T) Reader {
	dir := t.TempDir()
	root, proc, sys := filepath.Join(dir, "cgroup"), filepath.Join(dir, "proc"), filepath.Join(dir, "sys")
	ctr := "kubepods/burstable/pod1234/" + ctrID + "/"
	write(t, root, map[string]string{
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
		"kubepods/cpu.stat":         "usage_usec 900000\nuser_usec 500000\nsystem_usec 400000\n",
		"kubepods/memory.current":   "52428800\n",
		"kubepods/memory.stat":      "anon 20971520\nfile 31457280\ninactive_file 10485760\npgfault 50000\npgmajfault 3\n",
		"kubepods/memory.max":       "max\n",
		"cpu.stat":                  "usage_usec 9000000\nuser_usec 5000000\nsystem_usec 4000000\n",
		"memory.stat":               "anon 209715200\nfile 314572800\nfile_mapped 1000\npgfault 900000\npgmajfault 30\n",
		"cpu.pressure":              "some avg10=0.10 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
	})
	write(t, proc, map[string]string{
		"4242/limits": "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n",
		"4242/cgroup": "0::/kubepods/burstable/pod1234/" + ctrID + "\n",
		"4242/comm":   "sh\n",
		"meminfo":     "MemTotal:       16000000 kB\nMemFree:         8000000 kB\nInactive(file):  1000000 kB\n",
		"self/cgroup": "0::/lockstep\n",
		"1/cgroup":    "0::/init.scope\n",
		"1/comm":      "init\n",
	})
	for _, fd := range []struct{ n, target string }{{"0", "/dev/null"}, {"1", "pipe:[77]"}, {"3", "socket:[12345]"}} {
		if err := os.MkdirAll(filepath.Join(proc, "4242", "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(fd.target, filepath.Join(proc, "4242", "fd", fd.n)); err != nil {
			t.Fatal(err)
		}
	}
	write(t, sys, map[string]string{"dev/block/254:0/uevent": "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n"})
	for _, d := range []string{"lockstep", "init.scope"} {
		write(t, root, map[string]string{d + "/cpu.stat": "usage_usec 2000000\n", d + "/memory.current": "4194304\n", d + "/memory.stat": "anon 2097152\npgfault 5000\n"})
	}
	return Reader{Root: root, Proc: proc, Sys: sys, PodsCgroup: "/kubepods"}
}

func TestContainerFromCgroupV2(t *testing.T) {
	r := fixture(t)
	got, err := r.Containers(context.Background(), []string{ctrID, "gone"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]deps.CgroupStats{ctrID: {
		Path: "/kubepods/burstable/pod1234/" + ctrID,
		CPU:  deps.CgroupCPU{UsageNanos: 51234000, UserNanos: 30000000, SystemNanos: 21234000},
		Memory: deps.CgroupMemory{Usage: 1302528, MaxUsage: 2199552, WorkingSet: 1302528 - 565248,
			Cache: 856064, RSS: 319488, PageFaults: 1979},
		// The limit as memory.max holds it (80M rounded down to pages),
		// shares from weight 1 (no CPU request: 2 shares).
		Spec: deps.CgroupSpec{MemoryLimit: 79998976, SwapLimit: 0, CPUPeriod: 100000, CPUQuota: deps.Unlimited, CPUShares: 2},
		IO:   []deps.DeviceIO{{Major: 254, Device: "/dev/vda", ReadBytes: 8192, WriteBytes: 8192, Reads: 2, Writes: 2}},
		// 4300 ended: its files are not there; threads from pids.current.
		Processes: deps.ProcessStats{Processes: 2, Threads: 2, FileDescriptors: 3, Sockets: 1, OpenFilesSoftLimit: 1048576},
		PSI: &deps.CgroupPSI{
			CPU:    deps.PSI{Some: deps.PSIData{Total: 120}, Full: deps.PSIData{Total: 100}},
			Memory: deps.PSI{},
			IO:     deps.PSI{Some: deps.PSIData{Total: 3000, Avg10: 1.5, Avg60: 0.25, Avg300: 0.05}, Full: deps.PSIData{Total: 2000, Avg10: 1, Avg60: 0.2, Avg300: 0.04}},
		},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(deps.CgroupStats{}, "Created")); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if c := got[ctrID].Created; time.Since(c) > time.Hour {
		t.Errorf("created %v, want the directory's time", c)
	}
}

func TestPodCgroup(t *testing.T) {
	r := fixture(t)
	write(t, r.Root, map[string]string{"kubepods/burstable/pod1234/cpu.stat": "usage_usec 60000\n", "kubepods/burstable/pod1234/memory.current": "1500000\n",
		"kubepods/burstable/pod1234/cgroup.procs": "4242\n"})
	got, err := r.Pods(context.Background(), []string{"1234", "5678"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["1234"].Path != "/kubepods/burstable/pod1234" || got["1234"].CPU.UsageNanos != 60000000 || got["1234"].Processes.Processes != 1 {
		t.Errorf("pods: %+v, want pod 1234's cgroup", got)
	}
	for name, want := range map[string]string{"pod1234": "1234", "kubepods-burstable-pod12_34.slice": "12-34", "kubepods": "", "kubepods-besteffort.slice": "", "burstable": ""} {
		if got := podUID(name); got != want {
			t.Errorf("podUID(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSystemContainers(t *testing.T) {
	r := fixture(t)
	got, err := r.System(context.Background())
	// No containerd runs in the fixture: no runtime container.
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for k, v := range got {
		paths[k] = v.Path
	}
	if diff := cmp.Diff(map[string]string{"": "/", "pods": "/kubepods", "kubelet": "/lockstep", "misc": "/init.scope"}, paths); diff != "" {
		t.Errorf("system containers (-want +got):\n%s", diff)
	}
	root := got[""]
	wantRoot := deps.CgroupMemory{Usage: 8000000 * 1024, WorkingSet: 7000000 * 1024, Cache: 314572800, RSS: 209715200, MappedFile: 1000, PageFaults: 900000, MajorPageFaults: 30}
	if diff := cmp.Diff(wantRoot, root.Memory); diff != "" {
		t.Errorf("root memory (-want +got):\n%s", diff)
	}
	if root.PSI == nil || root.PSI.CPU.Some.Total != 5 {
		t.Errorf("root PSI %+v, want the root's cpu.pressure", root.PSI)
	}
	if k := got["kubelet"].Memory; k.Usage != 4194304 || k.RSS != 2097152 || k.PageFaults != 5000 {
		t.Errorf("kubelet memory %+v", k)
	}
	r.SystemdRunning = true
	got, _ = r.System(context.Background())
	if _, ok := got["misc"]; ok {
		t.Errorf("misc reported on a systemd host without --system-cgroups")
	}
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
