package machine

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// fixture writes files (relative path → content) under a temp dir.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const meminfo = `MemTotal:        4026088 kB
MemFree:          512000 kB
MemAvailable:    2048000 kB
Buffers:           10000 kB
HugePages_Total:       0
`

func procFiles() map[string]string {
	return map[string]string{
		"proc/meminfo":                   meminfo,
		"proc/sys/kernel/random/boot_id": "5b3c2d8e-1111-2222-3333-444455556666\n",
		"proc/sys/kernel/osrelease":      "6.1.0-18-amd64\n",
		"proc/sys/kernel/pid_max":        "4194304\n",
		"proc/sys/kernel/threads-max":    "31000\n",
		"proc/loadavg":                   "1.56 1.69 2.18 1/90 23301\n",
		"etc/machine-id":                 "0123456789abcdef0123456789abcdef\n",
		"sys/class/dmi/id/product_uuid":  "EC2A1B2C-0000-1111-2222-333344445555\n",
		"etc/os-release":                 "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
		"sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    "16\n",
		"sys/fs/cgroup/cgroup.controllers":                         "cpuset cpu io memory pids\n",
	}
}

func newFixtureMachine(t *testing.T, files map[string]string) *Machine {
	t.Helper()
	dir := fixture(t, files)
	return New(Options{ProcDir: filepath.Join(dir, "proc"), EtcDir: filepath.Join(dir, "etc"), SysDir: filepath.Join(dir, "sys"), RootDir: dir})
}

func TestInfoFromFixture(t *testing.T) {
	m := newFixtureMachine(t, procFiles())
	got, err := m.Info(context.Background())
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	want := deps.MachineInfo{
		MachineID:     "0123456789abcdef0123456789abcdef",
		SystemUUID:    "EC2A1B2C-0000-1111-2222-333344445555",
		BootID:        "5b3c2d8e-1111-2222-3333-444455556666",
		KernelVersion: "6.1.0-18-amd64",
		OSImage:       "Debian GNU/Linux 12 (bookworm)",
		Architecture:  runtime.GOARCH,
		CPUs:          runtime.NumCPU(),
		MemoryBytes:   4026088 * 1024,
		MaxPIDs:       31000, // threads-max is below pid_max
		HugePages:     []deps.HugePagePool{{PageSizeBytes: 2 << 20, Pages: 16}, {PageSizeBytes: 1 << 30, Pages: 0}},
		CgroupV2:      true,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Info (-want +got):\n%s", d)
	}
}

func TestInfoOptionalFiles(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(map[string]string)
		verify func(t *testing.T, info deps.MachineInfo)
	}{
		{
			name: "cgroup v1, no huge pages",
			edit: func(f map[string]string) {
				for k := range f {
					if strings.HasPrefix(k, "sys/") {
						delete(f, k)
					}
				}
				f["sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n"
			},
			verify: func(t *testing.T, info deps.MachineInfo) {
				if info.CgroupV2 || info.HugePages != nil {
					t.Errorf("CgroupV2 = %v, HugePages = %v; want false, none", info.CgroupV2, info.HugePages)
				}
			},
		},
		{
			name: "no machine-id",
			edit: func(f map[string]string) { delete(f, "etc/machine-id") },
			verify: func(t *testing.T, info deps.MachineInfo) {
				if info.MachineID != "" {
					t.Errorf("MachineID = %q, want empty", info.MachineID)
				}
			},
		},
		{
			name: "no os-release",
			edit: func(f map[string]string) { delete(f, "etc/os-release") },
			verify: func(t *testing.T, info deps.MachineInfo) {
				if info.OSImage != "Linux" {
					t.Errorf("OSImage = %q, want Linux", info.OSImage)
				}
			},
		},
		{
			name: "os-release without PRETTY_NAME",
			edit: func(f map[string]string) { f["etc/os-release"] = "NAME=Foo\n" },
			verify: func(t *testing.T, info deps.MachineInfo) {
				if info.OSImage != "Linux" {
					t.Errorf("OSImage = %q, want Linux", info.OSImage)
				}
			},
		},
		{
			name: "unquoted PRETTY_NAME",
			edit: func(f map[string]string) { f["etc/os-release"] = "PRETTY_NAME=Alpine\n" },
			verify: func(t *testing.T, info deps.MachineInfo) {
				if info.OSImage != "Alpine" {
					t.Errorf("OSImage = %q, want Alpine", info.OSImage)
				}
			},
		},
		{
			name: "no threads-max",
			edit: func(f map[string]string) { delete(f, "proc/sys/kernel/threads-max") },
			verify: func(t *testing.T, info deps.MachineInfo) {
				if info.MaxPIDs != 4194304 {
					t.Errorf("MaxPIDs = %d, want pid_max 4194304", info.MaxPIDs)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := procFiles()
			tt.edit(files)
			info, err := newFixtureMachine(t, files).Info(context.Background())
			if err != nil {
				t.Fatalf("Info: %v", err)
			}
			tt.verify(t, info)
		})
	}
}

func TestInfoErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(map[string]string)
	}{
		{"no meminfo", func(f map[string]string) { delete(f, "proc/meminfo") }},
		{"no MemTotal", func(f map[string]string) { f["proc/meminfo"] = "MemFree: 1 kB\n" }},
		{"bad meminfo number", func(f map[string]string) { f["proc/meminfo"] = "MemTotal: x kB\n" }},
		{"no boot id", func(f map[string]string) { delete(f, "proc/sys/kernel/random/boot_id") }},
		{"no osrelease", func(f map[string]string) { delete(f, "proc/sys/kernel/osrelease") }},
		{"no pid_max", func(f map[string]string) { delete(f, "proc/sys/kernel/pid_max") }},
		{"bad pid_max", func(f map[string]string) { f["proc/sys/kernel/pid_max"] = "many\n" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := procFiles()
			tt.edit(files)
			if _, err := newFixtureMachine(t, files).Info(context.Background()); err == nil {
				t.Error("Info succeeded")
			}
		})
	}
}

func TestUsageFromFixture(t *testing.T) {
	m := newFixtureMachine(t, procFiles())
	got, err := m.Usage(context.Background())
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(m.opts.RootDir, &st); err != nil {
		t.Fatal(err)
	}
	if got.MemoryAvailableBytes != 2048000*1024 {
		t.Errorf("MemoryAvailableBytes = %d, want %d", got.MemoryAvailableBytes, 2048000*1024)
	}
	if got.PIDsAvailable != 31000-90 {
		t.Errorf("PIDsAvailable = %d, want %d", got.PIDsAvailable, 31000-90)
	}
	if want := st.Blocks * uint64(st.Bsize); got.NodeFSCapacityBytes != want {
		t.Errorf("NodeFSCapacityBytes = %d, want %d", got.NodeFSCapacityBytes, want)
	}
	if want := st.Files; got.NodeFSInodes != want {
		t.Errorf("NodeFSInodes = %d, want %d", got.NodeFSInodes, want)
	}
	// Available space and free inodes move as other processes write; they
	// must be positive and bounded by the capacity.
	if got.NodeFSAvailableBytes == 0 || got.NodeFSAvailableBytes > got.NodeFSCapacityBytes {
		t.Errorf("NodeFSAvailableBytes = %d, want in (0, %d]", got.NodeFSAvailableBytes, got.NodeFSCapacityBytes)
	}
	if got.NodeFSInodes > 0 && got.NodeFSInodesFree > got.NodeFSInodes {
		t.Errorf("NodeFSInodesFree = %d, want <= %d", got.NodeFSInodesFree, got.NodeFSInodes)
	}
}

// The node's CPU time is /proc/stat's busy ticks (user, nice, system, irq,
// softirq, steal; not idle, iowait or guest) at 100 ticks a second; an
// unreadable or malformed file gives 0, not an error.
func TestUsageCPUTime(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       uint64
	}{
		{"busy ticks", "cpu  100 20 30 5000 70 1 2 3 40 0\ncpu0 50 10 15 2500 35 1 1 2 20 0\n", (100 + 20 + 30 + 1 + 2 + 3) * 10_000_000},
		{"missing", "", 0},
		{"malformed", "cpu 1 2 x 4 5 6 7 8\n", 0},
	} {
		files := procFiles()
		if tc.stat != "" {
			files["proc/stat"] = tc.stat
		}
		got, err := newFixtureMachine(t, files).Usage(context.Background())
		if err != nil {
			t.Fatalf("%s: Usage: %v", tc.name, err)
		}
		if got.CPUUsageCoreNanoSeconds != tc.want {
			t.Errorf("%s: CPUUsageCoreNanoSeconds = %d, want %d", tc.name, got.CPUUsageCoreNanoSeconds, tc.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(map[string]string)
		rootDir string
	}{
		{name: "no MemAvailable", edit: func(f map[string]string) { f["proc/meminfo"] = "MemTotal: 1 kB\n" }},
		{name: "no loadavg", edit: func(f map[string]string) { delete(f, "proc/loadavg") }},
		{name: "short loadavg", edit: func(f map[string]string) { f["proc/loadavg"] = "1 2 3\n" }},
		{name: "bad task field", edit: func(f map[string]string) { f["proc/loadavg"] = "1 2 3 90 5\n" }},
		{name: "missing root dir", edit: func(map[string]string) {}, rootDir: "does/not/exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := procFiles()
			tt.edit(files)
			m := newFixtureMachine(t, files)
			if tt.rootDir != "" {
				m.opts.RootDir = filepath.Join(m.opts.RootDir, tt.rootDir)
			}
			if _, err := m.Usage(context.Background()); err == nil {
				t.Error("Usage succeeded")
			}
		})
	}
}

func TestUsageNeverUnderflowsPIDs(t *testing.T) {
	files := procFiles()
	files["proc/loadavg"] = "0 0 0 1/40000 1\n"
	u, err := newFixtureMachine(t, files).Usage(context.Background())
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if u.PIDsAvailable != 0 {
		t.Errorf("PIDsAvailable = %d, want 0 when tasks exceed the limit", u.PIDsAvailable)
	}
}

func TestCanceledContext(t *testing.T) {
	m := newFixtureMachine(t, procFiles())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Info(ctx); err == nil {
		t.Error("Info with a canceled context succeeded")
	}
	if _, err := m.Usage(ctx); err == nil {
		t.Error("Usage with a canceled context succeeded")
	}
}

func TestRealMachineSmoke(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux procfs")
	}
	m := New(Options{RootDir: t.TempDir()})
	info, err := m.Info(context.Background())
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.BootID == "" || info.KernelVersion == "" || info.OSImage == "" || info.CPUs <= 0 || info.MemoryBytes == 0 || info.MaxPIDs == 0 {
		t.Errorf("Info has empty fields: %+v", info)
	}
	u, err := m.Usage(context.Background())
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if u.MemoryAvailableBytes == 0 || u.MemoryAvailableBytes > info.MemoryBytes {
		t.Errorf("MemoryAvailableBytes = %d, want in (0, %d]", u.MemoryAvailableBytes, info.MemoryBytes)
	}
	if u.NodeFSCapacityBytes == 0 || u.NodeFSAvailableBytes == 0 || u.PIDsAvailable == 0 || u.PIDsAvailable >= info.MaxPIDs {
		t.Errorf("Usage out of range: %+v (max PIDs %d)", u, info.MaxPIDs)
	}
}

func TestThermalThrottlePaths(t *testing.T) {
	files := procFiles()
	files["sys/devices/system/cpu/possible"] = "0-2,5\n"
	for _, cpu := range []string{"0", "2", "5"} {
		files["sys/devices/system/cpu/cpu"+cpu+"/thermal_throttle/core_throttle_count"] = "0\n"
	}
	files["sys/devices/system/cpu/cpu1/online"] = "1\n" // no thermal_throttle
	got := newFixtureMachine(t, files).ThermalThrottlePaths()
	want := []string{
		"/sys/devices/system/cpu/cpu0/thermal_throttle",
		"/sys/devices/system/cpu/cpu2/thermal_throttle",
		"/sys/devices/system/cpu/cpu5/thermal_throttle",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ThermalThrottlePaths (-want +got):\n%s", d)
	}
	if got := newFixtureMachine(t, procFiles()).ThermalThrottlePaths(); got != nil {
		t.Errorf("without a possible-CPU list: %v, want none", got)
	}
}

// TestInfoAppArmor: AppArmor is enabled only when the securityfs
// directory exists and the module parameter reads Y, as the kubelet reads
// them; the fixture without either (this test host's case) has none.
func TestInfoAppArmor(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"absent", nil, false},
		{"enabled", map[string]string{"sys/kernel/security/apparmor/profiles": "", "sys/module/apparmor/parameters/enabled": "Y\n"}, true},
		{"module disabled", map[string]string{"sys/kernel/security/apparmor/profiles": "", "sys/module/apparmor/parameters/enabled": "N\n"}, false},
		{"no securityfs entry", map[string]string{"sys/module/apparmor/parameters/enabled": "Y\n"}, false},
		{"no parameter", map[string]string{"sys/kernel/security/apparmor/profiles": ""}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := procFiles()
			maps.Copy(files, tc.files)
			info, err := newFixtureMachine(t, files).Info(context.Background())
			if err != nil {
				t.Fatalf("Info: %v", err)
			}
			if info.AppArmor != tc.want {
				t.Errorf("AppArmor = %v, want %v", info.AppArmor, tc.want)
			}
		})
	}
}
