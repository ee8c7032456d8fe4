package cgroups

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocgroups "github.com/opencontainers/cgroups"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func TestCPUWeight(t *testing.T) {
	// Upstream's getCPUWeight: [2, 262144] → [1, 10000].
	for shares, want := range map[uint64]uint64{2: 1, 1024: 39, 262144: 10000, 300000: 10000, 0: 1} {
		if got := CPUWeight(shares); got != want {
			t.Errorf("CPUWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestPageSizeBytes(t *testing.T) {
	for s, want := range map[string]int64{"2MB": 2 << 20, "1GB": 1 << 30, "64KB": 64 << 10} {
		if got, ok := pageSizeBytes(s); !ok || got != want {
			t.Errorf("pageSizeBytes(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	if _, ok := pageSizeBytes("2XB"); ok {
		t.Error("pageSizeBytes(2XB) parsed")
	}
}

func TestResourcesAndConfig(t *testing.T) {
	shares, quota, period, mem := uint64(512), int64(50000), uint64(100000), int64(64<<20)
	r := deps.CgroupResources{CPUShares: &shares, CPUQuota: &quota, CPUPeriod: &period, Memory: &mem,
		HugePageLimits: map[int64]int64{2 << 20: 4 << 20, 1 << 30: 0}}
	v1 := &Cgroups{hugePageSizes: []string{"2MB"}}
	want := &ocgroups.Resources{SkipDevices: true, SkipFreezeOnSet: true, CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000,
		Memory: 64 << 20, HugetlbLimit: []*ocgroups.HugepageLimit{{Pagesize: "2MB", Limit: 4 << 20}}}
	if diff := cmp.Diff(want, v1.resources(r)); diff != "" {
		t.Errorf("v1 resources (-want +got):\n%s", diff)
	}
	v2 := &Cgroups{v2: true}
	if got := v2.resources(r); got.CpuShares != 0 || got.CpuWeight != 20 {
		t.Errorf("v2 resources: shares %d weight %d, want weight 20 only", got.CpuShares, got.CpuWeight)
	}
	sd := &Cgroups{systemd: true}
	cg := sd.config("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice", nil)
	if cg.Parent != "kubepods-burstable.slice" || cg.Name != "kubepods-burstable-pod12_34.slice" || cg.Path != "" {
		t.Errorf("systemd config: parent %q name %q path %q", cg.Parent, cg.Name, cg.Path)
	}
	if cg := sd.config("/kubepods.slice", nil); cg.Parent != "-.slice" || cg.Name != "kubepods.slice" {
		t.Errorf("systemd root config: parent %q name %q", cg.Parent, cg.Name)
	}
	if cg := v1.config("/kubepods/burstable", nil); cg.Path != "/kubepods/burstable" || cg.Systemd {
		t.Errorf("cgroupfs config: %+v", cg)
	}
}

// TestUnifiedLayoutFixture reads a v2 layout made of plain directories:
// List finds the pod cgroups under a QoS cgroup (not its files), and the
// hugetlb controller counts only when the root enables it.
func TestUnifiedLayoutFixture(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"kubepods/burstable/podA", "kubepods/burstable/podB/ctr"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"kubepods/burstable/cpu.weight", "cgroup.controllers"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("cpu memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cgroups{v2: true, unified: root}
	got, err := c.List("/kubepods/burstable")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"podA", "podB"}, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if got, err := c.List("/kubepods/besteffort"); err != nil || len(got) != 0 {
		t.Errorf("List of a missing cgroup = %v, %v; want nothing", got, err)
	}
	if c.hugetlbAvailable() {
		t.Error("hugetlb available without it in cgroup.controllers")
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory hugetlb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !c.hugetlbAvailable() {
		t.Error("hugetlb not available with it in cgroup.controllers")
	}
}
