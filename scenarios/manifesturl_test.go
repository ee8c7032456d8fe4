package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

const manifestURL = "http://manifests.example/sim-node"

// TestManifestURLSource: the whole agent with --manifest-url and a header:
// the served PodList's pods run with their mirror pods (config.source
// http); an unreachable server or a broken body changes nothing (and is
// told once as a node event); a body without one pod stops it, its
// mirror deleted; polls come every 20 s.
func TestManifestURLSource(t *testing.T) {
	cfg := harness.Config{Seed: 21, ManifestURL: manifestURL,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }}
	cfg.Agent.ManifestURLHeader = map[string][]string{"Authorization": {"Bearer sim"}}
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	c := NewChecker(h)
	list := func(names ...string) []byte {
		s := "apiVersion: v1\nkind: PodList\nitems:\n"
		for _, n := range names {
			s += "- metadata: {name: " + n + ", namespace: kube-system}\n  spec: {containers: [{name: app, image: busybox:latest}]}\n"
		}
		return []byte(s)
	}
	h.ServeManifest(200, list("etcd", "dns"))
	h.StartAgent()
	mirror := func(n string) (*corev1.Pod, bool) { return APIPod(h, "kube-system", n+"-"+h.NodeName) }
	if err := h.K.RunUntil(func() bool {
		a, okA := mirror("etcd")
		b, okB := mirror("dns")
		return okA && okB && a.Status.Phase == corev1.PodRunning && b.Status.Phase == corev1.PodRunning
	}, 2*time.Minute); err != nil {
		t.Fatalf("waiting for both URL pods Running with mirrors: %v", err)
	}
	if m, _ := mirror("etcd"); m.Annotations[podsource.AnnotationConfigSource] != podsource.SourceHTTP {
		t.Errorf("mirror annotations %v: want config.source http", m.Annotations)
	}
	running := func() map[string]bool {
		out := map[string]bool{}
		for _, ct := range TrueContainers(h) {
			if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				out[string(ct.PodUID)] = true
			}
		}
		return out
	}
	before := running()
	h.ManifestServerDown(true)
	if err := RunChecked(h, c, 45*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.ServeManifest(200, []byte("kind: Pod\n"))
	if err := RunChecked(h, c, 45*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, running()); diff != "" {
		t.Errorf("running pods changed while the server was down or broken (-before +after):\n%s", diff)
	}
	var events []string
	for _, e := range h.API.User().Events() {
		if e.Reason == "FailedStaticPodManifest" {
			events = append(events, e.Message)
		}
	}
	if len(events) != 2 {
		t.Errorf("FailedStaticPodManifest events %q, want one for the outage and one for the broken body", events)
	}
	h.ServeManifest(200, list("etcd"))
	if err := h.K.RunUntil(func() bool { _, ok := mirror("dns"); return !ok }, time.Minute); err != nil {
		t.Fatalf("waiting for the dropped pod's mirror to go: %v", err)
	}
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if m, ok := mirror("etcd"); !ok || m.Status.Phase != corev1.PodRunning {
		t.Errorf("etcd, still served, is not Running: %v", m)
	}
	if n := len(running()); n != 1 {
		t.Errorf("%d pods run, want 1 (etcd)", n)
	}
	reqs := h.ManifestRequests()
	// At the agent's start, then every 20 s.
	if want := int(h.K.Elapsed()/(20*time.Second)) + 1; len(reqs) < want-1 || len(reqs) > want {
		t.Errorf("%d fetches in %v, want %d (at start, then every 20 s)", len(reqs), h.K.Elapsed(), want)
	}
	for _, r := range reqs {
		if r.URL != manifestURL || !cmp.Equal(r.Header, map[string][]string{"Authorization": {"Bearer sim"}}) {
			t.Errorf("request %+v, want GET %s with the header", r, manifestURL)
			break
		}
	}
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
