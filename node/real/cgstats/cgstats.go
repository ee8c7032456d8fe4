// Package cgstats is the real deps.CgroupStatsReader: it reads containers'
// and system cgroups from the cgroup filesystem and their processes from
// /proc (threads, file descriptors, sockets, the open-files limit), the
// figures cAdvisor gives the kubelet. On cgroup v2 they come from
// cpu.stat, memory.*, io.stat, pids.* and the pressure files; on cgroup
// v1 (v1.go) from the cpu, cpuacct, memory, blkio and pids hierarchies,
// each mounted in a directory of its own below the root. A limit is
// reported as the kernel holds it: memory.max and memory.limit_in_bytes
// are rounded down to a page multiple when written.
//
// A container's cgroup is found below the pods' cgroup by its runtime ID
// (the cgroupfs driver names it "<id>", the systemd driver
// "<runtime>-<id>.scope"), in every v1 hierarchy at the same path. The
// node's own figures (the root, "") come from the root cgroup where it
// has them and /proc/meminfo and /proc/vmstat where it does not (the v2
// root has no memory.current).
//
// This is real-world code (node/real): it reads the host's files.
package cgstats

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/netstats"
)

// Reader reads cgroups below Root and processes below Proc.
type Reader struct {
	// Root is where cgroup v2 is mounted, or on cgroup v1 the directory
	// holding a mount of each hierarchy (default /sys/fs/cgroup); Proc
	// where /proc is (default /proc); Sys where /sys is (default /sys,
	// for block device names).
	Root, Proc, Sys string
	// V1: the host runs the v1 hierarchies (legacy or hybrid mode; a
	// hybrid host's unified hierarchy holds no controller).
	V1 bool
	// PodsCgroup is the cgroup holding the pods ("/kubepods" or
	// "/kubepods.slice").
	PodsCgroup string
	// Kubelet, Runtime and Misc are the system containers' cgroups; ""
	// finds them: the agent's own process's, the cgroup of the process
	// named by RuntimeProcess, and (when SystemdRunning is false) the
	// init process's.
	Kubelet, Runtime, Misc string
	// RuntimeProcess is the runtime's process name (default
	// "containerd").
	RuntimeProcess string
	// SystemdRunning: the host runs systemd, and has no misc container
	// unless Misc names one (as the kubelet reports it).
	SystemdRunning bool
}

var _ deps.CgroupStatsReader = Reader{}

func (r Reader) root() string { return orDefault(r.Root, "/sys/fs/cgroup") }
func (r Reader) proc() string { return orDefault(r.Proc, "/proc") }
func (r Reader) sys() string  { return orDefault(r.Sys, "/sys") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Containers reads the cgroups of the containers with these IDs.
func (r Reader) Containers(ctx context.Context, ids []string) (map[string]deps.CgroupStats, error) {
	return r.read(ctx, "container", ids, func(id string) string { return id })
}

// Pods reads the pod-level cgroups of the pods with these UIDs.
func (r Reader) Pods(ctx context.Context, uids []string) (map[string]deps.CgroupStats, error) {
	return r.read(ctx, "pod", uids, func(uid string) string { return podKey + strings.ReplaceAll(uid, "_", "-") })
}

// podKey prefixes a pod's UID among the directories containerDirs finds.
const podKey = "pod:"

// read reads the cgroups of these keys, each found under key(k).
func (r Reader) read(ctx context.Context, what string, keys []string, key func(string) string) (map[string]deps.CgroupStats, error) {
	dirs, err := r.containerDirs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]deps.CgroupStats, len(keys))
	var errs []error
	for _, k := range keys {
		p, ok := dirs[key(k)]
		if !ok {
			continue
		}
		s, err := r.cgroup(cgroupRef{path: p})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", what, k, err))
			continue
		}
		out[k] = s
	}
	return out, errors.Join(errs...)
}

