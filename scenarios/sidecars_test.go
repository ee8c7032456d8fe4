package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// containerInstances is when each instance of a pod's containers started and
// finished, as the runtime records them, by container name in attempt
// order (zero: not yet).
type containerInstances map[string][]struct{ started, finished time.Time }

func podInstanceTimes(t *testing.T, h *harness.Harness, uid types.UID) containerInstances {
	t.Helper()
	out := containerInstances{}
	for _, c := range PodContainers(h, uid) {
		st, err := h.Runtime.ContainerStatus(context.Background(), c.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		var s, f time.Time
		if st.Status.StartedAt != 0 {
			s = time.Unix(0, st.Status.StartedAt)
		}
		if st.Status.FinishedAt != 0 {
			f = time.Unix(0, st.Status.FinishedAt)
		}
		out[c.Name] = append(out[c.Name], struct{ started, finished time.Time }{s, f})
	}
	return out
}

func initStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// TestSidecarStartsBeforeApp: a sidecar with a startup probe that passes
// 6 s after it starts, then a regular init container, then the app: each
// starts only once the one before has started (the sidecar: passed its
// startup probe) or completed; the pod is Running and Ready with the
// sidecar running, started and ready, and Initialized.
func TestSidecarStartsBeforeApp(t *testing.T) {
	h := start(t, 11)
	pod := mustCreate(t, h, NewPod("sidecar", h.NodeName, Sidecar("proxy"),
		Env("proxy", "FAKECRI_HTTP", "8080=down,6s:200"), WithProbe("proxy", StartupProbe, HTTPProbe(8080, "", 1, 1, 30)),
		Init("setup", time.Second, 0)))
	runUntil(t, h, "sidecar pod Running and Ready", time.Minute, func() bool { return PodIs(h, "default", "sidecar", corev1.PodRunning, true) })
	times := podInstanceTimes(t, h, pod.UID)
	proxy, setup, app := times["proxy"][0], times["setup"][0], times["app"][0]
	if setup.started.Before(proxy.started.Add(6 * time.Second)) {
		t.Errorf("setup started %v after the sidecar, before its startup probe could pass (6 s)", setup.started.Sub(proxy.started))
	}
	if app.started.Before(setup.finished) {
		t.Errorf("the app started before setup finished: %v < %v", app.started, setup.finished)
	}
	got, _ := APIPod(h, "default", "sidecar")
	want := summary{Phase: corev1.PodRunning, Conditions: allTrue,
		Containers: map[string]string{"proxy": "running", "setup": "terminated:Completed:0", "app": "running"},
		Restarts:   map[string]int32{"proxy": 0, "setup": 0, "app": 0}}
	if diff := cmp.Diff(want, summarize(got)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if cs := initStatus(got, "proxy"); cs == nil || cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("sidecar status %+v, want started and ready", cs)
	}
}

// TestSidecarRestartsWhenItCrashes: in a restartPolicy Never pod, a sidecar
// that exits after 3 s is restarted each time, under its crash-loop
// back-off (at once, then 10 s), while the app keeps running; the pod
// stays Running.
func TestSidecarRestartsWhenItCrashes(t *testing.T) {
	h := start(t, 12)
	pod := mustCreate(t, h, NewPod("crashy", h.NodeName, Restart(corev1.RestartPolicyNever), Sidecar("proxy"), Exits("proxy", 3*time.Second, 1)))
	runUntil(t, h, "the sidecar restarted twice", 2*time.Minute, func() bool {
		p, _ := APIPod(h, "default", "crashy")
		cs := initStatus(p, "proxy")
		return cs != nil && cs.RestartCount >= 2
	})
	p, _ := APIPod(h, "default", "crashy")
	if p.Status.Phase != corev1.PodRunning || p.Status.ContainerStatuses[0].State.Running == nil || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("pod %s, app %+v: want Running with the app never restarted", p.Status.Phase, p.Status.ContainerStatuses[0])
	}
	if cs := initStatus(p, "proxy"); cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("sidecar last termination %+v, want exit 1", cs.LastTerminationState)
	}
	times := podInstanceTimes(t, h, pod.UID)["proxy"]
	// The kubelet's curve: the first restart at once, the second after
	// 10 s.
	if len(times) < 3 || times[1].started.Sub(times[0].finished) > 2*time.Second || times[2].started.Sub(times[1].finished) < 10*time.Second {
		t.Errorf("sidecar instances %+v: the second must start at once, the third after the 10 s back-off", times)
	}
}

