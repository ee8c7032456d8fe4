// Package netstats reads a pod's network usage on a real node where the
// runtime's stats carry none (containerd 1.6 without sandbox stats): the
// sandbox's process from the runtime's verbose PodSandboxStatus (the "pid"
// of containerd's "info" JSON) and the counters of its network namespace
// in /proc/<pid>/net/dev. A host-network sandbox has no network of its
// own and reports none.
//
// This is real-world code (node/real): it reads /proc on the host.
package netstats

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// DefaultInterface is the pod's interface the Summary reports inline, as
// the kubelet does.
const DefaultInterface = stats.DefaultInterface

// Reader reads pod sandboxes' network usage.
type Reader struct {
	// Runtime answers PodSandboxStatus (verbose).
	Runtime cri.RuntimeService
	// ProcDir is where /proc is mounted (default /proc).
	ProcDir string
	// Now stamps the usage (default time.Now).
	Now func() time.Time
}

// info is the part of containerd's verbose sandbox info that matters.
type info struct {
	Pid    int `json:"pid"`
	Config struct {
		Linux struct {
			SecurityContext struct {
				NamespaceOptions struct {
					Network int32 `json:"network"` // a runtimeapi.NamespaceMode
				} `json:"namespace_options"`
			} `json:"security_context"`
		} `json:"linux"`
	} `json:"config"`
}

// PodNetwork returns the network usage of sandbox sandboxID, nil for a
// host-network sandbox.
func (r Reader) PodNetwork(ctx context.Context, sandboxID string) (*runtimeapi.NetworkUsage, error) {
	ifaces, err := r.PodInterfaces(ctx, sandboxID)
	if err != nil || ifaces == nil {
		return nil, err
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	return stats.NetworkUsage(ifaces, now().UnixNano()), nil
}

// PodInterfaces returns the counters of every interface of sandbox
// sandboxID's network namespace but the loopback, nil for a host-network
// sandbox.
func (r Reader) PodInterfaces(ctx context.Context, sandboxID string) ([]deps.NetInterface, error) {
	resp, err := r.Runtime.PodSandboxStatus(ctx, sandboxID, true)
	if err != nil {
		return nil, fmt.Errorf("network of pod sandbox %s: %w", sandboxID, err)
	}
	raw, ok := resp.GetInfo()["info"]
	if !ok {
		return nil, fmt.Errorf("network of pod sandbox %s: the runtime's verbose status has no info", sandboxID)
	}
	var in info
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, fmt.Errorf("network of pod sandbox %s: decode the runtime's info: %w", sandboxID, err)
	}
	if in.Config.Linux.SecurityContext.NamespaceOptions.Network == int32(runtimeapi.NamespaceMode_NODE) {
		return nil, nil
	}
	if in.Pid <= 0 {
		return nil, fmt.Errorf("network of pod sandbox %s: the runtime's info names no process", sandboxID)
	}
	proc := r.ProcDir
	if proc == "" {
		proc = "/proc"
	}
	data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(in.Pid), "net", "dev"))
	if err != nil {
		return nil, fmt.Errorf("network of pod sandbox %s: %w", sandboxID, err)
	}
	ifaces, err := ParseInterfaces(data)
	if err != nil {
		return nil, fmt.Errorf("network of pod sandbox %s: %w", sandboxID, err)
	}
	if ifaces == nil {
		ifaces = []deps.NetInterface{}
	}
	return ifaces, nil
}

// ParseNetDev turns /proc/<pid>/net/dev into a NetworkUsage at ts: every
// interface but the loopback, eth0 also as the default interface.
func ParseNetDev(data []byte, ts int64) (*runtimeapi.NetworkUsage, error) {
	ifaces, err := ParseInterfaces(data)
	if err != nil {
		return nil, err
	}
	return stats.NetworkUsage(ifaces, ts), nil
}

// ParseInterfaces parses /proc/<pid>/net/dev: every interface's counters
// but the loopback's.
func ParseInterfaces(data []byte) ([]deps.NetInterface, error) {
	var out []deps.NetInterface
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 0; sc.Scan(); line++ {
		if line < 2 {
			continue // two header lines
		}
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("net/dev line %d: no interface name: %q", line+1, sc.Text())
		}
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, fmt.Errorf("net/dev line %d: %d fields, want 16", line+1, len(f))
		}
		if name == "lo" {
			continue
		}
		var v [8]uint64
		// rx bytes, packets, errs, drop; tx bytes, packets, errs, drop
		for i, col := range []int{0, 1, 2, 3, 8, 9, 10, 11} {
			n, err := strconv.ParseUint(f[col], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("net/dev line %d: %w", line+1, err)
			}
			v[i] = n
		}
		out = append(out, deps.NetInterface{Name: name,
			RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[4], TxPackets: v[5], TxErrors: v[6], TxDropped: v[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