// containerDirs maps every runtime ID found as a cgroup below the pods'
// cgroup (at most four levels: QoS class, pod, container) to its path,
// and every pod's UID (prefixed podKey, dashes for the systemd driver's
// underscores) to its pod cgroup's. On cgroup v1 it looks in the memory
// hierarchy: the kubelet and the runtime make a pod's and a container's
// cgroup at the same path in every hierarchy.
func (r Reader) containerDirs(ctx context.Context) (map[string]string, error) {
	hroot := r.root()
	if r.V1 {
		hroot = r.hierarchies()[ctlMemory]
		if hroot == "" {
			return map[string]string{}, nil
		}
	}
	base := filepath.Join(hroot, r.PodsCgroup)
	out := map[string]string{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(base, p)
		if depth := strings.Count(rel, string(filepath.Separator)); rel != "." && depth >= 3 {
			return fs.SkipDir
		}
		cg := "/" + filepath.ToSlash(strings.TrimPrefix(p, hroot+string(filepath.Separator)))
		if id := containerID(d.Name()); id != "" {
			out[id] = cg
		} else if uid := podUID(d.Name()); uid != "" {
			out[podKey+uid] = cg
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("containers' cgroups below %s: %w", base, err)
	}
	return out, nil
}

// containerID is the runtime ID a cgroup directory name carries: the
// name itself when it is 64 hex digits (cgroupfs), the ID of a systemd
// scope "<runtime>-<id>.scope"; "" for any other directory.
func containerID(name string) string {
	if s, ok := strings.CutSuffix(name, ".scope"); ok {
		if i := strings.LastIndexByte(s, '-'); i >= 0 {
			name = s[i+1:]
		}
	}
	if len(name) != 64 {
		return ""
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return name
}

// podUID is the UID a pod cgroup's name carries ("pod<uid>", or the
// systemd driver's "kubepods-<qos>-pod<uid with _>.slice"), "" for any
// other directory.
func podUID(name string) string {
	name = strings.TrimSuffix(name, ".slice")
	i := strings.LastIndex(name, "pod")
	if i < 0 || (i > 0 && name[i-1] != '-') || len(name) == i+3 {
		return ""
	}
	return strings.ReplaceAll(name[i+3:], "_", "-")
}

// System reads the root ("") and the system containers the host has.
func (r Reader) System(ctx context.Context) (map[string]deps.CgroupStats, error) {
	out := map[string]deps.CgroupStats{}
	var errs []error
	refs := map[string]cgroupRef{"": {path: "/"}, "pods": {path: r.PodsCgroup}}
	refs["kubelet"] = cgroupRef{path: r.Kubelet}
	if r.Kubelet == "" {
		refs["kubelet"] = r.processCgroup("self")
	}
	refs["runtime"] = cgroupRef{path: r.Runtime}
	if r.Runtime == "" {
		if pid := r.findProcess(orDefault(r.RuntimeProcess, "containerd")); pid != "" {
			refs["runtime"] = r.processCgroup(pid)
		}
	}
	refs["misc"] = cgroupRef{path: r.Misc}
	if r.Misc == "" && !r.SystemdRunning {
		refs["misc"] = r.processCgroup("1")
	}
	for name, ref := range refs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ref.path == "" {
			continue
		}
		s, err := r.cgroup(ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("system container %q: %w", name, err))
			continue
		}
		out[name] = s
	}
	return out, errors.Join(errs...)
}

// cgroupRef names a cgroup: its path, and on cgroup v1 where a process
// is in each hierarchy when that differs from path (controller → path).
type cgroupRef struct {
	path string
	v1   map[string]string
}

// processCgroup is the cgroup of process pid ("self" for this one), a
// zero ref when unreadable. On cgroup v1 its name is the kubelet's for a
// process's container (the name=systemd hierarchy's path, else the cpu
// hierarchy's) and each hierarchy is read where the process is in it.
func (r Reader) processCgroup(pid string) cgroupRef {
	b, err := os.ReadFile(filepath.Join(r.proc(), pid, "cgroup"))
	if err != nil {
		return cgroupRef{}
	}
	v1 := map[string]string{}
	var unified string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		p := path.Clean("/" + parts[2])
		if parts[0] == "0" && parts[1] == "" {
			unified = p
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			v1[ctl] = p
		}
	}
	if !r.V1 {
		return cgroupRef{path: unified}
	}
	name := v1["name=systemd"]
	if name == "" {
		name = v1[ctlCPU]
	}
	return cgroupRef{path: name, v1: v1}
}