// TestSidecarsStopLastInReverseOrder: on deletion the app stops first (it
// takes 3 s after SIGTERM), then the second sidecar, then the first,
// although both sidecars would stop at once.
func TestSidecarsStopLastInReverseOrder(t *testing.T) {
	h := start(t, 13)
	pod := mustCreate(t, h, NewPod("ordered", h.NodeName, Sidecar("first"), Sidecar("second"),
		StopsAfter("app", 3*time.Second), StopsAfter("second", time.Second), StopsAfter("first", time.Second), Grace(30)))
	runUntil(t, h, "ordered Running", time.Minute, func() bool { return PodIs(h, "default", "ordered", corev1.PodRunning, true) })
	deleted := h.K.Now()
	if err := h.API.User().DeletePodGracefully("default", "ordered", nil); err != nil {
		t.Fatal(err)
	}
	var times containerInstances
	runUntil(t, h, "every container stopped", time.Minute, func() bool {
		times = podInstanceTimes(t, h, pod.UID)
		for _, n := range []string{"app", "first", "second"} {
			if len(times[n]) == 0 || times[n][0].finished.IsZero() {
				return false
			}
		}
		return true
	})
	app, second, first := times["app"][0].finished, times["second"][0].finished, times["first"][0].finished
	if !(app.Before(second) && second.Before(first)) {
		t.Errorf("stopped at app +%v, second +%v, first +%v: want app, then second, then first",
			app.Sub(deleted), second.Sub(deleted), first.Sub(deleted))
	}
	if first.Sub(deleted) > 30*time.Second {
		t.Errorf("the last sidecar stopped %v after the delete, past the 30 s grace", first.Sub(deleted))
	}
	runUntil(t, h, "ordered gone", time.Minute, func() bool { _, ok := APIPod(h, "default", "ordered"); return !ok })
}

// TestJobWithSidecarCompletes: a restartPolicy Never pod whose app exits 0
// after 3 s beside a sidecar that runs forever: the sidecar is stopped and
// the pod Succeeds; with an app exiting 1 it Fails. Either way the sidecar
// is not restarted.
func TestJobWithSidecarCompletes(t *testing.T) {
	for _, tc := range []struct {
		code  int
		phase corev1.PodPhase
		app   string
	}{{0, corev1.PodSucceeded, "terminated:Completed:0"}, {1, corev1.PodFailed, "terminated:Error:1"}} {
		t.Run(string(tc.phase), func(t *testing.T) {
			h := start(t, 14)
			pod := mustCreate(t, h, NewPod("job", h.NodeName, Restart(corev1.RestartPolicyNever), Sidecar("proxy"),
				Exits("app", 3*time.Second, tc.code)))
			runUntil(t, h, "job terminal", time.Minute, func() bool { return PodIs(h, "default", "job", tc.phase, false) })
			if err := h.K.RunFor(30 * time.Second); err != nil {
				t.Fatal(err)
			}
			got, _ := APIPod(h, "default", "job")
			s := summarize(got)
			if s.Phase != tc.phase || s.Containers["app"] != tc.app || s.Restarts["proxy"] != 0 ||
				got.Status.InitContainerStatuses[0].State.Terminated == nil {
				t.Errorf("status %+v: want %s, app %s, the sidecar terminated and never restarted", s, tc.phase, tc.app)
			}
			for _, c := range PodContainers(h, pod.UID) {
				if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
					t.Errorf("container %s still runs in a finished pod", c.Name)
				}
			}
			if n := len(podInstanceTimes(t, h, pod.UID)["proxy"]); n != 1 {
				t.Errorf("the sidecar ran %d times, want once", n)
			}
		})
	}
}

