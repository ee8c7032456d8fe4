package cpumanager

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// uniform is a machine of sockets × NUMA nodes per socket × cores per
// node × threads per core, numbered as Linux numbers x86 threads: the
// first thread of every core, then the second ones (CPU n and n+cores are
// siblings).
func uniform(sockets, numaPerSocket, coresPerNUMA, threads int) []deps.CPUInfo {
	cores := sockets * numaPerSocket * coresPerNUMA
	var out []deps.CPUInfo
	for t := 0; t < threads; t++ {
		for core := 0; core < cores; core++ {
			numa := core / coresPerNUMA
			out = append(out, deps.CPUInfo{ID: t*cores + core, CoreID: core, SocketID: numa / numaPerSocket, NUMANodeID: numa})
		}
	}
	return out
}

func mustTopo(t *testing.T, cpus []deps.CPUInfo) *Topology {
	t.Helper()
	topo, err := NewTopology(cpus)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestTakeByTopology(t *testing.T) {
	// 2 sockets, 1 NUMA node each, 2 cores of 2 threads per socket:
	// socket 0 = cores 0,1 = CPUs 0,4,1,5; socket 1 = CPUs 2,6,3,7.
	dual := uniform(2, 1, 2, 2)
	// 2 sockets of 2 NUMA nodes of 2 cores of 2 threads (16 CPUs): node n
	// = cores 2n, 2n+1 = CPUs 2n, 2n+1, 2n+8, 2n+9.
	big := uniform(2, 2, 2, 2)
	for _, tc := range []struct {
		name  string
		cpus  []deps.CPUInfo
		avail string
		n     int
		want  string
		err   string
	}{
		{"nothing", dual, "0-7", 0, "", ""},
		{"one thread: the lowest of the fullest core", dual, "1-7", 1, "4", ""},
		{"a whole core first", dual, "0-7", 2, "0,4", ""},
		{"a whole socket", dual, "0-7", 4, "0-1,4-5", ""},
		{"the socket with fewest free CPUs first", dual, "1-7", 4, "2-3,6-7", ""},
		{"a socket and a core", dual, "0-7", 6, "0-2,4-6", ""},
		{"a whole core, then a thread of the fullest socket left", dual, "1-3,5-7", 3, "1-2,5", ""},
		{"the fullest socket first: a core, then the partial core's thread", dual, "0-2,4-7", 3, "2,6-7", ""},
		{"a whole NUMA node", big, "0-15", 4, "0-1,8-9", ""},
		{"a whole socket of two nodes", big, "0-15", 8, "0-3,8-11", ""},
		{"a core of the fullest node, others left whole", big, "1-15", 2, "1,9", ""},
		{"too many", dual, "0-3", 5, "", "not enough cpus available to satisfy request: requested=5, available=4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			avail := mustParse(t, tc.avail)
			got, err := TakeByTopology(mustTopo(t, tc.cpus), avail, tc.n)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got.String()); d != "" {
				t.Errorf("TakeByTopology(%s, %d) (-want +got):\n%s", tc.avail, tc.n, d)
			}
		})
	}
}

func mustParse(t *testing.T, s string) cpuset.CPUSet {
	t.Helper()
	c, err := cpuset.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
