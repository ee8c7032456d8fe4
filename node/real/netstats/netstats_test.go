package netstats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     120       2    0    0    0     0          0         0      120       2    0    0    0     0       0          0
  eth0:    5000      40    1    0    0     0          0         0     7000      50    2    0    0     0       0          0
 net1:      10       1    0    0    0     0          0         0       20       1    0    0    0     0       0          0
`

func u(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

// statusRuntime answers PodSandboxStatus with a fixed verbose info.
type statusRuntime struct {
	cri.RuntimeService
	info string
}

func (r statusRuntime) PodSandboxStatus(context.Context, string, bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{Info: map[string]string{"info": r.info}}, nil
}

// The sandbox's process is found in the runtime's info; its net/dev gives
// every interface but lo, eth0 also as the default; a host-network
// sandbox reports none.
func TestPodNetwork(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "4242", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "4242", "net", "dev"), []byte(netDev), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(100, 0)
	r := Reader{Runtime: statusRuntime{info: `{"pid":4242,"config":{"linux":{"security_context":{"namespace_options":{"network":0}}}}}`}, ProcDir: proc, Now: func() time.Time { return at }}
	got, err := r.PodNetwork(context.Background(), "sb1")
	if err != nil {
		t.Fatal(err)
	}
	eth0 := &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: u(5000), RxErrors: u(1), TxBytes: u(7000), TxErrors: u(2)}
	want := &runtimeapi.NetworkUsage{Timestamp: at.UnixNano(), DefaultInterface: eth0, Interfaces: []*runtimeapi.NetworkInterfaceUsage{
		eth0, {Name: "net1", RxBytes: u(10), RxErrors: u(0), TxBytes: u(20), TxErrors: u(0)}}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("PodNetwork (-want +got):\n%s", diff)
	}

	host := Reader{Runtime: statusRuntime{info: `{"pid":4242,"config":{"linux":{"security_context":{"namespace_options":{"network":2}}}}}`}, ProcDir: proc}
	if got, err := host.PodNetwork(context.Background(), "sb2"); err != nil || got != nil {
		t.Errorf("host-network sandbox: %v, %v; want nil, nil", got, err)
	}
	gone := Reader{Runtime: statusRuntime{info: `{"pid":999999}`}, ProcDir: proc}
	if _, err := gone.PodNetwork(context.Background(), "sb3"); err == nil || !strings.Contains(err.Error(), "sb3") {
		t.Errorf("a sandbox whose process is gone: %v, want an error naming sb3", err)
	}
}

// Every interface's counters but lo's, packets and drops included, as
// the cAdvisor network series need them.
func TestParseInterfaces(t *testing.T) {
	got, err := ParseInterfaces([]byte(netDev))
	if err != nil {
		t.Fatal(err)
	}
	want := []deps.NetInterface{
		{Name: "eth0", RxBytes: 5000, RxPackets: 40, RxErrors: 1, TxBytes: 7000, TxPackets: 50, TxErrors: 2},
		{Name: "net1", RxBytes: 10, RxPackets: 1, TxBytes: 20, TxPackets: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("interfaces (-want +got):\n%s", diff)
	}
}
