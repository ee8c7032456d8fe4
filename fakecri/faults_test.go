package fakecri

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestInjectLatency(t *testing.T) {
	f := newFixture(t)
	if err := f.r.InjectLatency("ListContainers", time.Second, time.Second, 2); err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for range 3 {
		before := f.clock.Elapsed()
		if _, err := f.r.ListContainers(f.ctx, nil); err != nil {
			t.Fatal(err)
		}
		took = append(took, f.clock.Elapsed()-before)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, time.Second, 0}, took); diff != "" {
		t.Errorf("latencies (-want +got):\n%s", diff)
	}
	if err := f.r.InjectLatency("NoSuchMethod", 0, 0, 0); err == nil {
		t.Errorf("InjectLatency accepted an unknown method")
	}
	if err := f.r.InjectLatency("Status", 2, 1, 0); err == nil {
		t.Errorf("InjectLatency accepted max < min")
	}

	// Jitter comes from the injected Rand: the same seed gives the same delays.
	jitter := func() time.Duration {
		g := newFixture(t)
		if err := g.r.InjectLatency("*", 10*time.Millisecond, 50*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if _, err := g.r.Version(g.ctx, ""); err != nil {
				t.Fatal(err)
			}
		}
		return g.clock.Elapsed()
	}
	a, b := jitter(), jitter()
	if a != b || a < 200*time.Millisecond || a > time.Second {
		t.Errorf("jittered latency totals %v and %v: want equal, within [200ms, 1s]", a, b)
	}
}

func TestInjectError(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	if err := f.r.InjectError("CreateContainer", status.Error(codes.ResourceExhausted, "disk full"), 1); err != nil {
		t.Fatal(err)
	}
	if err := f.r.InjectError("*", errors.New("boom"), 1); err != nil {
		t.Fatal(err)
	}
	_, err := f.r.CreateContainer(f.ctx, sb, ctrConfig("c"), nil)
	wantCode(t, "first create", err, codes.ResourceExhausted)
	_, err = f.r.ListPodSandbox(f.ctx, nil)
	wantCode(t, "wildcard fault", err, codes.Unknown)
	wantErrContains(t, "wildcard fault", err, "boom")
	f.create(sb, ctrConfig("c"))
	if f.r.ErrorsPending("CreateContainer") || f.r.ErrorsPending("Version") {
		t.Errorf("ErrorsPending after every injected error was served")
	}
	if err := f.r.InjectError("StopContainer", errors.New("stuck"), 2); err != nil {
		t.Fatal(err)
	}
	if !f.r.ErrorsPending("StopContainer") || f.r.ErrorsPending("StartContainer") {
		t.Errorf("ErrorsPending: want StopContainer's pending, StartContainer's not")
	}
	f.r.ClearFaults()
	if err := f.r.InjectError("Status", nil, 1); err == nil {
		t.Errorf("InjectError accepted a nil error")
	}
	if err := f.r.InjectError("Version", errors.New("x"), 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := f.r.Version(f.ctx, "")
		wantCode(t, "permanent fault", err, codes.Unknown)
	}
	f.r.ClearFaults()
	if _, err := f.r.Version(f.ctx, ""); err != nil {
		t.Errorf("after ClearFaults: %v", err)
	}
}

// hangSignals records, per signal name, when a Wait has begun.
type hangSignals struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

// waitSignal is a chan Signal that reports when Wait starts.
type waitSignal struct {
	Signal
	entered chan struct{}
	once    sync.Once
}

func (s *waitSignal) Wait(ctx context.Context) error {
	s.once.Do(func() { close(s.entered) })
	return s.Signal.Wait(ctx)
}

func (h *hangSignals) newSignal(name string) Signal {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &waitSignal{Signal: NewChanSignal(name), entered: make(chan struct{})}
	h.waiting[name] = s.entered
	return s
}

func (h *hangSignals) entered(name string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting[name]
}

