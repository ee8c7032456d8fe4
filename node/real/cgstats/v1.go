package cgstats

import (
	"cmp"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// The v1 hierarchies the figures come from, by controller.
const (
	ctlCPU     = "cpu"
	ctlCPUAcct = "cpuacct"
	ctlMemory  = "memory"
	ctlBlkio   = "blkio"
	ctlPids    = "pids"
)

var v1Controllers = []string{ctlCPU, ctlCPUAcct, ctlMemory, ctlBlkio, ctlPids}

// userHZ is the unit of cpuacct.stat (USER_HZ, 100 on every Linux
// architecture runc supports; runc and cAdvisor take it as 100 too).
const userHZ = 100

// unlimitedAbove is where a v1 memory limit means none: the kernel's
// "unlimited" is PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB
// pages), and cAdvisor and the kubelet take any limit above 2^62 bytes
// for none.
const unlimitedAbove = uint64(1) << 62

// hierarchies maps each controller to the directory of its v1 hierarchy
// below Root: the directory of its own name, else one whose
// comma-separated name includes it ("cpu,cpuacct" without the usual
// symlinks).
func (r Reader) hierarchies() map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir(r.root())
	if err != nil {
		return out
	}
	for _, e := range ents {
		for _, ctl := range strings.Split(e.Name(), ",") {
			if slices.Contains(v1Controllers, ctl) && (out[ctl] == "" || ctl == e.Name()) {
				out[ctl] = filepath.Join(r.root(), e.Name())
			}
		}
	}
	return out
}

// cgroupV1 reads the cgroup ref names in each v1 hierarchy: its CPU from
// cpuacct and cpu, memory from memory, I/O from blkio, limits from cpu,
// memory and pids, processes from pids (else memory). The root's
// pressure is the machine's (/proc/pressure); every other cgroup's is
// all zero, as the kubelet reports it from cAdvisor on cgroup v1 (no
// cgroup there has pressure files).
func (r Reader) cgroupV1(ref cgroupRef) (deps.CgroupStats, error) {
	s := deps.CgroupStats{Path: path.Clean("/" + ref.path)}
	h := r.hierarchies()
	dirs := map[string]*files{}
	for _, ctl := range v1Controllers {
		if h[ctl] == "" {
			continue
		}
		p := ref.path
		if q, ok := ref.v1[ctl]; ok {
			p = q
		}
		dir := filepath.Join(h[ctl], p)
		st, err := os.Stat(dir)
		if err != nil {
			continue
		}
		// The cgroup's creation: its oldest directory, as cAdvisor
		// takes it.
		if s.Created.IsZero() || st.ModTime().Before(s.Created) {
			s.Created = st.ModTime()
		}
		dirs[ctl] = &files{dir: dir}
	}
	if dirs[ctlMemory] == nil && dirs[ctlCPUAcct] == nil {
		return deps.CgroupStats{}, fmt.Errorf("cgroup %s: in neither the memory nor the cpuacct hierarchy below %s", s.Path, r.root())
	}
	none := &files{}
	get := func(ctl string) *files {
		if f := dirs[ctl]; f != nil {
			return f
		}
		return none
	}
	s.CPU = cpuV1(get(ctlCPUAcct))
	if dirs[ctlMemory] != nil {
		s.Memory = memoryV1(dirs[ctlMemory])
	}
	s.Spec = specV1(get(ctlCPU), get(ctlMemory), get(ctlPids))
	if dirs[ctlBlkio] != nil {
		s.IO = r.blkio(dirs[ctlBlkio])
	}
	if s.Path != "/" {
		procs := dirs[ctlPids]
		if procs == nil {
			procs = get(ctlMemory)
		}
		s.Processes = r.processes(procs)
		s.PSI = &deps.CgroupPSI{}
	} else {
		s.PSI = psi(&files{dir: filepath.Join(r.proc(), "pressure")}, "")
		r.machine(&s)
	}
	var err error
	for _, ctl := range v1Controllers {
		if f := dirs[ctl]; f != nil && err == nil {
			err = f.err
		}
	}
	return s, err
}

// cpuV1 reads cpuacct.usage (nanoseconds) and cpuacct.stat's user and
// system time (in USER_HZ ticks).
func cpuV1(f *files) deps.CgroupCPU {
	if f.dir == "" {
		return deps.CgroupCPU{}
	}
	st := f.keyedOptional("cpuacct.stat")
	return deps.CgroupCPU{UsageNanos: f.number("cpuacct.usage"),
		UserNanos: st["user"] * 1e9 / userHZ, SystemNanos: st["system"] * 1e9 / userHZ}
}

