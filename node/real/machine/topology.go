package machine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// topology reads where every online CPU sits from
// <sys>/devices/system/cpu: its package (topology/physical_package_id),
// its core (the lowest CPU of topology/thread_siblings_list, unique on
// the node as core_id is not) and its NUMA node (the cpuN/nodeM link; 0
// on a kernel without NUMA). No online list (not Linux) is no topology.
func (m *Machine) topology() ([]deps.CPUInfo, error) {
	dir := filepath.Join(m.opts.SysDir, "devices/system/cpu")
	online, err := os.ReadFile(filepath.Join(dir, "online"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read online CPUs: %w", err)
	}
	cpus, err := cpuset.Parse(strings.TrimSpace(string(online)))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, "online"), err)
	}
	var out []deps.CPUInfo
	for _, id := range cpus.List() {
		info, err := m.cpuInfo(dir, id)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// cpuInfo reads one CPU's place.
func (m *Machine) cpuInfo(dir string, id int) (deps.CPUInfo, error) {
	cpuDir := filepath.Join(dir, "cpu"+strconv.Itoa(id))
	info := deps.CPUInfo{ID: id, CoreID: id}
	pkg, err := os.ReadFile(filepath.Join(cpuDir, "topology/physical_package_id"))
	if err != nil {
		return info, fmt.Errorf("read the package of CPU %d: %w", id, err)
	}
	if info.SocketID, err = strconv.Atoi(strings.TrimSpace(string(pkg))); err != nil {
		return info, fmt.Errorf("parse the package of CPU %d: %w", id, err)
	}
	siblings, err := os.ReadFile(filepath.Join(cpuDir, "topology/thread_siblings_list"))
	if err != nil {
		return info, fmt.Errorf("read the thread siblings of CPU %d: %w", id, err)
	}
	set, err := cpuset.Parse(strings.TrimSpace(string(siblings)))
	if err != nil {
		return info, fmt.Errorf("parse the thread siblings of CPU %d: %w", id, err)
	}
	if list := set.List(); len(list) > 0 {
		info.CoreID = list[0]
	}
	entries, err := os.ReadDir(cpuDir)
	if err != nil {
		return info, fmt.Errorf("read %s: %w", cpuDir, err)
	}
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "node"); ok {
			if v, err := strconv.Atoi(n); err == nil {
				info.NUMANodeID = v
				break
			}
		}
	}
	return info, nil
}

// numaNodes reads each NUMA node's MemTotal from
// <sys>/devices/system/node/node<N>/meminfo; no such directory (a kernel
// without NUMA) is no node.
func (m *Machine) numaNodes() ([]deps.NUMANode, error) {
	dir := filepath.Join(m.opts.SysDir, "devices/system/node")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read NUMA nodes: %w", err)
	}
	var out []deps.NUMANode
	for _, e := range entries {
		id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node"))
		if err != nil || !strings.HasPrefix(e.Name(), "node") {
			continue
		}
		file := filepath.Join(dir, e.Name(), "meminfo")
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		n := deps.NUMANode{ID: id}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line) // Node 0 MemTotal: 16380148 kB
			if len(f) >= 4 && f[2] == "MemTotal:" {
				kb, err := strconv.ParseUint(f[3], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("parse %s: %w", file, err)
				}
				n.MemoryBytes = kb << 10
			}
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b deps.NUMANode) int { return a.ID - b.ID })
	return out, nil
}
