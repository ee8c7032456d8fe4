package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// cpuSets is each running container's cpus and mems, by name.
func cpuSets(h *harness.Harness, p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range PodContainers(h, p.UID) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			res, _ := h.Runtime.TrueResources(c.ID)
			out[c.Name] = res.GetCpusetCpus() + " mems " + res.GetCpusetMems()
		}
	}
	return out
}

// numaPod is a Guaranteed pod whose app asks for cpus CPUs and memory.
func numaPod(name, node string, cpus int, memory string) *corev1.Pod {
	n := fmt.Sprint(cpus)
	return NewPod(name, node, Resources("app", n, memory, n, memory))
}

// Under each topology manager policy on the 2-socket, 4-NUMA-node
// machine (4 CPUs and 2 GiB per node, CPU 0 reserved): a pod asking for
// 4 CPUs and 1 GiB fits one node, so it gets node 1's CPUs (node 0 lost
// one to the reservation) and memory; a pod asking for 6 CPUs needs two
// nodes for its CPUs but one for its memory, which no policy but
// best-effort accepts (TopologyAffinityError).
func TestTopologyManagerAlignsCPUsAndMemory(t *testing.T) {
	for _, tc := range []struct {
		policy string
		wide   string // the 6-CPU pod: its cpuset, or its refusal
	}{
		// Every placement is non-preferred; the merge keeps the lowest of
		// the two-node ones, {0,1}: node 0's free CPUs, then the packed rest.
		{topologymanager.PolicyBestEffort, "1,4-5,8-9,12 mems 0-1"},
		{topologymanager.PolicyRestricted, "TopologyAffinityError"},
		{topologymanager.PolicySingleNUMANode, "TopologyAffinityError"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			h := startStaticCPUs(t, 11, NUMANode(tc.policy))
			c := NewChecker(h)
			fits := mustCreate(t, h, numaPod("fits", h.NodeName, 4, "1Gi"))
			wide := mustCreate(t, h, numaPod("wide", h.NodeName, 6, "1Gi"))
			if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(map[string]string{"app": "2-3,10-11 mems 1"}, cpuSets(h, fits)); d != "" {
				t.Errorf("pod fits (-want +got):\n%s", d)
			}
			got := cpuSets(h, wide)["app"]
			if p, _ := APIPod(h, "default", "wide"); p.Status.Phase == corev1.PodFailed {
				got = p.Status.Reason
				if p.Status.Message != "Pod was rejected: "+topologymanager.MessageTopologyAffinityError {
					t.Errorf("refusal message %q", p.Status.Message)
				}
			}
			if got != tc.wide {
				t.Errorf("pod wide: %q, want %q", got, tc.wide)
			}
			if v := c.Violations(); len(v) != 0 {
				t.Errorf("violations: %v", v)
			}
		})
	}
}

// The numa-aligned checker catches memory spread over two nodes under
// single-numa-node.
func TestNUMAInvariantCatchesViolations(t *testing.T) {
	h := startStaticCPUs(t, 13, NUMANode(topologymanager.PolicySingleNUMANode))
	c := NewChecker(h)
	p := mustCreate(t, h, numaPod("p", h.NodeName, 2, "512Mi"))
	if err := RunChecked(h, c, 5*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations before the fault: %v", v)
	}
	id := PodContainers(h, p.UID)[0].ID
	if err := h.Runtime.UpdateContainerResources(context.Background(), id, &runtimeapi.ContainerResources{
		Linux: &runtimeapi.LinuxContainerResources{CpusetMems: "0-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	v := c.Violations()
	if len(v) != 1 || v[0].Invariant != "numa-aligned" {
		t.Errorf("violations %v, want one numa-aligned", v)
	}
}
