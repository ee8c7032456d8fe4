package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// checked runs h for d with every invariant checked each 100 ms, failing
// the test on a violation.
func checked(t *testing.T, h *harness.Harness, c *Checker, d time.Duration) {
	t.Helper()
	if err := RunChecked(h, c, d, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) > 0 {
		t.Fatalf("invariants broken: %v", v)
	}
}

// checkedUntil is checked until cond holds (at most limit).
func checkedUntil(t *testing.T, h *harness.Harness, c *Checker, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for end := h.K.Elapsed() + limit; !cond(); {
		if h.K.Elapsed() >= end {
			t.Fatalf("waiting for %s: not within %v", what, limit)
		}
		checked(t, h, c, 100*time.Millisecond)
	}
}

// apiContainer returns the API status of the pod's container name.
func apiContainer(t *testing.T, h *harness.Harness, pod, name string) corev1.ContainerStatus {
	t.Helper()
	p, err := h.API.User().GetPod("default", pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

// instanceTimes returns, for the pod's instances of container name in
// creation order, when each was started and first sent SIGTERM (0: never)
// and how it exited, relative to the simulation's start.
type instanceTimes struct {
	Started, Term, Finished time.Duration
	Code                    int32
}

func instancesOf(h *harness.Harness, c *Checker, uid types.UID, name string) []instanceTimes {
	var out []instanceTimes
	for _, ct := range TrueContainers(h) {
		if ct.PodUID != uid || ct.Name != name {
			continue
		}
		var it instanceTimes
		if at, ok := h.Runtime.TrueStartedAt(ct.ID); ok {
			it.Started = c.elapsedAt(at)
		}
		if at, ok := h.Runtime.TrueStopRequested(ct.ID); ok {
			it.Term = c.elapsedAt(at)
		}
		if e, ok := h.Runtime.TrueExit(ct.ID); ok {
			it.Finished, it.Code = c.elapsedAt(e.FinishedAt), e.Code
		}
		out = append(out, it)
	}
	return out
}

// TestPostStartFailure: a postStart exec hook that fails gets the
// FailedPostStartHook event (without the hook's output), the container
// is killed, reported waiting with PostStartHookError and the hook's
// message, then restarted under the crash-loop back-off (at once, then
// 10 s).
func TestPostStartFailure(t *testing.T) {
	h := start(t, 41)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("hooked", h.NodeName, Env("app", "FAKECRI_EXEC", "poststart=1"),
		PostStart("app", ExecHook("poststart")), Grace(5)))
	var sawHookError corev1.ContainerStateWaiting
	checkedUntil(t, h, c, "the hook error reported", time.Minute, func() bool {
		if w := apiContainer(t, h, "hooked", "app").State.Waiting; w != nil && w.Reason == "PostStartHookError" {
			sawHookError = *w
			return true
		}
		return false
	})
	wantMsg := `Exec lifecycle hook ([poststart]) for Container "app" in Pod "hooked_default(` + string(pod.UID) +
		`)" failed - error: command 'poststart' exited with 1: , message: ""`
	if sawHookError.Message != wantMsg {
		t.Errorf("waiting message = %q, want %q", sawHookError.Message, wantMsg)
	}
	checked(t, h, c, 45*time.Second)

	insts := instancesOf(h, c, pod.UID, "app")
	if len(insts) < 3 {
		t.Fatalf("%d instances after 45 s, want at least 3 (restarts under back-off): %+v", len(insts), insts)
	}
	for i, in := range insts[:3] {
		if in.Term == 0 || in.Term != in.Started {
			t.Errorf("instance %d: SIGTERM at %v, want at its start %v (killed once the hook failed)", i, in.Term, in.Started)
		}
	}
	for i, want := range []time.Duration{0, 10 * time.Second} {
		if gap := insts[i+1].Started - insts[i].Finished; gap < want || gap > want+2*time.Second {
			t.Errorf("restart %d came %v after the kill, want the %v back-off", i+1, gap, want)
		}
	}
	want := []string{fmt.Sprintf("FailedPostStartHook PostStartHook failed x%d", len(insts)), fmt.Sprintf("Killing FailedPostStartHook x%d", len(insts))}
	if diff := cmp.Diff(want, eventsOf(h, pod.UID, "FailedPostStartHook", "Killing")); diff != "" {
		t.Errorf("events, one of each per instance, without the hook's output (-want +got):\n%s", diff)
	}
	cs := apiContainer(t, h, "hooked", "app")
	if cs.RestartCount < 2 || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.Started == nil || *cs.Started {
		t.Errorf("status after 45 s: restarts %d, state %+v, started %v; want ≥ 2, CrashLoopBackOff, not started", cs.RestartCount, cs.State, cs.Started)
	}
}

// TestPostStartDelaysStarted: while a postStart hook runs (sleep 5 s) the
// container is not reported running, started or ready; once it returns,
// it is.
func TestPostStartDelaysStarted(t *testing.T) {
	h := start(t, 42)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("slowstart", h.NodeName, PostStart("app", SleepHook(5*time.Second))))
	checkedUntil(t, h, c, "the container running in the runtime", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	began := h.K.Elapsed()
	checked(t, h, c, 4*time.Second)
	if cs := apiContainer(t, h, "slowstart", "app"); cs.State.Running != nil || cs.Ready || (cs.Started != nil && *cs.Started) {
		t.Errorf("4 s into the 5 s postStart hook the API says %+v (ready %v, started %v), want not running yet", cs.State, cs.Ready, cs.Started)
	}
	checkedUntil(t, h, c, "the container reported running", 10*time.Second, func() bool {
		return apiContainer(t, h, "slowstart", "app").State.Running != nil
	})
	if took := h.K.Elapsed() - began; took < 5*time.Second {
		t.Errorf("reported running %v after it started, before its 5 s postStart hook ended", took)
	}
	if cs := apiContainer(t, h, "slowstart", "app"); !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Errorf("after the hook: ready %v started %v, want both", cs.Ready, cs.Started)
	}
}

