package fakecri

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// faultState is the injected misbehaviour, guarded by Runtime.mu.
type faultState struct {
	runtimeNotReady bool
	networkNotReady bool
	downUntil       int64 // restarting until then (Unix ns)

	staleness time.Duration // lists answer the state as of this long ago
	retention time.Duration // how long tombstones are kept

	latencies []*latencyFault
	errs      []*errorFault
	hangs     []*Hang
	pulls     []*pullFault
	hangSeq   int
	noIP      int // pod-network sandboxes left to create without an IP; <0: all
}

// latencyFault delays calls of a method.
type latencyFault struct {
	method   string
	min, max time.Duration
	left     int // calls left; <0: forever
}

// errorFault fails calls of a method.
type errorFault struct {
	method string
	err    error
	left   int
}

// pullFault fails pulls of an image.
type pullFault struct {
	ref   string
	cause string
	left  int
}

// callTarget says which pod a call concerns, for Hang. Empty fields are
// unknown; containerID is resolved to its sandbox.
type callTarget struct {
	sandboxID, containerID, podUID string
}

// Hang holds one call of a chosen method and/or pod until released.
type Hang struct {
	r        *Runtime
	method   string
	pod      string
	sig      Signal
	caught   bool // a call matched it
	released bool
}

// methodNames are the CRI methods faults can name.
func knownMethod(m string) bool {
	switch m {
	case "*",
		"Version", "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus",
		"ListPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer",
		"ListContainers", "ContainerStatus", "UpdateContainerResources", "ReopenContainerLog",
		"ExecSync", "Exec", "Attach", "PortForward", "ContainerStats", "ListContainerStats",
		"PodSandboxStats", "ListPodSandboxStats", "UpdateRuntimeConfig", "Status",
		"CheckpointContainer", "GetContainerEvents", "ListMetricDescriptors",
		"ListPodSandboxMetrics", "RuntimeConfig", "UpdatePodSandboxResources",
		"CheckpointPod", "RestorePod",
		"ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo":
		return true
	}
	return false
}

// checkMethod validates a method name given to a fault.
func checkMethod(m string) error {
	if !knownMethod(m) {
		return fmt.Errorf("fakecri: unknown CRI method %q", m)
	}
	return nil
}

// InjectLatency delays the next count calls of method (every call when
// count <= 0) by a duration drawn uniformly from [min, max] with the
// injected Rand, through Clock.Sleep. Method "*" means every method.
func (r *Runtime) InjectLatency(method string, min, max time.Duration, count int) error {
	if err := checkMethod(method); err != nil {
		return err
	}
	if min < 0 || max < min {
		return fmt.Errorf("fakecri: latency range [%s, %s] is invalid", min, max)
	}
	r.mu.Lock()
	defer r.unlock()
	r.faults.latencies = append(r.faults.latencies, &latencyFault{method: method, min: min, max: max, left: countLeft(count)})
	return nil
}

// InjectError makes the next count calls of method (every call when count
// <= 0) fail with err. A status error keeps its code; any other error
// becomes codes.Unknown. Method "*" means every method.
func (r *Runtime) InjectError(method string, err error, count int) error {
	if err := checkMethod(method); err != nil {
		return err
	}
	if err == nil {
		return fmt.Errorf("fakecri: InjectError needs an error")
	}
	if _, ok := status.FromError(err); !ok {
		err = status.Error(codes.Unknown, err.Error())
	}
	r.mu.Lock()
	defer r.unlock()
	r.faults.errs = append(r.faults.errs, &errorFault{method: method, err: err, left: countLeft(count)})
	return nil
}

// ErrorsPending reports whether injected errors of method (or of every
// method) are still waiting for calls to fail.
func (r *Runtime) ErrorsPending(method string) bool {
	r.mu.Lock()
	defer r.unlock()
	for _, e := range r.faults.errs {
		if e.method == "*" || e.method == method {
			return true
		}
	}
	return false
}

// LatencyPending reports whether injected latency for method is still to
// be served: it slows calls only as they are made, perhaps long after it
// was injected.
func (r *Runtime) LatencyPending(method string) bool {
	r.mu.Lock()
	defer r.unlock()
	for _, l := range r.faults.latencies {
		if l.method == "*" || l.method == method {
			return true
		}
	}
	return false
}