func TestHang(t *testing.T) {
	sigs := &hangSignals{waiting: map[string]chan struct{}{}}
	f := newFixture(t, func(c *Config) { c.NewSignal = sigs.newSignal })
	p := f.runPod("p")
	q := f.runPod("q")
	cp := f.run(p, ctrConfig("c"))
	cq := f.run(q, ctrConfig("c"))

	h := f.r.Hang("ContainerStatus", "uid-p") // by pod UID
	done := make(chan error, 1)
	go func() {
		_, err := f.r.ContainerStatus(f.ctx, cp, false)
		done <- err
	}()
	<-sigs.entered("fakecri/hang/1")
	if !h.Caught() {
		t.Errorf("Caught() = false while a call hangs")
	}
	// Other pods and other methods are not held.
	if _, err := f.r.ContainerStatus(f.ctx, cq, false); err != nil {
		t.Errorf("other pod's call: %v", err)
	}
	if err := f.r.StopContainer(f.ctx, cp, 0); err != nil {
		t.Errorf("other method on the hung pod: %v", err)
	}
	h.Release()
	if err := <-done; err != nil {
		t.Errorf("released call: %v", err)
	}
	if _, err := f.r.ContainerStatus(f.ctx, cp, false); err != nil {
		t.Errorf("the hang holds only one call: %v", err)
	}

	// By sandbox ID, ended by the call's context.
	h2 := f.r.Hang("", q)
	ctx, cancel := context.WithCancel(f.ctx)
	go func() {
		done <- f.r.StopPodSandbox(ctx, q)
	}()
	<-sigs.entered("fakecri/hang/2")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("hung call with cancelled ctx: %v, want context.Canceled", err)
	}
	h2.Release() // no-op now
	if err := f.r.StopPodSandbox(f.ctx, q); err != nil {
		t.Errorf("after the hang: %v", err)
	}
}

func TestRuntimeNotReady(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	f.r.SetRuntimeReady(false)
	_, err := f.r.ListPodSandbox(f.ctx, nil)
	wantCode(t, "list while not ready", err, codes.Unavailable)
	_, err = f.r.ContainerStatus(f.ctx, "x", false)
	wantCode(t, "status while not ready", err, codes.Unavailable)
	if _, err := f.r.Status(f.ctx, false); err != nil {
		t.Errorf("Status while not ready: %v", err)
	}
	f.r.SetRuntimeReady(true)
	if _, err := f.r.PodSandboxStatus(f.ctx, sb, false); err != nil {
		t.Errorf("after ready again: %v", err)
	}
}