// findProcess returns the PID of the first process whose name is comm,
// "" when none runs.
func (r Reader) findProcess(comm string) string {
	ents, err := os.ReadDir(r.proc())
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.proc(), e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return e.Name()
		}
	}
	return ""
}

// Cgroup reads the cgroup at p (below Root, or below each v1
// hierarchy; "/" the root).
func (r Reader) Cgroup(p string) (deps.CgroupStats, error) {
	return r.cgroup(cgroupRef{path: p})
}

// cgroup reads the cgroup ref names.
func (r Reader) cgroup(ref cgroupRef) (deps.CgroupStats, error) {
	if r.V1 {
		return r.cgroupV1(ref)
	}
	return r.cgroupV2(ref.path)
}

// cgroupV2 reads the cgroup at p below the unified hierarchy.
func (r Reader) cgroupV2(p string) (deps.CgroupStats, error) {
	dir := filepath.Join(r.root(), p)
	st, err := os.Stat(dir)
	if err != nil {
		return deps.CgroupStats{}, fmt.Errorf("cgroup %s: %w", p, err)
	}
	s := deps.CgroupStats{Path: path.Clean("/" + p), Created: st.ModTime()}
	f := files{dir: dir}
	cpu := f.keyed("cpu.stat")
	s.CPU = deps.CgroupCPU{UsageNanos: cpu["usage_usec"] * 1000, UserNanos: cpu["user_usec"] * 1000, SystemNanos: cpu["system_usec"] * 1000}
	s.Memory = r.memory(&f, s.Path == "/")
	s.Spec = spec(&f)
	s.IO = r.io(f.keyedLines("io.stat"))
	if s.Path != "/" {
		// The root holds every process of a host without systemd: too
		// many to walk each sample, and no container's.
		s.Processes = r.processes(&f)
	}
	s.PSI = psi(&f, ".pressure")
	if s.Path == "/" {
		r.machine(&s)
	}
	return s, f.err
}

// machine adds what the root reports of the whole machine: its disks'
// and network interfaces' counters.
func (r Reader) machine(s *deps.CgroupStats) {
	s.Disks = diskstats(files{dir: r.proc()}.keyedLines("diskstats"))
	if b, err := os.ReadFile(filepath.Join(r.proc(), "net", "dev")); err == nil {
		s.Network, _ = netstats.ParseInterfaces(b)
		if s.Network == nil {
			s.Network = []deps.NetInterface{}
		}
	}
}

// diskstats parses /proc/diskstats' lines of whole disks and partitions
// (loop and ram devices left out).
func diskstats(lines [][]string) []deps.DiskStats {
	var out []deps.DiskStats
	for _, l := range lines {
		if len(l) < 14 || strings.HasPrefix(l[2], "loop") || strings.HasPrefix(l[2], "ram") {
			continue
		}
		var v [11]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(l[3+i], 10, 64)
		}
		out = append(out, deps.DiskStats{Device: "/dev/" + l[2],
			ReadsMerged: v[1], SectorsRead: v[2], ReadTimeMillis: v[3],
			WritesMerged: v[5], SectorsWritten: v[6], WriteTimeMillis: v[7],
			IOInProgress: v[8], IOTimeMillis: v[9], WeightedIOTimeMillis: v[10]})
	}
	return out
}