// FaultsPending reports whether an injected latency, error or hang still
// waits for the calls it will slow, fail or hold: such a fault acts only
// when a caller makes the call, perhaps long after it was injected, so an
// invariant checker that bounds how fast the caller reacts excuses it
// until then. Lists set to lag the truth (SetListStaleness) count too:
// the caller sees a change only that much later.
func (r *Runtime) FaultsPending() bool {
	r.mu.Lock()
	defer r.unlock()
	f := &r.faults
	return len(f.latencies) > 0 || len(f.errs) > 0 || len(f.hangs) > 0 || f.staleness > 0
}

// FailPull makes the next count pulls of ref (every pull when count <= 0)
// fail like a registry error. An empty cause means "not found" (code
// NotFound); any other cause is reported with code Unknown.
func (r *Runtime) FailPull(ref, cause string, count int) error {
	n, err := normalizeRef(ref)
	if err != nil {
		return fmt.Errorf("fakecri: FailPull: %w", err)
	}
	r.mu.Lock()
	defer r.unlock()
	r.faults.pulls = append(r.faults.pulls, &pullFault{ref: n, cause: cause, left: countLeft(count)})
	return nil
}

// DropSandboxIPs makes the next count pod-network sandboxes (every one
// when count <= 0) come up READY but without an IP, as with a CNI plugin
// that returned no address.
func (r *Runtime) DropSandboxIPs(count int) {
	r.mu.Lock()
	defer r.unlock()
	r.faults.noIP = countLeft(count)
}

// takeNoIP reports whether the sandbox being created gets no IP.
func (f *faultState) takeNoIP() bool {
	if f.noIP == 0 {
		return false
	}
	if f.noIP > 0 {
		f.noIP--
	}
	return true
}

// ClearFaults removes every latency, error, pull and sandbox IP fault and
// the list staleness. Hangs stay until released.
func (r *Runtime) ClearFaults() {
	r.mu.Lock()
	defer r.unlock()
	r.faults.latencies, r.faults.errs, r.faults.pulls = nil, nil, nil
	r.faults.staleness, r.faults.noIP = 0, 0
}

// countLeft turns a user count into the "left" field (-1: forever).
func countLeft(count int) int {
	if count <= 0 {
		return -1
	}
	return count
}

// Hang makes the next call of method ("" for any) that concerns pod (a pod
// sandbox ID or a pod UID; "" for any) block until the returned Hang is
// released, or until the call's context ends (it then returns ctx.Err()).
// Only one call hangs per Hang.
func (r *Runtime) Hang(method, pod string) *Hang {
	r.mu.Lock()
	defer r.unlock()
	r.faults.hangSeq++
	h := &Hang{r: r, method: method, pod: pod, sig: r.newSignal(fmt.Sprintf("fakecri/hang/%d", r.faults.hangSeq))}
	r.faults.hangs = append(r.faults.hangs, h)
	return h
}

// Release lets the hung call (if any) go on and disarms the Hang.
func (h *Hang) Release() {
	r := h.r
	r.mu.Lock()
	if h.released {
		r.unlock()
		return
	}
	h.released = true
	r.faults.removeHang(h)
	r.pending = append(r.pending, h.sig)
	r.unlock()
}

// Caught reports whether a call has been caught by the Hang.
func (h *Hang) Caught() bool {
	h.r.mu.Lock()
	defer h.r.unlock()
	return h.caught
}

// removeHang forgets h.
func (f *faultState) removeHang(h *Hang) {
	for i, o := range f.hangs {
		if o == h {
			f.hangs = append(f.hangs[:i], f.hangs[i+1:]...)
			return
		}
	}
}

// SetListStaleness makes ListPodSandbox, ListContainers and
// ListContainerStats answer the state as of d ago (0 turns it off).
func (r *Runtime) SetListStaleness(d time.Duration) {
	r.mu.Lock()
	defer r.unlock()
	if d < 0 {
		d = 0
	}
	r.faults.staleness = d
	r.faults.retention = max(r.faults.retention, d)
}

// SetRuntimeReady sets the RuntimeReady condition. While not ready, Status
// reports it and every other call fails with codes.Unavailable.
func (r *Runtime) SetRuntimeReady(ready bool) {
	r.mu.Lock()
	defer r.unlock()
	r.faults.runtimeNotReady = !ready
}

// SetNetworkReady sets the NetworkReady condition. While not ready,
// RunPodSandbox fails for pods not on the host network, as with a CNI
// plugin that is not initialized.
func (r *Runtime) SetNetworkReady(ready bool) {
	r.mu.Lock()
	defer r.unlock()
	r.faults.networkNotReady = !ready
}

