package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestAppArmorPodsRefusedOnAHostWithout: on the simulated host, which has
// no AppArmor, every pod asking for a profile (pod or container level,
// init container, deprecated annotation) is refused as the kubelet's
// AppArmor admission refuses it — Failed, reason AppArmor, the kubelet's
// message, nothing of it created in the runtime — while the pods asking
// for Unconfined run. On a host with AppArmor every one of them runs.
func TestAppArmorPodsRefusedOnAHostWithout(t *testing.T) {
	for _, hostAppArmor := range []bool{false, true} {
		h := harness.New(harness.Config{Seed: 61, AppArmor: hostAppArmor,
			Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }})
		t.Cleanup(h.Close)
		h.StartAgent()
		c := NewChecker(h)
		uids := map[string]types.UID{}
		for kind, name := range appArmorKinds {
			uids[name] = mustCreate(t, h, AppArmorPod(name, h.NodeName, kind)).UID
		}
		if err := RunChecked(h, c, 15*time.Second, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		type verdict struct {
			Phase           corev1.PodPhase
			Reason, Message string
			Created         bool
		}
		got, want := map[string]verdict{}, map[string]verdict{}
		for kind, name := range appArmorKinds {
			p, ok := APIPod(h, "default", name)
			if !ok {
				t.Fatalf("pod %s gone from the API", name)
			}
			created := len(Sandboxes(h, uids[name])) > 0
			got[name] = verdict{p.Status.Phase, p.Status.Reason, p.Status.Message, created}
			want[name] = verdict{Phase: corev1.PodRunning, Created: true}
			if kind == 2 { // its init container runs forever
				want[name] = verdict{Phase: corev1.PodPending, Created: true}
			}
			if !hostAppArmor && kind < 5 {
				want[name] = verdict{corev1.PodFailed, "AppArmor", "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host", false}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("host AppArmor %v: pods (-want +got):\n%s", hostAppArmor, diff)
		}
		reportViolations(t, c)
	}
}
