package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestAPIRequestsPerPod counts the whole agent's apiserver requests: pods
// started and deleted cost status patches, deletes and events only (no
// read before a write, no services listed: they are watched), and an idle node of running pods sends only its
// lease renewals and the periodic node status, whatever the pod count.
func TestAPIRequestsPerPod(t *testing.T) {
	const n = 30
	h := harness.New(harness.Config{Seed: 18})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	h.StartAgent()
	runFor(t, h, time.Second)
	before := h.API.Requests()
	for i := range n {
		mustCreate(t, h, NewPod(fmt.Sprintf("web-%02d", i), h.NodeName))
	}
	runUntil(t, h, "all pods Running and Ready", time.Minute, func() bool {
		for i := range n {
			if !PodIs(h, "default", fmt.Sprintf("web-%02d", i), corev1.PodRunning, true) {
				return false
			}
		}
		return true
	})
	started := since(before, h.API.Requests())
	for _, verb := range []string{apiserver.VerbGet, apiserver.VerbUpdate} {
		if got := started[apiserver.Request{Verb: verb, Resource: "pods"}]; got != 0 {
			t.Errorf("%d pod %s requests to start %d pods, want none: %v", got, verb, n, started)
		}
	}
	if got := started[apiserver.Request{Verb: apiserver.VerbPatchStatus, Resource: "pods"}]; got > 2*n {
		t.Errorf("%d status patches to start %d pods, want at most 2 each", got, n)
	}
	// The service environment comes from the watched service cache.
	for r, got := range started {
		if r.Resource == "services" {
			t.Errorf("%d %s requests to start %d pods, want none", got, r, n)
		}
	}

	// Idle: five minutes with nothing happening.
	runFor(t, h, time.Minute)
	before = h.API.Requests()
	runFor(t, h, 5*time.Minute)
	idle := since(before, h.API.Requests())
	nodeStatus := apiserver.Request{Verb: apiserver.VerbPatchStatus, Resource: "nodes"}
	if idle[nodeStatus] > 1 {
		t.Errorf("%d node status patches in 5 idle minutes, want at most the one report", idle[nodeStatus])
	}
	delete(idle, nodeStatus)
	want := map[apiserver.Request]int{{Verb: apiserver.VerbUpdate, Resource: "leases"}: 30}
	if diff := cmp.Diff(want, idle); diff != "" {
		t.Errorf("requests of an idle node over 5 minutes (-want +got):\n%s", diff)
	}

	// Deletes: one delete per pod and one final status patch, plus, for a
	// pod whose kill takes long enough, the patch that reports the
	// delete's generation as observed before it (upstream writes it too:
	// its status manager stamps the generation of the pod it is given).
	before = h.API.Requests()
	for i := range n {
		if err := h.API.User().DeletePodGracefully("default", fmt.Sprintf("web-%02d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, h, "all pods gone", 2*time.Minute, func() bool { return len(h.API.User().ListAllPods()) == 0 })
	deleted := since(before, h.API.Requests())
	if got := deleted[apiserver.Request{Verb: apiserver.VerbDelete, Resource: "pods"}]; got != n {
		t.Errorf("%d pod deletes to delete %d pods, want one each: %v", got, n, deleted)
	}
	if got := deleted[apiserver.Request{Verb: apiserver.VerbPatchStatus, Resource: "pods"}]; got < n || got > 2*n {
		t.Errorf("%d status patches to delete %d pods, want one or two each: %v", got, n, deleted)
	}
	if got := deleted[apiserver.Request{Verb: apiserver.VerbGet, Resource: "pods"}]; got != 0 {
		t.Errorf("%d pod reads to delete %d pods, want none", got, n)
	}
	c.Check()
	reportViolations(t, c)
}

// runFor runs the simulation for d.
func runFor(t *testing.T, h *harness.Harness, d time.Duration) {
	t.Helper()
	if err := h.K.RunFor(d); err != nil {
		t.Fatal(err)
	}
}

// since is after minus before, by request kind.
func since(before, after map[apiserver.Request]int) map[apiserver.Request]int {
	out := map[apiserver.Request]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