// TestActiveDeadlineFailsThePod: a pod whose app would run forever, with
// activeDeadlineSeconds 10: at the deadline (the worker wakes for it, no
// other event comes) it is Failed with reason DeadlineExceeded, a
// DeadlineExceeded event is recorded and its container is stopped within
// the grace period.
func TestActiveDeadlineFailsThePod(t *testing.T) {
	h := start(t, 15)
	pod := mustCreate(t, h, NewPod("deadline", h.NodeName, ActiveDeadline(10), StopsAfter("app", time.Second)))
	runUntil(t, h, "deadline Running", time.Minute, func() bool { return PodIs(h, "default", "deadline", corev1.PodRunning, true) })
	p, _ := APIPod(h, "default", "deadline")
	started := p.Status.StartTime.Time
	runUntil(t, h, "deadline Failed", time.Minute, func() bool { return PodIs(h, "default", "deadline", corev1.PodFailed, false) })
	failedAt := h.K.Now()
	if failedAt.Before(started.Add(10*time.Second)) || failedAt.After(started.Add(13*time.Second)) {
		t.Errorf("Failed %v after the start time, want at the 10 s deadline (+≤3 s)", failedAt.Sub(started))
	}
	runUntil(t, h, "the app stopped", 40*time.Second, func() bool {
		for _, c := range PodContainers(h, pod.UID) {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false
			}
		}
		return true
	})
	runUntil(t, h, "the app reported terminated", 10*time.Second, func() bool {
		p, _ := APIPod(h, "default", "deadline")
		return p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	p, _ = APIPod(h, "default", "deadline")
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("status reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if IsReady(p) {
		t.Error("a Failed pod reports Ready")
	}
	want := "Normal DeadlineExceeded: Pod was active on the node longer than the specified deadline"
	if ev := eventsAbout(h, "default", "deadline"); !hasEvent(ev, want, "") {
		t.Errorf("no event %q; events: %q", want, ev)
	}
}

// TestEphemeralContainerInRunningPod: a debug container added through the
// pods/ephemeralcontainers subresource to a running pod starts in its
// sandbox, is reported in ephemeralContainerStatuses, and once it exits
// (even with a failure, in a restartPolicy Always pod) is never restarted;
// the pod stays Running and Ready.
func TestEphemeralContainerInRunningPod(t *testing.T) {
	h := start(t, 16)
	pod := mustCreate(t, h, NewPod("debugged", h.NodeName))
	runUntil(t, h, "debugged Running", time.Minute, func() bool { return PodIs(h, "default", "debugged", corev1.PodRunning, true) })
	p, _ := APIPod(h, "default", "debugged")
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{{Name: "FAKECRI_EXIT_AFTER", Value: "5s"}, {Name: "FAKECRI_EXIT_CODE", Value: "1"}},
	}}}
	if _, err := h.API.User().UpdateEphemeralContainers(p); err != nil {
		t.Fatal(err)
	}
	ephemeral := func() *corev1.ContainerStatus {
		p, _ := APIPod(h, "default", "debugged")
		if len(p.Status.EphemeralContainerStatuses) != 1 {
			return nil
		}
		return &p.Status.EphemeralContainerStatuses[0]
	}
	runUntil(t, h, "the ephemeral container running", 20*time.Second, func() bool { cs := ephemeral(); return cs != nil && cs.State.Running != nil })
	sandboxes := map[string]bool{}
	for _, sb := range Sandboxes(h, pod.UID) {
		sandboxes[sb.Id] = true
	}
	if len(sandboxes) != 1 {
		t.Errorf("%d sandboxes: the debug container must join the running one", len(sandboxes))
	}
	var appID, debugID string
	for _, c := range PodContainers(h, pod.UID) {
		switch c.Name {
		case "app":
			appID = c.ID
		case "debugger":
			debugID = c.ID
		}
	}
	cfg, _ := h.Runtime.TrueContainerConfig(debugID)
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != appID {
		t.Errorf("debug container's process namespace %v, want TARGET of the app (%s)", ns, appID)
	}
	runUntil(t, h, "the ephemeral container terminated", 20*time.Second, func() bool { cs := ephemeral(); return cs != nil && cs.State.Terminated != nil })
	if err := h.K.RunFor(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	cs := ephemeral()
	if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.RestartCount != 0 || cs.Ready {
		t.Errorf("ephemeral status %+v, want terminated with 1, never restarted, not ready", cs)
	}
	if n := len(podInstanceTimes(t, h, pod.UID)["debugger"]); n != 1 {
		t.Errorf("the debug container ran %d times, want once", n)
	}
	if !PodIs(h, "default", "debugged", corev1.PodRunning, true) {
		t.Error("the pod is no longer Running and Ready")
	}
}