// memory reads the memory accounting; the root's usage from /proc.
func (r Reader) memory(f *files, root bool) deps.CgroupMemory {
	st := f.keyedOptional("memory.stat")
	m := deps.CgroupMemory{
		Cache: st["file"], RSS: st["anon"], MappedFile: st["file_mapped"],
		PageFaults: st["pgfault"], MajorPageFaults: st["pgmajfault"],
	}
	if root {
		mi := files{dir: r.proc()}.keyedOptional("meminfo")
		m.Usage = (mi["MemTotal:"] - min(mi["MemTotal:"], mi["MemFree:"])) * 1024
		m.WorkingSet = m.Usage - min(m.Usage, mi["Inactive(file):"]*1024)
		if len(st) == 0 {
			vm := files{dir: r.proc()}.keyedOptional("vmstat")
			m.Cache, m.RSS, m.MappedFile = (mi["Cached:"])*1024, mi["AnonPages:"]*1024, mi["Mapped:"]*1024
			m.PageFaults, m.MajorPageFaults = vm["pgfault"], vm["pgmajfault"]
		}
		return m
	}
	m.Usage = f.number("memory.current")
	m.MaxUsage = f.numberOptional("memory.peak")
	m.WorkingSet = m.Usage - min(m.Usage, st["inactive_file"])
	m.Swap = f.numberOptional("memory.swap.current")
	ev := f.keyedOptional("memory.events")
	m.EventsHigh, m.EventsMax, m.EventsOOM, m.EventsOOMKill = ev["high"], ev["max"], ev["oom"], ev["oom_kill"]
	return m
}

// spec reads the cgroup's limits.
func spec(f *files) deps.CgroupSpec {
	var s deps.CgroupSpec
	s.MemoryLimit = f.limitOptional("memory.max")
	s.MemoryReservation = f.limitOptional("memory.low")
	if s.MemoryReservation == deps.Unlimited {
		s.MemoryReservation = 0
	}
	s.SwapLimit = f.limitOptional("memory.swap.max")
	if max, ok := f.fieldsOptional("cpu.max"); ok && len(max) == 2 {
		s.CPUQuota = parseLimit(max[0])
		s.CPUPeriod, _ = strconv.ParseUint(max[1], 10, 64)
	}
	if w := f.numberOptional("cpu.weight"); w > 0 {
		// cAdvisor's conversion back to shares, the inverse of the
		// kubelet's shares → weight.
		s.CPUShares = 2 + ((w-1)*262142)/9999
	}
	if p := f.limitOptional("pids.max"); p != deps.Unlimited {
		s.PidsMax = p
	}
	return s
}

// io reads io.stat's lines ("MAJ:MIN rbytes=… wbytes=… rios=… wios=…").
func (r Reader) io(lines [][]string) []deps.DeviceIO {
	var out []deps.DeviceIO
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		majS, minS, ok := strings.Cut(l[0], ":")
		if !ok {
			continue
		}
		d := deps.DeviceIO{}
		d.Major, _ = strconv.ParseUint(majS, 10, 64)
		d.Minor, _ = strconv.ParseUint(minS, 10, 64)
		for _, kv := range l[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseUint(v, 10, 64)
			switch k {
			case "rbytes":
				d.ReadBytes = n
			case "wbytes":
				d.WriteBytes = n
			case "rios":
				d.Reads = n
			case "wios":
				d.Writes = n
			}
		}
		d.Device = r.deviceName(l[0])
		out = append(out, d)
	}
	return out
}

// deviceName is /dev/<DEVNAME> of block device "MAJ:MIN", "" if unknown.
func (r Reader) deviceName(majMin string) string {
	b, err := os.ReadFile(filepath.Join(r.sys(), "dev", "block", majMin, "uevent"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "DEVNAME="); ok {
			return "/dev/" + n
		}
	}
	return ""
}

// processes counts the cgroup's processes, threads (pids.current, else
// the processes' tasks), open files and sockets, and reads the first
// process's open-files limit. Processes that end meanwhile are skipped.
func (r Reader) processes(f *files) deps.ProcessStats {
	var ps deps.ProcessStats
	procs, _ := f.fieldsOptional("cgroup.procs")
	ps.Processes = uint64(len(procs))
	threads, haveThreads := f.numberOptional("pids.current"), f.exists("pids.current")
	for i, pid := range procs {
		dir := filepath.Join(r.proc(), pid)
		if !haveThreads {
			if t, err := os.ReadDir(filepath.Join(dir, "task")); err == nil {
				threads += uint64(len(t))
			}
		}
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err == nil {
			ps.FileDescriptors += uint64(len(fds))
			for _, fd := range fds {
				if l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
					ps.Sockets++
				}
			}
		}
		if i == 0 {
			ps.OpenFilesSoftLimit = openFilesSoft(filepath.Join(dir, "limits"))
		}
	}
	ps.Threads = threads
	return ps
}

