package machine

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// A 2-socket host with 2 cores of 2 threads per socket, numbered as Intel
// numbers them (CPU n and n+4 are siblings), each socket its own NUMA
// node; CPU 3 is offline. core_id repeats across sockets, so the core is
// named by its lowest sibling.
func TestTopologyFromSysfs(t *testing.T) {
	files := procFiles()
	files["sys/devices/system/cpu/online"] = "0-2,4-7\n"
	for cpu := 0; cpu < 8; cpu++ {
		socket, core := (cpu%4)/2, cpu%2
		first := cpu % 4
		d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/", cpu)
		files[d+"topology/physical_package_id"] = fmt.Sprintf("%d\n", socket)
		files[d+"topology/core_id"] = fmt.Sprintf("%d\n", core)
		files[d+"topology/thread_siblings_list"] = fmt.Sprintf("%d,%d\n", first, first+4)
		files[d+fmt.Sprintf("node%d/cpulist", socket)] = "x"
	}
	files["sys/devices/system/node/node0/meminfo"] = "Node 0 MemTotal:       16380148 kB\nNode 0 MemFree:  100 kB\n"
	files["sys/devices/system/node/node1/meminfo"] = "Node 1 MemTotal:       8000000 kB\n"
	files["sys/devices/system/node/online"] = "0-1\n"
	got, err := newFixtureMachine(t, files).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []deps.CPUInfo{
		{ID: 0, CoreID: 0, SocketID: 0, NUMANodeID: 0},
		{ID: 1, CoreID: 1, SocketID: 0, NUMANodeID: 0},
		{ID: 2, CoreID: 2, SocketID: 1, NUMANodeID: 1},
		{ID: 4, CoreID: 0, SocketID: 0, NUMANodeID: 0},
		{ID: 5, CoreID: 1, SocketID: 0, NUMANodeID: 0},
		{ID: 6, CoreID: 2, SocketID: 1, NUMANodeID: 1},
		{ID: 7, CoreID: 3, SocketID: 1, NUMANodeID: 1},
	}
	if d := cmp.Diff(want, got.Topology); d != "" {
		t.Errorf("topology (-want +got):\n%s", d)
	}
	nodes := []deps.NUMANode{{ID: 0, MemoryBytes: 16380148 << 10}, {ID: 1, MemoryBytes: 8000000 << 10}}
	if d := cmp.Diff(nodes, got.NUMANodes); d != "" {
		t.Errorf("NUMA nodes (-want +got):\n%s", d)
	}
}

// This host's own topology: every online CPU placed once.
func TestTopologyOfThisHost(t *testing.T) {
	got, err := New(Options{}).topology()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, c := range got {
		if seen[c.ID] {
			t.Errorf("CPU %d listed twice", c.ID)
		}
		seen[c.ID] = true
	}
	nodes, err := New(Options{}).numaNodes()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("topology: %+v; NUMA nodes %+v", got, nodes)
}