// memoryV1 reads the memory hierarchy's accounting as cAdvisor does: the
// hierarchical (total_) cache, RSS, mapped file and swap where
// memory.use_hierarchy is on, the working set as the usage less
// total_inactive_file, the cgroup's own page faults; the OOM kills from
// memory.oom_control (v1 has no memory.events).
func memoryV1(f *files) deps.CgroupMemory {
	st := f.keyedOptional("memory.stat")
	pre := ""
	if f.numberOptional("memory.use_hierarchy") == 1 {
		pre = "total_"
	}
	m := deps.CgroupMemory{
		Usage: f.number("memory.usage_in_bytes"), MaxUsage: f.numberOptional("memory.max_usage_in_bytes"),
		Cache: st[pre+"cache"], RSS: st[pre+"rss"], MappedFile: st[pre+"mapped_file"], Swap: st[pre+"swap"],
		PageFaults: st["pgfault"], MajorPageFaults: st["pgmajfault"],
		Failcnt: f.numberOptional("memory.failcnt"),
	}
	m.WorkingSet = m.Usage - min(m.Usage, st["total_inactive_file"])
	m.EventsOOMKill = f.keyedOptional("memory.oom_control")["oom_kill"]
	return m
}

// specV1 reads the v1 limits: memory's (Unlimited above 2^62, the
// kernel's "unlimited"; the reservation is the soft limit, 0 when none),
// the CFS period and quota (-1: Unlimited), the shares, pids.max.
func specV1(cpu, mem, pids *files) deps.CgroupSpec {
	var s deps.CgroupSpec
	s.MemoryLimit = v1Limit(mem, "memory.limit_in_bytes")
	s.SwapLimit = v1Limit(mem, "memory.memsw.limit_in_bytes")
	if l := v1Limit(mem, "memory.soft_limit_in_bytes"); l != deps.Unlimited {
		s.MemoryReservation = l
	}
	s.CPUShares = cpu.numberOptional("cpu.shares")
	s.CPUPeriod = cpu.numberOptional("cpu.cfs_period_us")
	if q, ok := cpu.fieldsOptional("cpu.cfs_quota_us"); ok && len(q) == 1 {
		s.CPUQuota = deps.Unlimited
		if n, err := strconv.ParseUint(q[0], 10, 64); err == nil {
			s.CPUQuota = n
		}
	}
	if p := pids.limitOptional("pids.max"); p != deps.Unlimited {
		s.PidsMax = p
	}
	return s
}

// v1Limit reads a v1 memory limit: Unlimited when absent or above 2^62.
func v1Limit(f *files, name string) uint64 {
	l := f.limitOptional(name)
	if l > unlimitedAbove {
		return deps.Unlimited
	}
	return l
}

// blkioFiles are the blkio hierarchy's bytes and operations files, in
// the order runc reads them: BFQ's, CFQ's, then the throttling layer's
// recursive and own counters (all a kernel with blk-mq and no BFQ has).
var blkioFiles = [][2]string{
	{"blkio.bfq.io_service_bytes_recursive", "blkio.bfq.io_serviced_recursive"},
	{"blkio.io_service_bytes_recursive", "blkio.io_serviced_recursive"},
	{"blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_serviced_recursive"},
	{"blkio.throttle.io_service_bytes", "blkio.throttle.io_serviced"},
}

// blkio reads the first pair of blkio files the hierarchy has ("MAJ:MIN
// Read|Write|Sync|Async|Discard|Total N" lines), by device in device
// order.
func (r Reader) blkio(f *files) []deps.DeviceIO {
	for _, pair := range blkioFiles {
		if !f.exists(pair[1]) {
			continue
		}
		byDev := map[string]*deps.DeviceIO{}
		r.blkioFile(f, pair[0], byDev, func(d *deps.DeviceIO) (*uint64, *uint64) { return &d.ReadBytes, &d.WriteBytes })
		r.blkioFile(f, pair[1], byDev, func(d *deps.DeviceIO) (*uint64, *uint64) { return &d.Reads, &d.Writes })
		out := make([]deps.DeviceIO, 0, len(byDev))
		for _, d := range byDev {
			out = append(out, *d)
		}
		slices.SortFunc(out, func(a, b deps.DeviceIO) int {
			return cmp.Or(cmp.Compare(a.Major, b.Major), cmp.Compare(a.Minor, b.Minor))
		})
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return nil
}

// blkioFile adds one blkio file's Read and Write counts to byDev, into
// the fields fields names.
func (r Reader) blkioFile(f *files, name string, byDev map[string]*deps.DeviceIO, fields func(*deps.DeviceIO) (read, write *uint64)) {
	for _, l := range f.keyedLines(name) {
		if len(l) != 3 || (l[1] != "Read" && l[1] != "Write") {
			continue // "Total N", Sync, Async, Discard
		}
		majS, minS, ok := strings.Cut(l[0], ":")
		if !ok {
			continue
		}
		d := byDev[l[0]]
		if d == nil {
			d = &deps.DeviceIO{Device: r.deviceName(l[0])}
			d.Major, _ = strconv.ParseUint(majS, 10, 64)
			d.Minor, _ = strconv.ParseUint(minS, 10, 64)
			byDev[l[0]] = d
		}
		n, _ := strconv.ParseUint(l[2], 10, 64)
		read, write := fields(d)
		if l[1] == "Read" {
			*read = n
		} else {
			*write = n
		}
	}
}
