//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPostStartExecHookWritesFile: a postStart exec hook writes a file
// the app waits for and prints; the container is reported running and
// started only once the hook (2 s) has returned.
func TestPostStartExecHookWritesFile(t *testing.T) {
	e := setup(t)
	p := e.pod("poststart", false, `until [ -f /tmp/hooked ]; do sleep 0.2; done; echo "app read $(cat /tmp/hooked)"; `+sleeper)
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 2; echo from-poststart > /tmp/hooked"}},
	}}
	p = e.create(t, p)
	got := e.waitPod(t, p, 60*time.Second, "reported running", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil
	})
	// The first report of it running comes after the 2 s hook returned.
	seen := time.Now()
	cs := got.Status.ContainerStatuses[0]
	if after := seen.Sub(cs.State.Running.StartedAt.Time); after < 2*time.Second {
		t.Errorf("reported running %v after it started, before its 2 s postStart hook returned", after)
	}
	if cs.Started == nil || !*cs.Started {
		t.Errorf("container status %+v, want started", cs)
	}
	e.waitLogs(t, p, "c", "app read from-poststart", 30*time.Second)
	for _, ev := range e.events(t, p) {
		if strings.HasPrefix(ev, "FailedPostStartHook") {
			t.Errorf("unexpected event %q", ev)
		}
	}
}

// TestPostStartFailureKillsContainer: a postStart hook that fails gets
// the FailedPostStartHook event, and the container is killed and
// restarted (restartCount grows).
func TestPostStartFailureKillsContainer(t *testing.T) {
	e := setup(t)
	p := e.pod("poststart-fails", false, sleeper)
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "exit 7"}},
	}}
	p = e.create(t, p)
	got := e.waitPod(t, p, 60*time.Second, "restarted after its postStart hook failed", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1
	})
	t.Logf("status after the failure: %+v", got.Status.ContainerStatuses[0].State)
	evs := strings.Join(e.events(t, p), "\n")
	for _, want := range []string{"FailedPostStartHook: PostStartHook failed", "Killing: FailedPostStartHook"} {
		if !strings.Contains(evs, want) {
			t.Errorf("no event %q; events:\n%s", want, evs)
		}
	}
}

// TestPreStopHookDelaysStop: a preStop exec hook that sleeps 6 s runs
// before the container (which exits at once on SIGTERM) is stopped: the
// deletion takes at least the hook's sleep, and ends well within the
// 30 s grace period.
func TestPreStopHookDelaysStop(t *testing.T) {
	e := setup(t)
	const hookSleep = 6 * time.Second
	p := e.pod("prestop", false, sleeper)
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 6"}},
	}}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	start := time.Now()
	if err := e.admin.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	e.waitGone(t, p, 60*time.Second)
	took := time.Since(start)
	t.Logf("FIGURE preStop sleep %v: deletion took %v (grace %ds)", hookSleep, took.Round(100*time.Millisecond), grace)
	if took < hookSleep {
		t.Errorf("deletion took %v, less than the preStop hook's %v: the hook did not delay the stop", took, hookSleep)
	}
	if took > 20*time.Second {
		t.Errorf("deletion took %v: the container exits on SIGTERM right after the %v hook", took, hookSleep)
	}
	e.waitCRIEmpty(t, string(p.UID), 15*time.Second)
}

// TestPreStopSleepHookCutAtGrace: a preStop sleep action longer than the
// grace period of the deletion is cut (the API only lets it be shorter
// than the spec's 30 s; the delete asks for 4 s): the container that
// ignores SIGTERM is killed about 4 + 2 s after the deletion, not after
// the hook's 20 s.
func TestPreStopSleepHookCutAtGrace(t *testing.T) {
	e := setup(t)
	p := e.pod("prestop-cut", false, stubborn)
	specGrace, grace := int64(30), int64(4)
	p.Spec.TerminationGracePeriodSeconds = &specGrace
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 20}}}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	start := time.Now()
	if err := e.admin.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	e.waitGone(t, p, 60*time.Second)
	took := time.Since(start)
	t.Logf("FIGURE preStop sleep 20s cut at a %ds deletion grace: deletion took %v", grace, took.Round(100*time.Millisecond))
	if took < time.Duration(grace)*time.Second || took > 15*time.Second {
		t.Errorf("deletion took %v, want between the grace (%ds) and 15 s: the hook is cut at the grace, then 2 s to stop", took, grace)
	}
}

// TestTerminationMessage: the terminated state's message, as read from
// the API: from the file the container writes at its
// terminationMessagePath (the default one and a custom one), and, with
// FallbackToLogsOnError, from the tail of its log when it fails without
// writing one.
func TestTerminationMessage(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		name, cmd, path string
		policy          corev1.TerminationMessagePolicy
		want            string
		code            int32
	}{
		{name: "default file", cmd: `printf 'goodbye from the file' > /dev/termination-log; exit 3`, want: "goodbye from the file", code: 3},
		{name: "custom path", path: "/tmp/last-words", cmd: `printf 'custom path' > /tmp/last-words; exit 0`, want: "custom path"},
		{name: "fallback to logs", policy: corev1.TerminationMessageFallbackToLogsOnError,
			cmd: `echo line one; echo line two; exit 2`, want: "line one\nline two\n", code: 2},
		{name: "file wins over logs", policy: corev1.TerminationMessageFallbackToLogsOnError,
			cmd: `echo noise; printf 'from file' > /dev/termination-log; exit 1`, want: "from file", code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.pod("termmsg", false, tc.cmd)
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			c := &p.Spec.Containers[0]
			c.TerminationMessagePath, c.TerminationMessagePolicy = tc.path, tc.policy
			p = e.create(t, p)
			got := e.waitPod(t, p, 60*time.Second, "terminated", func(p *corev1.Pod) bool {
				cs := p.Status.ContainerStatuses
				return len(cs) == 1 && cs[0].State.Terminated != nil
			})
			term := got.Status.ContainerStatuses[0].State.Terminated
			if term.Message != tc.want || term.ExitCode != tc.code {
				t.Errorf("terminated: message %q exit %d, want %q exit %d", term.Message, term.ExitCode, tc.want, tc.code)
			}
		})
	}
}
