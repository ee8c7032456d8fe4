// Package machine is the production side of deps.Machine: the node's
// identity, capacity and usage read from /proc, /etc and statfs.
package machine

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Default paths.
const (
	DefaultProcDir = "/proc"
	DefaultEtcDir  = "/etc"
	DefaultSysDir  = "/sys"
	DefaultRootDir = "/var/lib/lockstep"
)

// Options says where to read. Zero fields take the defaults, so tests can
// point the reader at fixture trees.
type Options struct {
	// ProcDir is procfs' mount point.
	ProcDir string
	// EtcDir holds machine-id and os-release.
	EtcDir string
	// SysDir is sysfs' mount point (huge page pools, the cgroup root, the
	// system UUID).
	SysDir string
	// RootDir is the agent's root directory; its file system is nodefs.
	RootDir string
}

// Machine implements deps.Machine for the host it runs on.
type Machine struct {
	opts Options
}

var _ deps.Machine = (*Machine)(nil)

// New returns a Machine reading from the paths in opts.
func New(opts Options) *Machine {
	if opts.ProcDir == "" {
		opts.ProcDir = DefaultProcDir
	}
	if opts.EtcDir == "" {
		opts.EtcDir = DefaultEtcDir
	}
	if opts.SysDir == "" {
		opts.SysDir = DefaultSysDir
	}
	if opts.RootDir == "" {
		opts.RootDir = DefaultRootDir
	}
	if opts.SysDir == "" {
		opts.SysDir = DefaultSysDir
	}
	return &Machine{opts: opts}
}

// systemUUID reads the SMBIOS product UUID, as cAdvisor does; "" when
// the file is missing or unreadable (it is root-only, and absent on some
// virtual machines and architectures).
func (m *Machine) systemUUID() string {
	data, err := os.ReadFile(filepath.Join(m.opts.SysDir, "class", "dmi", "id", "product_uuid"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Info reads the node's identity and fixed capacity. MachineID is empty
// when <etc>/machine-id is missing and OSImage is "Linux" when
// os-release has no PRETTY_NAME, as cAdvisor reports them; MaxPIDs is
// kernel.pid_max, lowered to kernel.threads-max when that is smaller
// (every thread takes a PID), as the kubelet computes it.
func (m *Machine) Info(ctx context.Context) (deps.MachineInfo, error) {
	if err := ctx.Err(); err != nil {
		return deps.MachineInfo{}, err
	}
	info := deps.MachineInfo{Architecture: runtime.GOARCH, CPUs: runtime.NumCPU(), OSImage: "Linux"}
	var err error
	if info.MachineID, err = m.readOptional(filepath.Join(m.opts.EtcDir, "machine-id")); err != nil {
		return deps.MachineInfo{}, err
	}
	info.SystemUUID = m.systemUUID()
	if info.BootID, err = m.readString(m.proc("sys/kernel/random/boot_id")); err != nil {
		return deps.MachineInfo{}, err
	}
	if info.KernelVersion, err = m.readString(m.proc("sys/kernel/osrelease")); err != nil {
		return deps.MachineInfo{}, err
	}
	name, err := m.prettyName()
	if err != nil {
		return deps.MachineInfo{}, err
	}
	if name != "" {
		info.OSImage = name
	}
	mem, err := m.meminfo()
	if err != nil {
		return deps.MachineInfo{}, err
	}
	var ok bool
	if info.MemoryBytes, ok = mem["MemTotal"]; !ok {
		return deps.MachineInfo{}, fmt.Errorf("read %s: no MemTotal", m.proc("meminfo"))
	}
	if info.MaxPIDs, err = m.maxPIDs(); err != nil {
		return deps.MachineInfo{}, err
	}
	if info.HugePages, err = m.hugePages(); err != nil {
		return deps.MachineInfo{}, err
	}
	info.CgroupV2 = m.cgroupV2()
	info.AppArmor = m.appArmor()
	if info.Topology, err = m.topology(); err != nil {
		return deps.MachineInfo{}, err
	}
	if info.NUMANodes, err = m.numaNodes(); err != nil {
		return deps.MachineInfo{}, err
	}
	return info, nil
}

// hugePages lists <sys>/kernel/mm/hugepages/hugepages-<size>kB, smallest
// page first, with each pool's nr_hugepages. No such directory (a kernel
// without huge pages) is no pool.
func (m *Machine) hugePages() ([]deps.HugePagePool, error) {
	dir := filepath.Join(m.opts.SysDir, "kernel/mm/hugepages")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read huge page pools: %w", err)
	}
	var pools []deps.HugePagePool
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		size, err := strconv.ParseUint(strings.TrimSuffix(kb, "kB"), 10, 64)
		if err != nil || !strings.HasSuffix(kb, "kB") {
			return nil, fmt.Errorf("huge page pool %s: unexpected name", filepath.Join(dir, e.Name()))
		}
		pages, err := m.readUint(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			return nil, err
		}
		pools = append(pools, deps.HugePagePool{PageSizeBytes: size * 1024, Pages: pages})
	}
	slices.SortFunc(pools, func(a, b deps.HugePagePool) int { return cmp.Compare(a.PageSizeBytes, b.PageSizeBytes) })
	return pools, nil
}

// cgroupV2 reports whether <sys>/fs/cgroup is the unified hierarchy: its
// root then lists the enabled controllers in cgroup.controllers, which no
// cgroup v1 mount has.
func (m *Machine) cgroupV2() bool {
	_, err := os.Stat(filepath.Join(m.opts.SysDir, "fs/cgroup/cgroup.controllers"))
	return err == nil
}

// appArmor reports whether the kernel has AppArmor enabled, as the
// kubelet decides it: <sys>/kernel/security/apparmor exists and
// <sys>/module/apparmor/parameters/enabled reads "Y".
func (m *Machine) appArmor() bool {
	if _, err := os.Stat(filepath.Join(m.opts.SysDir, "kernel/security/apparmor")); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(m.opts.SysDir, "module/apparmor/parameters/enabled"))
	return err == nil && len(b) > 1 && b[0] == 'Y'
}

