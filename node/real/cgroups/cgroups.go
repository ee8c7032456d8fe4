// Package cgroups is the real deps.Cgroups: pod and QoS cgroups created,
// limited, listed and removed with github.com/opencontainers/cgroups (the
// library runc uses), under the cgroupfs driver on cgroup v1 or v2, or
// the systemd driver (which needs systemd running as PID 1).
package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	ocgroups "github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// unifiedRoot is where cgroup v2 is mounted.
const unifiedRoot = "/sys/fs/cgroup"

// listControllers are the v1 hierarchies List looks in: a pod cgroup in
// any of them is one to clean up.
var listControllers = []string{"cpu", "memory", "pids", "cpuset", "hugetlb"}

// Cgroups implements deps.Cgroups on the host.
type Cgroups struct {
	systemd bool
	v2      bool
	// unified is where the v2 hierarchy is mounted (unifiedRoot).
	unified string
	// hugePageSizes are the page sizes the kernel offers ("2MB", …).
	hugePageSizes []string
}

var _ deps.Cgroups = (*Cgroups)(nil)

// New returns the host's cgroups under the systemd driver (systemd true)
// or cgroupfs. Huge page limits are set only where the hugetlb
// controller is available.
func New(systemd bool) *Cgroups {
	c := &Cgroups{systemd: systemd, v2: ocgroups.IsCgroup2UnifiedMode(), unified: unifiedRoot}
	if c.hugetlbAvailable() {
		c.hugePageSizes = ocgroups.HugePageSizes()
	}
	return c
}

// hugetlbAvailable reports whether the hugetlb controller is mounted (v1)
// or enabled at the root (v2).
func (c *Cgroups) hugetlbAvailable() bool {
	if !c.v2 {
		_, err := ocgroups.FindCgroupMountpoint("", "hugetlb")
		return err == nil
	}
	b, err := os.ReadFile(filepath.Join(c.unified, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(b)), "hugetlb")
}

// SystemdRunning reports whether systemd runs as init (the systemd
// driver's requirement).
func SystemdRunning() bool { return systemd.IsRunningSystemd() }

// UnifiedMode reports whether the host runs the unified (v2) hierarchy.
func UnifiedMode() bool { return ocgroups.IsCgroup2UnifiedMode() }

// V2 reports whether the host runs the unified (v2) hierarchy.
func (c *Cgroups) V2() bool { return c.v2 }

// config describes the cgroup at p for the library.
func (c *Cgroups) config(p string, r *ocgroups.Resources) *ocgroups.Cgroup {
	cg := &ocgroups.Cgroup{Systemd: c.systemd, Resources: r}
	if !c.systemd {
		cg.Path = p
		return cg
	}
	dir, base := path.Split(p)
	if dir == "/" {
		dir = "-.slice"
	} else {
		dir = path.Base(dir)
	}
	cg.Parent, cg.Name = dir, base
	return cg
}

// Ensure implements deps.Cgroups: the cgroup is created in every
// controller (Apply with no process), then its limits are written.
func (c *Cgroups) Ensure(p string, r deps.CgroupResources) error {
	res := c.resources(r)
	m, err := manager.New(c.config(p, res))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", p, err)
	}
	if err := m.Apply(-1); err != nil {
		return fmt.Errorf("create cgroup %s: %w", p, err)
	}
	if err := m.Set(res); err != nil {
		return fmt.Errorf("set the limits of cgroup %s: %w", p, err)
	}
	return nil
}

// Remove implements deps.Cgroups.
func (c *Cgroups) Remove(p string) error {
	m, err := manager.New(c.config(p, &ocgroups.Resources{}))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", p, err)
	}
	if err := m.Destroy(); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", p, err)
	}
	return nil
}

// List implements deps.Cgroups: the child directories of p in any
// hierarchy.
func (c *Cgroups) List(p string) ([]string, error) {
	var roots []string
	if c.v2 {
		roots = []string{c.unified}
	} else {
		for _, ctl := range listControllers {
			if mnt, err := ocgroups.FindCgroupMountpoint("", ctl); err == nil && !slices.Contains(roots, mnt) {
				roots = append(roots, mnt)
			}
		}
	}
	var out []string
	for _, root := range roots {
		entries, err := os.ReadDir(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list cgroup %s: %w", p, err)
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(out, e.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// resources converts limits to the library's, as upstream's cgroup
// manager does: cpu.shares become cpu.weight on v2; hugetlb limits only
// for the page sizes the kernel has.
func (c *Cgroups) resources(r deps.CgroupResources) *ocgroups.Resources {
	res := &ocgroups.Resources{SkipDevices: true, SkipFreezeOnSet: true}
	if r.Memory != nil {
		res.Memory = *r.Memory
	}
	if r.CPUShares != nil {
		if c.v2 {
			res.CpuWeight = CPUWeight(*r.CPUShares)
		} else {
			res.CpuShares = *r.CPUShares
		}
	}
	if r.CPUQuota != nil {
		res.CpuQuota = *r.CPUQuota
	}
	if r.CPUPeriod != nil {
		res.CpuPeriod = *r.CPUPeriod
	}
	for _, size := range c.hugePageSizes {
		bytes, ok := pageSizeBytes(size)
		if !ok {
			continue
		}
		if limit, ok := r.HugePageLimits[bytes]; ok {
			res.HugetlbLimit = append(res.HugetlbLimit, &ocgroups.HugepageLimit{Pagesize: size, Limit: uint64(limit)})
		}
	}
	return res
}

// CPUWeight converts cpu.shares in [2, 262144] to cpu.weight in [1, 10000].
func CPUWeight(shares uint64) uint64 {
	if shares >= 262144 {
		return 10000
	}
	return 1 + (max(shares, 2)-2)*9999/262142
}

// pageSizeBytes parses a kernel page size name ("2MB", "1GB", "64KB").
func pageSizeBytes(s string) (int64, bool) {
	units := []string{"KB", "MB", "GB", "TB", "PB"}
	for i, u := range units {
		if n, ok := strings.CutSuffix(s, u); ok {
			var v int64
			if _, err := fmt.Sscanf(n, "%d", &v); err != nil || v <= 0 {
				return 0, false
			}
			return v << (10 * (i + 1)), true
		}
	}
	return 0, false
}