// TestContainerRestartRules: in restartPolicy Never pods, a container with
// its own policy Never and a rule "restart on exit code In [42]" is
// restarted when it exits 42 (the pod stays Running) and not when it
// exits 1 (the pod Fails); a container with policy Always beside a
// finished one keeps the pod Running; in an Always pod a container with
// policy OnFailure that exits 0 is done.
func TestContainerRestartRules(t *testing.T) {
	cases := []struct {
		name     string
		opts     []PodOption
		phase    corev1.PodPhase
		restarts map[string]bool
	}{
		{"rule matches: restarted", []PodOption{Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 42),
			RestartRule("app", corev1.ContainerRestartPolicyNever, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)},
			corev1.PodRunning, map[string]bool{"app": true}},
		{"rule does not match: pod Failed", []PodOption{Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 1),
			RestartRule("app", corev1.ContainerRestartPolicyNever, corev1.ContainerRestartRuleOnExitCodesOpIn, 42)},
			corev1.PodFailed, map[string]bool{"app": false}},
		{"NotIn [0]: a failure restarts", []PodOption{Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 3),
			RestartRule("app", corev1.ContainerRestartPolicyNever, corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0)},
			corev1.PodRunning, map[string]bool{"app": true}},
		{"container Always in a Never pod", []PodOption{Restart(corev1.RestartPolicyNever), Container("web"),
			Exits("app", 2*time.Second, 0), Exits("web", 2*time.Second, 0), func(p *corev1.Pod) {
				always := corev1.ContainerRestartPolicyAlways
				findOrAdd(p, "web").RestartPolicy = &always
			}}, corev1.PodRunning, map[string]bool{"app": false, "web": true}},
		{"container OnFailure in an Always pod exits 0", []PodOption{Exits("app", 2*time.Second, 0), func(p *corev1.Pod) {
			onFailure := corev1.ContainerRestartPolicyOnFailure
			findOrAdd(p, "app").RestartPolicy = &onFailure
		}}, corev1.PodSucceeded, map[string]bool{"app": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, 17)
			mustCreate(t, h, NewPod("rules", h.NodeName, tc.opts...))
			if err := h.K.RunFor(90 * time.Second); err != nil {
				t.Fatal(err)
			}
			p, _ := APIPod(h, "default", "rules")
			s := summarize(p)
			if p.Status.Phase != tc.phase {
				t.Errorf("phase %s, want %s (status %+v)", p.Status.Phase, tc.phase, s)
			}
			for name, want := range tc.restarts {
				if got := s.Restarts[name] > 0; got != want {
					t.Errorf("container %s restarted %d times, want restarts: %v", name, s.Restarts[name], want)
				}
			}
		})
	}
}

// TestSidecarsWithHungPreStopStopTogether: sidecars whose preStop hooks
// outlive the grace period are stopped together once it is over (2 s
// after, the stop's minimum window), not one after another in their
// reverse order: with no grace left a sidecar does not wait for its turn,
// as the kubelet's killContainer skips the ordering then (the node suite's
// "should terminate sidecars simultaneously if prestop doesn't exit").
func TestSidecarsWithHungPreStopStopTogether(t *testing.T) {
	h := start(t, 15)
	hung := func(name string) []PodOption {
		return []PodOption{Sidecar(name), PreStop(name, ExecHook("/bin/drain")), Env(name, "FAKECRI_EXEC", "/bin/drain=hang"), IgnoresSIGTERM(name)}
	}
	opts := append(append(hung("first"), hung("second")...), Grace(30))
	pod := mustCreate(t, h, NewPod("hung", h.NodeName, opts...))
	runUntil(t, h, "hung Running", time.Minute, func() bool { return PodIs(h, "default", "hung", corev1.PodRunning, true) })
	deleted := h.K.Now()
	if err := h.API.User().DeletePodGracefully("default", "hung", nil); err != nil {
		t.Fatal(err)
	}
	var times containerInstances
	runUntil(t, h, "every container stopped", 2*time.Minute, func() bool {
		times = podInstanceTimes(t, h, pod.UID)
		for _, n := range []string{"app", "first", "second"} {
			if len(times[n]) == 0 || times[n][0].finished.IsZero() {
				return false
			}
		}
		return true
	})
	first, second := times["first"][0].finished.Sub(deleted), times["second"][0].finished.Sub(deleted)
	if d := first - second; d < -time.Second || d > time.Second {
		t.Errorf("sidecars stopped at first +%v, second +%v: want together (within 1 s)", first, second)
	}
	if first > 33*time.Second || second > 33*time.Second {
		t.Errorf("sidecars stopped at first +%v, second +%v: want by the 30 s grace plus the 2 s window", first, second)
	}
}