// Usage reads the node's resource usage.
//
// MemoryAvailableBytes is the kernel's MemAvailable estimate. The
// kubelet's memory.available is instead capacity minus the root cgroup's
// working set (usage minus inactive file pages), so it counts active page
// cache as used; MemAvailable counts most page cache, active or not, and
// reclaimable slab as available, less the zones' low watermarks. On a host
// with much active cache MemAvailable is therefore higher than the
// kubelet's figure, and a memory.available eviction threshold fires later.
//
// NodeFS* come from statfs of the root directory (available bytes are
// those usable by an unprivileged user). PIDsAvailable is MaxPIDs minus
// the kernel's count of tasks (threads included, /proc/loadavg).
func (m *Machine) Usage(ctx context.Context) (deps.MachineUsage, error) {
	if err := ctx.Err(); err != nil {
		return deps.MachineUsage{}, err
	}
	var u deps.MachineUsage
	mem, err := m.meminfo()
	if err != nil {
		return deps.MachineUsage{}, err
	}
	var ok bool
	if u.MemoryAvailableBytes, ok = mem["MemAvailable"]; !ok {
		return deps.MachineUsage{}, fmt.Errorf("read %s: no MemAvailable", m.proc("meminfo"))
	}

	var st syscall.Statfs_t
	if err := syscall.Statfs(m.opts.RootDir, &st); err != nil {
		return deps.MachineUsage{}, fmt.Errorf("statfs root dir %s: %w", m.opts.RootDir, err)
	}
	bsize := uint64(st.Bsize)
	u.NodeFSCapacityBytes = st.Blocks * bsize
	u.NodeFSAvailableBytes = st.Bavail * bsize
	u.NodeFSInodes = st.Files
	u.NodeFSInodesFree = st.Ffree

	maxPIDs, err := m.maxPIDs()
	if err != nil {
		return deps.MachineUsage{}, err
	}
	tasks, err := m.tasks()
	if err != nil {
		return deps.MachineUsage{}, err
	}
	if tasks < maxPIDs {
		u.PIDsAvailable = maxPIDs - tasks
	}
	u.CPUUsageCoreNanoSeconds = m.cpuTime()
	return u, nil
}