// deleteAndWatch deletes the running pod name (grace from its spec, or
// grace[0]) and returns its container's instance times once stopped.
func deleteAndWatch(t *testing.T, h *harness.Harness, c *Checker, pod *corev1.Pod, grace ...int64) (deleted time.Duration, it instanceTimes) {
	t.Helper()
	checkedUntil(t, h, c, "the pod running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	checked(t, h, c, 2*time.Second)
	var g *int64
	if len(grace) > 0 {
		g = &grace[0]
	}
	if err := h.API.User().DeletePodGracefully("default", pod.Name, g); err != nil {
		t.Fatal(err)
	}
	deleted = h.K.Elapsed()
	checkedUntil(t, h, c, "the container stopped", 2*time.Minute, func() bool { return running(h, pod.UID) == 0 })
	insts := instancesOf(h, c, pod.UID, "app")
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	return deleted, insts[0]
}

// TestPreStopBeforeStop: a deleted pod's container runs its preStop hook
// (sleep 4 s, grace 30 s) before it is sent SIGTERM; the stop then takes
// what the container needs (it exits at once on SIGTERM), well within the
// grace; an exec preStop hook runs in the container before the SIGTERM.
func TestPreStopBeforeStop(t *testing.T) {
	t.Run("sleep", func(t *testing.T) {
		h := start(t, 43)
		c := NewChecker(h)
		pod := mustCreate(t, h, NewPod("graceful", h.NodeName, PreStop("app", SleepHook(4*time.Second)), Grace(30)))
		deleted, it := deleteAndWatch(t, h, c, pod)
		if after := it.Term - deleted; after < 4*time.Second || after > 6*time.Second {
			t.Errorf("SIGTERM %v after the delete, want after the 4 s preStop hook (within 2 s of its end)", after)
		}
		if it.Finished != it.Term || it.Code != 143 {
			t.Errorf("exit at %v code %d, want at the SIGTERM (%v) with 143", it.Finished, it.Code, it.Term)
		}
	})
	t.Run("exec", func(t *testing.T) {
		h := start(t, 44)
		c := NewChecker(h)
		pod := mustCreate(t, h, NewPod("graceful", h.NodeName, PreStop("app", ExecHook("/bin/drain")), Grace(30)))
		_, it := deleteAndWatch(t, h, c, pod)
		var hookAt time.Duration
		for _, ct := range TrueContainers(h) {
			for _, e := range h.Runtime.TrueExecs(ct.ID) {
				if ct.PodUID == pod.UID && e.Cmd == "/bin/drain" {
					hookAt = c.elapsedAt(e.At)
				}
			}
		}
		if hookAt == 0 || hookAt > it.Term {
			t.Errorf("preStop exec at %v, SIGTERM at %v: want the hook first", hookAt, it.Term)
		}
	})
}

// TestPreStopCutAtGrace: a preStop hook longer than the grace period is
// cut at the grace; the container, which ignores SIGTERM, still gets the
// least stop time (2 s) before SIGKILL. Sleep hook: 25 s under a spec
// grace of 30 s (the API wants it shorter), deleted with grace 10 s. Exec
// hook that hangs: spec grace 10 s.
func TestPreStopCutAtGrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []PodOption
		grace []int64
	}{
		{"sleep", []PodOption{PreStop("app", SleepHook(25*time.Second)), Grace(30)}, []int64{10}},
		{"exec", []PodOption{PreStop("app", ExecHook("/bin/drain")), Env("app", "FAKECRI_EXEC", "/bin/drain=hang"), Grace(10)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, 45)
			c := NewChecker(h)
			pod := mustCreate(t, h, NewPod("stubborn", h.NodeName, append(tc.opts, IgnoresSIGTERM("app"))...))
			deleted, it := deleteAndWatch(t, h, c, pod, tc.grace...)
			got := []time.Duration{(it.Term - deleted).Round(time.Second), (it.Finished - it.Term).Round(time.Second)}
			if diff := cmp.Diff([]time.Duration{10 * time.Second, 2 * time.Second}, got); diff != "" {
				t.Errorf("[SIGTERM after delete, SIGKILL after SIGTERM] (-want +got):\n%s", diff)
			}
			if it.Code != 137 {
				t.Errorf("exit code %d, want 137 (killed)", it.Code)
			}
		})
	}
}

