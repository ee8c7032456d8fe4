package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestFQDNTooLongNeverGetsASandbox: with setHostnameAsFQDN, a pod whose
// hostname.subdomain.namespace.svc.cluster.local is 65 bytes never gets a
// sandbox: it stays Pending, its container in ContainerCreating, with a
// FailedCreatePodSandBox event in the kubelet's words, repeated as the
// worker retries; a pod whose FQDN is exactly 64 bytes runs with it as
// hostname.
func TestFQDNTooLongNeverGetsASandbox(t *testing.T) {
	h := harness.New(harness.Config{Seed: 67, Agent: agent.Config{Node: podspec.NodeInfo{ClusterDomain: "cluster.local"}},
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }})
	t.Cleanup(h.Close)
	h.StartAgent()
	c := NewChecker(h)
	long := mustCreate(t, h, FQDNPod("long", h.NodeName, 37))
	fits := mustCreate(t, h, FQDNPod("fits", h.NodeName, 36))
	if err := RunChecked(h, c, 60*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	fqdn := strings.Repeat("h", 37) + ".t.default.svc.cluster.local"
	want := "Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN " + fqdn +
		" is too long (64 characters is the max, 65 characters requested)"
	count := 0
	for _, e := range h.API.User().Events() {
		if e.Object.UID == long.UID && e.Reason == "FailedCreatePodSandBox" {
			if e.Message != want || e.Type != corev1.EventTypeWarning {
				t.Errorf("event %s %q, want Warning %q", e.Type, e.Message, want)
			}
			count += e.Count
		}
	}
	if count < 2 {
		t.Errorf("FailedCreatePodSandBox recorded %d times in 60 s, want it at every retry", count)
	}
	p, _ := APIPod(h, "default", "long")
	type view struct {
		Phase     corev1.PodPhase
		Waiting   string
		Sandboxes int
	}
	got := view{p.Status.Phase, "", len(Sandboxes(h, long.UID))}
	if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Waiting != nil {
		got.Waiting = cs[0].State.Waiting.Reason
	}
	if diff := cmp.Diff(view{corev1.PodPending, "ContainerCreating", 0}, got); diff != "" {
		t.Errorf("pod long (-want +got):\n%s", diff)
	}
	sbs := Sandboxes(h, fits.UID)
	if f, _ := APIPod(h, "default", "fits"); f.Status.Phase != corev1.PodRunning || len(sbs) != 1 {
		t.Errorf("pod fits: phase %s, %d sandboxes; want Running, 1", f.Status.Phase, len(sbs))
	}
	reportViolations(t, c)
}
