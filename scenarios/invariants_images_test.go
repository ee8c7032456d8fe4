package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestPullBackoffInvariantCatchesEarlyRetries pulls by hand (no agent):
// retries after 10 s and then 20 s are fine, one 15 s after the second
// failure is early; other credentials at the same instant continue an
// attempt; a success ends the count.
func TestPullBackoffInvariantCatchesEarlyRetries(t *testing.T) {
	h := harness.New(harness.Config{Seed: 48})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	const image = "example.com/app:v1"
	if err := h.Runtime.FailPull(image, "503", 5); err != nil {
		t.Fatal(err)
	}
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "uid-p"}}
	pull := func(user string) {
		t.Helper()
		var auth *runtimeapi.AuthConfig
		if user != "" {
			auth = &runtimeapi.AuthConfig{Username: user, Password: "pw"}
		}
		_, _ = h.Runtime.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: image}, auth, sb)
		c.Check()
	}
	wait := func(d time.Duration) {
		t.Helper()
		if err := h.K.RunFor(d); err != nil {
			t.Fatal(err)
		}
	}
	pull("a")
	pull("b") // the same attempt, next credential: failure #1
	wait(10 * time.Second)
	pull("") // failure #2
	wait(20 * time.Second)
	pull("") // failure #3: 40 s now
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations of legal retries: %v", v)
	}
	wait(15 * time.Second)
	pull("")
	v := c.Violations()
	if len(v) != 1 || v[0].Invariant != "pull-backoff" || !strings.Contains(v[0].Detail, "15s after its failure #3, inside its 40s back-off") {
		t.Fatalf("violations %v; want one pull-backoff for the retry 15 s into 40 s", v)
	}
	wait(80 * time.Second)
	pull("") // the fifth failure is the last injected one: this one works
	pull("") // after a success no back-off applies
	if v := c.Violations(); len(v) != 1 {
		t.Errorf("violations after a success: %v", v[1:])
	}
}