// TestPreStopFailureEvent: a preStop exec hook that fails gets the
// FailedPreStopHook event and the container is stopped anyway.
func TestPreStopFailureEvent(t *testing.T) {
	h := start(t, 46)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("failing", h.NodeName, PreStop("app", ExecHook("/bin/drain")), Env("app", "FAKECRI_EXEC", "/bin/drain=3")))
	deleteAndWatch(t, h, c, pod)
	if got := eventsOf(h, pod.UID, "FailedPreStopHook"); !cmp.Equal(got, []string{"FailedPreStopHook PreStopHook failed x1"}) {
		t.Errorf("events = %q, want one FailedPreStopHook", got)
	}
}

// TestTerminationMessage: a terminated container's message comes from
// the file at its terminationMessagePath; with FallbackToLogsOnError and
// an empty file, from the tail of its log when it failed.
func TestTerminationMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []PodOption
		want string
	}{
		{"from the file", []PodOption{TerminationMessage("app", "all work done"), Exits("app", 2*time.Second, 0)}, "all work done"},
		{"file wins over logs", []PodOption{TerminationMessage("app", "written"), MessageFromLogs("app"),
			Env("app", "FAKECRI_LOG", "noise"), Exits("app", 2*time.Second, 1)}, "written"},
		{"from the logs on error", []PodOption{MessageFromLogs("app"), Env("app", "FAKECRI_LOG", "panic: out of widgets"),
			Env("app", "FAKECRI_LOG_EVERY", "1s"), Exits("app", 2500*time.Millisecond, 1)},
			strings.Repeat("panic: out of widgets\n", 3)},
		{"not from the logs on success", []PodOption{MessageFromLogs("app"), Env("app", "FAKECRI_LOG", "bye"), Exits("app", 2*time.Second, 0)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, 47)
			c := NewChecker(h)
			opts := append([]PodOption{Restart(corev1.RestartPolicyNever)}, tc.opts...)
			mustCreate(t, h, NewPod("msg", h.NodeName, opts...))
			var term *corev1.ContainerStateTerminated
			checkedUntil(t, h, c, "the container reported terminated", time.Minute, func() bool {
				term = apiContainer(t, h, "msg", "app").State.Terminated
				return term != nil
			})
			if term.Message != tc.want {
				t.Errorf("terminated message = %q, want %q", term.Message, tc.want)
			}
		})
	}
}

