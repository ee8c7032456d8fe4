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

// Every cgroup of the suite's node is read as cgstatstest says the
// kernel's files mean (the container's figures the same on both layouts
// but for what one version has and the other lacks): the container and
// its pod found by ID and UID under either driver's names, the system
// containers by the Summary's names (the agent's own as the kubelet
// names it: on v1 its name=systemd path, each hierarchy read where the
// process is), the root with the machine's pressure, disks and network.
func TestReaderOnEachLayout(t *testing.T) {
	eachLayout(t, func(t *testing.T, l cgstatstest.Layout, h cgstatstest.Host) {
		r := reader(h)
		ctx := context.Background()
		var got cgstatstest.Figures
		var errs [3]error
		got.Containers, errs[0] = r.Containers(ctx, []string{ctrID, "gone"})
		got.Pods, errs[1] = r.Pods(ctx, []string{cgstatstest.PodUID, "5678"})
		got.System, errs[2] = r.System(ctx)
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range []map[string]deps.CgroupStats{got.Containers, got.Pods, got.System} {
			for k, s := range m {
				if time.Since(s.Created) > time.Hour {
					t.Errorf("%q created %v, want its directory's time", k, s.Created)
				}
			}
		}
		if diff := cmp.Diff(h.Want(), got, cmpopts.IgnoreFields(deps.CgroupStats{}, "Created")); diff != "" {
			t.Errorf("figures (-want +got):\n%s", diff)
		}
		r.SystemdRunning = true
		sys, _ := r.System(ctx)
		if _, ok := sys["misc"]; ok {
			t.Errorf("misc reported on a systemd host without --system-cgroups")
		}
	})
}

func TestPodUIDFromDirectoryName(t *testing.T) {
	for name, want := range map[string]string{"pod1234": "1234", "kubepods-burstable-pod12_34.slice": "12-34", "kubepods": "", "kubepods-besteffort.slice": "", "burstable": ""} {
		if got := podUID(name); got != want {
			t.Errorf("podUID(%q) = %q, want %q", name, got, want)
		}
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