// Restart simulates a runtime restart: every event stream ends with
// codes.Unavailable, and for downtime every call (Status included) fails
// with codes.Unavailable. Containers keep running, as with containerd.
func (r *Runtime) Restart(downtime time.Duration) {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	r.faults.downUntil = addSat(now, durNS(max(downtime, 0)))
	for len(r.subs) > 0 {
		s := r.subs[0]
		s.queue = nil
		s.closeLocked(status.Error(codes.Unavailable, "fakecri: runtime restarted, event stream closed"))
	}
}

// unavailable is the error of a call made while the runtime is down or not
// ready, nil otherwise.
func (f *faultState) unavailable(now int64, method string) error {
	if now < f.downUntil {
		return status.Errorf(codes.Unavailable, "fakecri: %s: runtime is restarting", method)
	}
	if f.runtimeNotReady && method != "Status" {
		return status.Errorf(codes.Unavailable, "fakecri: %s: runtime is not ready", method)
	}
	return nil
}

// enter runs the faults of a call before its body: unavailability, a
// hang, injected latency and an injected error, in that order. It never
// holds the lock while it blocks.
// begin starts a CRI call that works on the runtime's state: it applies the
// call's faults, then locks the state (the caller defers r.unlock) and
// brings it up to the clock's now, which it returns (in nanoseconds).
func (r *Runtime) begin(ctx context.Context, method string, t callTarget) (int64, error) {
	if err := r.enter(ctx, method, t); err != nil {
		return 0, err
	}
	r.mu.Lock()
	now := r.now()
	r.advance(now)
	return now, nil
}

func (r *Runtime) enter(ctx context.Context, method string, t callTarget) error {
	r.mu.Lock()
	f := &r.faults
	if err := f.unavailable(r.now(), method); err != nil {
		r.unlock()
		return err
	}
	if len(f.hangs) == 0 && len(f.latencies) == 0 && len(f.errs) == 0 {
		r.unlock()
		return nil
	}
	var hang *Hang
	if len(f.hangs) > 0 {
		t = r.resolveTarget(t)
		for _, h := range f.hangs {
			if !h.caught && (h.method == "" || h.method == method) &&
				(h.pod == "" || h.pod == t.sandboxID || h.pod == t.podUID) {
				h.caught, hang = true, h
				break
			}
		}
	}
	var delay time.Duration
	kept := f.latencies[:0]
	for _, l := range f.latencies {
		if l.method == "*" || l.method == method {
			delay += l.min
			if l.max > l.min {
				delay += time.Duration(r.rand.IntN(int(l.max-l.min) + 1))
			}
			if l.left > 0 {
				l.left--
			}
		}
		if l.left != 0 {
			kept = append(kept, l)
		}
	}
	clear(f.latencies[len(kept):])
	f.latencies = kept
	var injected error
	for i, e := range f.errs {
		if e.method == "*" || e.method == method {
			injected = e.err
			if e.left > 0 {
				e.left--
			}
			if e.left == 0 {
				f.errs = append(f.errs[:i], f.errs[i+1:]...)
			}
			break
		}
	}
	r.unlock()
	if hang != nil {
		if err := hang.sig.Wait(ctx); err != nil {
			hang.Release()
			return err
		}
	}
	if delay > 0 {
		r.clock.Sleep(delay)
	}
	return injected
}

// resolveTarget fills the sandbox and pod UID of a call from its container
// or sandbox ID (exact IDs only).
func (r *Runtime) resolveTarget(t callTarget) callTarget {
	if t.containerID != "" {
		if c, ok := r.containers[t.containerID]; ok {
			t.sandboxID = c.sb.id
		}
	}
	if t.sandboxID != "" && t.podUID == "" {
		if sb, ok := r.sandboxes[t.sandboxID]; ok {
			t.podUID = sb.uid
		}
	}
	return t
}

// pullFailure returns the injected error of a pull of ref, if any.
func (f *faultState) pullFailure(ref string) error {
	for i, p := range f.pulls {
		if p.ref != ref {
			continue
		}
		if p.left > 0 {
			p.left--
		}
		if p.left == 0 {
			f.pulls = append(f.pulls[:i], f.pulls[i+1:]...)
		}
		if p.cause == "" {
			return status.Errorf(codes.NotFound, "failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)
		}
		return status.Errorf(codes.Unknown, "failed to pull and unpack image %q: %s", ref, p.cause)
	}
	return nil
}