// TestNeverPodFailingInitStopsSidecarsGracefully is the node suite's
// "initializing an init container after a restartable init container …
// Should begin initializing the pod, restartPolicy=Never": init-1, then
// restartable-init-1 (a sidecar that takes 5 s to exit on SIGTERM), then
// init-2, which exits 1 after 30 s; meanwhile the sidecar's image changes
// and it restarts with the new one. Under Never init-2's failure fails the
// pod, and the sidecar's new instance is sent SIGTERM after init-2 ended
// and lives its 5 s (it logs "Exiting" after init-2 did), not killed.
func TestNeverPodFailingInitStopsSidecarsGracefully(t *testing.T) {
	h := start(t, 21)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("imgupdate-never", h.NodeName, Restart(corev1.RestartPolicyNever),
		Init("init-1", time.Second, 0),
		Sidecar("restartable-init-1"), StopsAfter("restartable-init-1", 5*time.Second),
		Init("init-2", 30*time.Second, 1),
		Sidecar("restartable-init-2"), StopsAfter("restartable-init-2", time.Second),
		StopsAfter("app", time.Second)))
	runUntil(t, h, "init-2 running", time.Minute, func() bool {
		p, ok := APIPod(h, "default", "imgupdate-never")
		cs := initStatus(p, "init-2")
		return ok && cs != nil && cs.State.Running != nil
	})
	const updated = "registry.k8s.io/e2e-test-images/agnhost:2.53"
	if _, err := h.API.User().UpdatePodSpec("default", "imgupdate-never", func(s *corev1.PodSpec) { s.InitContainers[1].Image = updated }); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "the sidecar restarted with the new image", time.Minute, func() bool {
		p, _ := APIPod(h, "default", "imgupdate-never")
		cs := initStatus(p, "restartable-init-1")
		return cs != nil && cs.State.Running != nil && cs.RestartCount > 0 && cs.Image == updated
	})
	// The node suite reads the logs as soon as the pod shows Failed: by
	// then the sidecar must have logged its exit.
	for deadline := h.K.Elapsed() + time.Minute; ; {
		if err := RunChecked(h, c, 100*time.Millisecond, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if p, _ := APIPod(h, "default", "imgupdate-never"); p.Status.Phase == corev1.PodFailed {
			break
		}
		if h.K.Elapsed() > deadline {
			t.Fatal("the pod is not Failed a minute after the image change")
		}
	}
	for _, ct := range PodContainers(h, pod.UID) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s (attempt %d) still runs when the pod is reported Failed", ct.Name, ct.Attempt)
		}
	}
	times := podInstanceTimes(t, h, pod.UID)
	init2 := times["init-2"][0].finished
	side := times["restartable-init-1"]
	last := side[len(side)-1]
	for _, ct := range PodContainers(h, pod.UID) {
		if ct.Name != "restartable-init-1" || int(ct.Attempt) != len(side)-1 {
			continue
		}
		if at, ok := h.Runtime.TrueStopRequested(ct.ID); !ok || time.Unix(0, at).Before(init2) {
			t.Errorf("the sidecar's last instance was sent SIGTERM %v (at %v after init-2 ended), want after init-2 ended", ok, time.Unix(0, at).Sub(init2))
		}
	}
	if last.finished.Sub(init2) < 5*time.Second {
		t.Errorf("the sidecar's last instance ended %v after init-2, want it to live its 5 s after SIGTERM (instances %+v)", last.finished.Sub(init2), side)
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
}
