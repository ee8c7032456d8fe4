package fakecri

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// scenarioTrace runs a busy scenario — exits, OOM kills, SIGTERM-ignoring
// containers, jittered latency, stale lists — and returns its trace.
func scenarioTrace(t *testing.T, seed uint64) string {
	f := newFixture(t, func(c *Config) { c.Rand = rand.New(rand.NewPCG(seed, 7)) })
	var b strings.Builder
	sub := f.r.SubscribeEvents("trace")
	if err := f.r.InjectLatency("*", 0, 20*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for sub.Pending() > 0 {
			ev, err := sub.Next(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "event %d %s %s\n", ev.CreatedAt, ev.ContainerEventType, ev.ContainerId[:8])
		}
	}
	scripts := [][]string{
		{"FAKECRI_EXIT_AFTER=3s", "FAKECRI_EXIT_CODE=1"},
		{"FAKECRI_MEMORY=5Mi", "FAKECRI_MEMORY_GROWTH=3Mi/s"},
		{"FAKECRI_IGNORE_SIGTERM=true"},
		{"FAKECRI_STOP_DELAY=1500ms", "FAKECRI_CPU=200m"},
		nil,
	}
	var ctrs []string
	for i := range 10 {
		sb := f.runPod(fmt.Sprintf("pod%d", i))
		cfg := withLimit(ctrConfig("c", scripts[i%len(scripts)]...), 16<<20)
		ctrs = append(ctrs, f.run(sb, cfg))
		drain()
	}
	for i, id := range ctrs {
		if i%2 == 0 {
			if err := f.r.StopContainer(f.ctx, id, 2); err != nil {
				t.Fatal(err)
			}
			drain()
		}
	}
	f.r.SetListStaleness(2 * time.Second)
	f.clock.Advance(5 * time.Second)
	list, err := f.r.ListContainers(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		fmt.Fprintf(&b, "stale %s %s\n", c.Id[:8], c.State)
	}
	drain()
	for _, id := range ctrs {
		st := f.status(id)
		fmt.Fprintf(&b, "status %s %s %d %s %d\n", id[:8], st.State, st.ExitCode, st.Reason, st.FinishedAt)
	}
	fmt.Fprintf(&b, "end %v\n", f.clock.Elapsed())
	return b.String()
}

func TestDeterministicReplay(t *testing.T) {
	a := scenarioTrace(t, 42)
	if diff := cmp.Diff(a, scenarioTrace(t, 42)); diff != "" {
		t.Fatalf("same seed, different trace (-first +second):\n%s", diff)
	}
	if a == scenarioTrace(t, 43) {
		t.Errorf("different seeds gave the same trace: the injected Rand is not used")
	}
	for _, want := range []string{"OOMKilled", "137 Error", "143 Error", "1 Error", "0 Completed", "CONTAINER_STOPPED_EVENT"} {
		if !strings.Contains(a, want) {
			t.Errorf("trace lacks %q:\n%s", want, a)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for _, seed := range []uint64{0, 1} {
		f := newFixture(t, func(c *Config) { c.IDSeed = seed })
		for i := range 100 {
			id := f.runPod(fmt.Sprint(i))
			if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
				t.Fatalf("ID %q is not 64 hex digits", id)
			}
			if seen[id] {
				t.Fatalf("ID %q made twice", id)
			}
			seen[id] = true
		}
	}
	items, err := newFixture(t).r.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{})
	if err != nil || len(items) != 0 {
		t.Errorf("fresh runtime lists %v %v", items, err)
	}
}