// userHZ is the unit of /proc/stat's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuTime is the node's cumulative busy CPU time from /proc/stat's "cpu"
// line (user, nice, system, irq, softirq, steal; guest time is already in
// user), in nanoseconds; 0 when it cannot be read.
func (m *Machine) cpuTime() uint64 {
	data, err := os.ReadFile(m.proc("stat"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return ticks * uint64(time.Second/userHZ)
}

func (m *Machine) proc(rel string) string { return filepath.Join(m.opts.ProcDir, rel) }

// readString returns the trimmed content of path.
func (m *Machine) readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readOptional is readString with a missing file reading as "".
func (m *Machine) readOptional(path string) (string, error) {
	s, err := m.readString(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return s, err
}

// readUint reads a file holding one decimal number.
func (m *Machine) readUint(path string) (uint64, error) {
	s, err := m.readString(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

// prettyName returns PRETTY_NAME from <etc>/os-release, "" when the file
// or the key is missing.
func (m *Machine) prettyName() (string, error) {
	path := filepath.Join(m.opts.EtcDir, "os-release")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			return u, nil
		}
		return strings.Trim(v, `"'`), nil
	}
	return "", nil
}

// meminfo parses /proc/meminfo into bytes per key ("MemTotal: 16 kB").
func (m *Machine) meminfo() (map[string]uint64, error) {
	path := m.proc("meminfo")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %s: %w", path, key, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[key] = n
	}
	return out, nil
}

// maxPIDs is min(pid_max, threads-max); threads-max is optional.
func (m *Machine) maxPIDs() (uint64, error) {
	pidMax, err := m.readUint(m.proc("sys/kernel/pid_max"))
	if err != nil {
		return 0, err
	}
	threadsMax, err := m.readUint(m.proc("sys/kernel/threads-max"))
	if errors.Is(err, fs.ErrNotExist) {
		return pidMax, nil
	}
	if err != nil {
		return 0, err
	}
	return min(pidMax, threadsMax), nil
}

// tasks returns the number of tasks (processes and threads) from the
// fourth field of /proc/loadavg ("running/total").
func (m *Machine) tasks() (uint64, error) {
	path := m.proc("loadavg")
	s, err := m.readString(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(s)
	if len(f) < 4 {
		return 0, fmt.Errorf("parse %s: %d fields, want at least 4", path, len(f))
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("parse %s: task field %q is not running/total", path, f[3])
	}
	n, err := strconv.ParseUint(total, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: task total: %w", path, err)
	}
	return n, nil
}

// ThermalThrottlePaths returns /sys/devices/system/cpu/cpu<N>/thermal_throttle
// for each possible CPU N (<sys>/devices/system/cpu/possible, "0-3,8")
// whose directory exists, in CPU order: the paths upstream masks in every
// container after the default masked paths. A host without the list
// masks none.
func (m *Machine) ThermalThrottlePaths() []string {
	b, err := os.ReadFile(filepath.Join(m.opts.SysDir, "devices/system/cpu/possible"))
	if err != nil {
		return nil
	}
	var out []string
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err1 := strconv.Atoi(lo)
		last, err2 := first, error(nil)
		if isRange {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			return nil
		}
		for cpu := first; cpu <= last; cpu++ {
			rel := fmt.Sprintf("devices/system/cpu/cpu%d/thermal_throttle", cpu)
			if _, err := os.Stat(filepath.Join(m.opts.SysDir, rel)); err == nil {
				out = append(out, "/sys/"+rel)
			}
		}
	}
	return out
}