func TestStaleLists(t *testing.T) {
	f := newFixture(t)
	type snapshot struct {
		Sandboxes, Containers, Stats []string
	}
	take := func() snapshot {
		var s snapshot
		sbs, err := f.r.ListPodSandbox(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range sbs {
			s.Sandboxes = append(s.Sandboxes, sb.Metadata.Name+":"+sb.State.String())
		}
		cs, err := f.r.ListContainers(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			s.Containers = append(s.Containers, c.Metadata.Name+":"+c.State.String())
		}
		st, err := f.r.ListContainerStats(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range st {
			s.Stats = append(s.Stats, c.Attributes.Metadata.Name+":"+c.Memory.GetWorkingSetBytes().String())
		}
		return s
	}
	// A history: each step changes something, then we record the live lists.
	p := f.runPod("p")
	a := f.run(p, ctrConfig("a", "FAKECRI_EXIT_AFTER=2500ms", "FAKECRI_MEMORY=1Mi", "FAKECRI_MEMORY_GROWTH=1Ki/s"))
	steps := []func(){
		func() { f.create(p, ctrConfig("b")) },
		func() {},
		func() { f.run(f.runPod("q"), ctrConfig("c")) },
		func() {
			if err := f.r.RemoveContainer(f.ctx, a); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if err := f.r.RemovePodSandbox(f.ctx, p); err != nil {
				t.Fatal(err)
			}
		},
		func() {},
	}
	var live []snapshot
	live = append(live, take())
	for _, step := range steps {
		f.clock.Advance(time.Second)
		step()
		live = append(live, take())
	}
	// Stale by k seconds, the lists at step i equal the live ones at i-k.
	for k := 1; k <= 3; k++ {
		f.r.SetListStaleness(time.Duration(k) * time.Second)
		now := len(live) - 1
		if diff := cmp.Diff(live[now-k], take()); diff != "" {
			t.Errorf("stale by %ds (-want live at step %d, +got):\n%s", k, now-k, diff)
		}
	}
	// Between steps too: as of 1.5s (4.5s ago), a had run 1.5s.
	f.r.SetListStaleness(4500 * time.Millisecond)
	got := take()
	want := snapshot{
		Sandboxes:  []string{"p:SANDBOX_READY"},
		Containers: []string{"a:CONTAINER_RUNNING", "b:CONTAINER_CREATED"},
		Stats:      []string{"a:value:1050112", "b:<nil>"}, // 1Mi + 1.5s * 1Ki/s
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stale by 4.5s (-want +got):\n%s", diff)
	}
	f.r.SetListStaleness(0)
	if diff := cmp.Diff(live[len(live)-1], take()); diff != "" {
		t.Errorf("staleness off (-want +got):\n%s", diff)
	}
	items, err := f.r.ListContainers(f.ctx, &runtimeapi.ContainerFilter{Id: a})
	if err != nil || len(items) != 0 {
		t.Errorf("removed container listed: %v %v", items, err)
	}
}

func TestDropSandboxIPs(t *testing.T) {
	f := newFixture(t)
	f.r.DropSandboxIPs(1)
	ip := func(sb string) string {
		t.Helper()
		st, err := f.r.PodSandboxStatus(f.ctx, sb, false)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("sandbox %s is %v, want READY", sb, st.GetStatus().GetState())
		}
		return st.GetStatus().GetNetwork().GetIp()
	}
	sbA := f.runPod("a")
	if got := ip(sbA); got != "" {
		t.Errorf("first sandbox after DropSandboxIPs(1) has IP %q, want none", got)
	}
	sbB := f.runPod("b")
	if got := ip(sbB); got == "" {
		t.Errorf("second sandbox has no IP; the fault was for one only")
	}
	if !f.r.TrueSandboxLacksIP(f.create(sbA, ctrConfig("c"))) {
		t.Errorf("TrueSandboxLacksIP is false for a container of the sandbox without an IP")
	}
	if f.r.TrueSandboxLacksIP(f.create(sbB, ctrConfig("c"))) {
		t.Errorf("TrueSandboxLacksIP is true for a container of a sandbox with an IP")
	}
	f.r.DropSandboxIPs(0)
	f.r.ClearFaults()
	if got := ip(f.runPod("c")); got == "" {
		t.Errorf("sandbox after ClearFaults has no IP")
	}
}

// FaultsPending holds while an injected latency, error or hang waits for
// its calls, and while lists lag the truth; it ends when they are used up
// or turned off.
func TestFaultsPending(t *testing.T) {
	f := newFixture(t)
	if f.r.FaultsPending() {
		t.Fatal("pending with nothing injected")
	}
	if err := f.r.InjectLatency("ListContainers", time.Second, time.Second, 1); err != nil {
		t.Fatal(err)
	}
	if !f.r.FaultsPending() || !f.r.LatencyPending("ListContainers") || f.r.LatencyPending("ListPodSandbox") {
		t.Fatal("an unused latency on ListContainers: want pending for it alone")
	}
	if _, err := f.r.ListContainers(f.ctx, nil); err != nil {
		t.Fatal(err)
	}
	if f.r.FaultsPending() {
		t.Fatal("pending after the latency was used up")
	}
	f.r.SetListStaleness(3 * time.Second)
	if !f.r.FaultsPending() {
		t.Fatal("lagging lists not pending")
	}
	f.r.SetListStaleness(0)
	if f.r.FaultsPending() {
		t.Fatal("pending after staleness was turned off")
	}
}