// openFilesSoft reads the soft "Max open files" of a limits file; 0 when
// unknown or unlimited.
func openFilesSoft(p string) uint64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// psi reads the pressure files cpu<suffix>, memory<suffix> and
// io<suffix> (a v2 cgroup's cpu.pressure…, /proc/pressure's cpu…); nil
// when there are none (PSI off).
func psi(f *files, suffix string) *deps.CgroupPSI {
	var out deps.CgroupPSI
	any := false
	for _, x := range []struct {
		file string
		to   *deps.PSI
	}{{"cpu", &out.CPU}, {"memory", &out.Memory}, {"io", &out.IO}} {
		lines := f.keyedLines(x.file + suffix)
		for _, l := range lines {
			if len(l) == 0 {
				continue
			}
			any = true
			d := parsePSI(l[1:])
			switch l[0] {
			case "some":
				x.to.Some = d
			case "full":
				x.to.Full = d
			}
		}
	}
	if !any {
		return nil
	}
	return &out
}

// parsePSI parses "avg10=0.00 avg60=0.00 avg300=0.00 total=0".
func parsePSI(kvs []string) deps.PSIData {
	var d deps.PSIData
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "avg10":
			d.Avg10, _ = strconv.ParseFloat(v, 64)
		case "avg60":
			d.Avg60, _ = strconv.ParseFloat(v, 64)
		case "avg300":
			d.Avg300, _ = strconv.ParseFloat(v, 64)
		case "total":
			d.Total, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	return d
}

// parseLimit parses a limit: "max" is deps.Unlimited.
func parseLimit(s string) uint64 {
	if s == "max" {
		return deps.Unlimited
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return deps.Unlimited
	}
	return n
}

// files reads a cgroup's (or /proc's) files; err keeps the first failure
// of a file that must exist. With no dir it has no files (a v1
// hierarchy the host lacks).
type files struct {
	dir string
	err error
}

func (f *files) read(name string, must bool) ([]byte, bool) {
	if f.dir == "" {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		if must && f.err == nil {
			f.err = fmt.Errorf("read %s: %w", filepath.Join(f.dir, name), err)
		}
		return nil, false
	}
	return b, true
}

func (f files) exists(name string) bool {
	if f.dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(f.dir, name))
	return err == nil
}

// keyedLines splits a file into lines of fields; nil when absent.
func (f files) keyedLines(name string) [][]string {
	b, ok := f.read(name, false)
	if !ok {
		return nil
	}
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		out = append(out, strings.Fields(sc.Text()))
	}
	return out
}

// keyed reads "key value" lines into a map; a missing file is an error.
func (f *files) keyed(name string) map[string]uint64 {
	if !f.exists(name) {
		f.read(name, true)
		return map[string]uint64{}
	}
	return f.keyedOptional(name)
}

// keyedOptional reads "key value [unit]" lines into a map (empty when
// absent).
func (f files) keyedOptional(name string) map[string]uint64 {
	out := map[string]uint64{}
	for _, l := range f.keyedLines(name) {
		if len(l) >= 2 {
			n, err := strconv.ParseUint(l[1], 10, 64)
			if err == nil {
				out[l[0]] = n
			}
		}
	}
	return out
}

func (f files) fieldsOptional(name string) ([]string, bool) {
	b, ok := f.read(name, false)
	if !ok {
		return nil, false
	}
	return strings.Fields(string(b)), true
}

// number reads a file holding one number; a missing file is an error.
func (f *files) number(name string) uint64 {
	b, ok := f.read(name, true)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (f files) numberOptional(name string) uint64 {
	b, ok := f.read(name, false)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// limitOptional reads a limit file ("max" or a number); Unlimited when
// absent.
func (f files) limitOptional(name string) uint64 {
	b, ok := f.read(name, false)
	if !ok {
		return deps.Unlimited
	}
	return parseLimit(strings.TrimSpace(string(b)))
}
