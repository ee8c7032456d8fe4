package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/cpuset"
)

func TestResourceManagerOptions(t *testing.T) {
	o := Defaults()
	o.Cgroups.SystemReserved = map[string]string{"cpu": "500m", "memory": "1Gi"}
	o.CPUManager.Policy, o.CPUManager.ReservedCPUs = "static", "0,2"
	o.MemoryManager.Policy, o.MemoryManager.ReservedMemory = "Static", []string{"0:memory=1Gi;1:memory=512Mi", "1:memory=512Mi"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// --reserved-cpus replaces the reserved cpu with its CPU count.
	cpu := o.NodeReserved()["cpu"]
	cc := o.CPUManagerConfig()
	if cpu.String() != "2" || cc.NumReservedCPUs != 2 || !cc.ReservedCPUs.Equals(cpuset.New(0, 2)) {
		t.Errorf("reserved cpu %s, config %+v", cpu.String(), cc)
	}
	if d := cmp.Diff(map[int]uint64{0: 1 << 30, 1: 1 << 30}, o.MemoryManagerConfig().Reserved); d != "" {
		t.Errorf("reserved memory (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.CPUManager.Policy = "dynamic" }, "cpu-manager-policy"},
		{func(o *Options) { o.CPUManager.ReservedCPUs = "0-" }, "reserved-cpus"},
		{func(o *Options) { o.CPUManager.PolicyOptions = map[string]string{"align-by-socket": "true"} }, "unknown option"},
		{func(o *Options) { o.MemoryManager.ReservedMemory = []string{"0:hugepages-2Mi=1Gi"} }, "only memory"},
		{func(o *Options) { o.MemoryManager.TopologyPolicy = "strict" }, "topology-manager-policy"},
		{func(o *Options) { o.MemoryManager.TopologyScope = "pod" }, "only container"},
	} {
		checkValidate(t, tc.edit, tc.want)
	}
}