// TestTerminationMessageMounted: the container's terminationMessagePath
// is bind-mounted from a file of its own under the pod's directory.
func TestTerminationMessageMounted(t *testing.T) {
	h := start(t, 48)
	pod := mustCreate(t, h, NewPod("mounted", h.NodeName))
	runUntil(t, h, "pod running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	for _, ct := range TrueContainers(h) {
		if ct.PodUID != pod.UID || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		var found bool
		for _, m := range h.Runtime.TrueMounts(ct.ID) {
			if m.ContainerPath == "/dev/termination-log" {
				found = true
				prefix := "/var/lib/lockstep/pods/" + string(pod.UID) + "/containers/app/"
				if !strings.HasPrefix(m.HostPath, prefix) || !h.Files.Exists(m.HostPath) {
					t.Errorf("termination log mounted from %s (exists: %v), want an existing file under %s", m.HostPath, h.Files.Exists(m.HostPath), prefix)
				}
			}
		}
		if !found {
			t.Errorf("no mount at /dev/termination-log: %v", h.Runtime.TrueMounts(ct.ID))
		}
	}
}

// TestHTTPHooks: HTTP hooks go through the probe network to the pod IP:
// any answer succeeds (a 500 too, as upstream); no answer is a failure
// (FailedPostStartHook, PostStartHookError naming the path).
func TestHTTPHooks(t *testing.T) {
	get := func(path string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}}
	}
	h := start(t, 49)
	c := NewChecker(h)
	ok := mustCreate(t, h, NewPod("answers", h.NodeName, Env("app", "FAKECRI_HTTP", "8080/warm=500;8080/drain=200"),
		PostStart("app", get("/warm")), PreStop("app", get("/drain"))))
	down := mustCreate(t, h, NewPod("refuses", h.NodeName, Env("app", "FAKECRI_HTTP", "8080/warm=down"), PostStart("app", get("/warm"))))
	checkedUntil(t, h, c, "the answering pod ready", time.Minute, func() bool {
		p, err := h.API.User().GetPod("default", "answers")
		return err == nil && IsReady(p)
	})
	checkedUntil(t, h, c, "the refused hook reported", time.Minute, func() bool {
		w := apiContainer(t, h, "refuses", "app").State.Waiting
		return w != nil && w.Reason == "PostStartHookError" && strings.HasPrefix(w.Message, "HTTP lifecycle hook (/warm) for Container \"app\"")
	})
	if got := eventsOf(h, ok.UID, "FailedPostStartHook", "FailedPreStopHook"); len(got) != 0 {
		t.Errorf("events of the answering pod: %q, want none", got)
	}
	if got := eventsOf(h, down.UID, "FailedPostStartHook"); len(got) != 1 {
		t.Errorf("events of the refusing pod: %q, want one FailedPostStartHook", got)
	}
	deleteAndWatch(t, h, c, ok)
	if got := eventsOf(h, ok.UID, "FailedPreStopHook"); len(got) != 0 {
		t.Errorf("preStop HTTP hook failed: %q", got)
	}
}

// TestDeleteDuringPostStart: a pod deleted (grace 5 s) while its
// container's postStart hook runs (sleep 60 s, spec grace 90 s) is stopped
// within the grace period: the hook is cut, without a FailedPostStartHook
// event (it did not fail).
func TestDeleteDuringPostStart(t *testing.T) {
	h := start(t, 50)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("hooked", h.NodeName, PostStart("app", SleepHook(60*time.Second)), Grace(90)))
	checkedUntil(t, h, c, "the container running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	checked(t, h, c, 3*time.Second)
	grace := int64(5)
	if err := h.API.User().DeletePodGracefully("default", "hooked", &grace); err != nil {
		t.Fatal(err)
	}
	began := h.K.Elapsed()
	checkedUntil(t, h, c, "the container stopped", time.Minute, func() bool { return running(h, pod.UID) == 0 })
	if took := h.K.Elapsed() - began; took > 8*time.Second {
		t.Errorf("stopped %v after the delete, want within the 5 s grace (+ slack)", took)
	}
	if got := eventsOf(h, pod.UID, "FailedPostStartHook"); len(got) != 0 {
		t.Errorf("events %q, want no FailedPostStartHook for a hook cut by the deletion", got)
	}
}
