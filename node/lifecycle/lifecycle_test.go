package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

type exitErr int

func (e exitErr) Error() string   { return fmt.Sprintf("command exited with %d", int(e)) }
func (e exitErr) ExitStatus() int { return int(e) }

// fakeExec answers every exec with code after delay (on the kernel's
// clock), recording the commands.
type fakeExec struct {
	k     *kernel.Kernel
	delay time.Duration
	code  int
	ran   []string
	ended []string // how each call ended: "done" or its context's error
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	f.ran = append(f.ran, fmt.Sprintf("%s: %v", id, cmd))
	if err := f.k.Tasks().Sleep(ctx, f.delay); err != nil {
		f.ended = append(f.ended, err.Error())
		return nil, nil, err
	}
	f.ended = append(f.ended, "done")
	if f.code != 0 {
		return []byte("boom\n"), nil, exitErr(f.code)
	}
	return []byte("ok\n"), nil, nil
}

// fakeNet answers GETs with code, or refuses them (code 0).
type fakeNet struct {
	code int
	got  []string
}

func (n *fakeNet) HTTPGet(_ context.Context, req deps.HTTPRequest) (deps.HTTPResponse, error) {
	n.got = append(n.got, req.URL+" "+req.Header["User-Agent"][0])
	if n.code == 0 {
		return deps.HTTPResponse{}, errors.New("connection refused")
	}
	return deps.HTTPResponse{StatusCode: n.code}, nil
}
func (n *fakeNet) DialTCP(context.Context, string, int) error { return nil }
func (n *fakeNet) GRPCHealth(context.Context, string, int, string) (string, error) {
	return "SERVING", nil
}

func target() Target {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "default", "u1"
	return Target{Pod: pod, Container: &corev1.Container{Name: "app"}, ContainerID: "c1", PodIP: "10.0.0.7"}
}

// run runs fn as a task of a fresh kernel until it returns.
func run(t *testing.T, fn func(k *kernel.Kernel, r func(exec *fakeExec, net *fakeNet) *Runner)) {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	done := false
	k.Tasks().Go("test", func() {
		fn(k, func(exec *fakeExec, net *fakeNet) *Runner {
			exec.k = k
			var pn deps.ProbeNetwork
			if net != nil {
				pn = net
			}
			return New(k.Deps().Core, exec, pn)
		})
		done = true
	})
	if err := k.RunUntil(func() bool { return done }, time.Hour); err != nil {
		t.Fatal(err)
	}
}

func TestRun(t *testing.T) {
	execH := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "x"}}}
	httpH := &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/hook", Port: intstr.FromInt32(8080)}}
	for _, tc := range []struct {
		name    string
		h       *corev1.LifecycleHandler
		exec    fakeExec
		net     *fakeNet
		wantMsg string
		took    time.Duration
	}{
		{name: "exec success", h: execH, exec: fakeExec{delay: 3 * time.Second}, took: 3 * time.Second},
		{name: "exec failure", h: execH, exec: fakeExec{code: 2},
			wantMsg: `Exec lifecycle hook ([sh -c x]) for Container "app" in Pod "web_default(u1)" failed - error: command exited with 2, message: "boom\n"`},
		{name: "http any status succeeds", h: httpH, net: &fakeNet{code: 500}},
		{name: "http no response fails", h: httpH, net: &fakeNet{},
			wantMsg: `HTTP lifecycle hook (/hook) for Container "app" in Pod "web_default(u1)" failed - error: connection refused`},
		{name: "http without a network fails", h: httpH,
			wantMsg: `HTTP lifecycle hook (/hook) for Container "app" in Pod "web_default(u1)" failed - error: no probe network`},
		{name: "sleep", h: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 7}}, took: 7 * time.Second},
		{name: "no handler", h: &corev1.LifecycleHandler{}, wantMsg: "Cannot run handler: invalid handler: &LifecycleHandler{Exec:nil,HTTPGet:nil,TCPSocket:nil,Sleep:nil,}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, func(k *kernel.Kernel, newRunner func(*fakeExec, *fakeNet) *Runner) {
				exec := tc.exec
				r := newRunner(&exec, tc.net)
				start := k.Now()
				msg, err := r.Run(context.Background(), tc.h, target())
				if (err != nil) != (tc.wantMsg != "") {
					t.Errorf("err = %v, want failure %v", err, tc.wantMsg != "")
				}
				if diff := cmp.Diff(tc.wantMsg, msg); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
				if got := k.Now().Sub(start); got != tc.took {
					t.Errorf("took %v, want %v", got, tc.took)
				}
			})
		})
	}
	t.Run("http user agent and pod IP", func(t *testing.T) {
		run(t, func(_ *kernel.Kernel, newRunner func(*fakeExec, *fakeNet) *Runner) {
			net := &fakeNet{code: 200}
			if _, err := newRunner(&fakeExec{}, net).Run(context.Background(), httpH, target()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"http://10.0.0.7:8080/hook kube-lifecycle/1.37"}, net.got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	})
}

func TestRunPreStop(t *testing.T) {
	sleep := func(s int64) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}
	}
	for _, tc := range []struct {
		name   string
		h      *corev1.LifecycleHandler
		exec   fakeExec
		grace  int64
		want   PreStopResult
		remain int64
	}{
		{name: "within grace", h: sleep(4), grace: 10, want: PreStopResult{Waited: 4 * time.Second}, remain: 6},
		{name: "outlives grace: cut at the grace", h: sleep(60), grace: 10, want: PreStopResult{Waited: 10 * time.Second, Cut: true}, remain: 2},
		{name: "leaves at least 2 s", h: sleep(9), grace: 10, want: PreStopResult{Waited: 9 * time.Second}, remain: 2},
		{name: "failed exec", h: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"stop"}}},
			exec: fakeExec{code: 1, delay: 1500 * time.Millisecond}, grace: 30,
			want: PreStopResult{Waited: 1500 * time.Millisecond, Err: exitErr(1),
				Message: `Exec lifecycle hook ([stop]) for Container "app" in Pod "web_default(u1)" failed - error: command exited with 1, message: "boom\n"`},
			remain: 29},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, func(k *kernel.Kernel, newRunner func(*fakeExec, *fakeNet) *Runner) {
				exec := tc.exec
				got := newRunner(&exec, nil).RunPreStop(context.Background(), "web/app", tc.h, target(), tc.grace)
				if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
				if got := RemainingGrace(tc.grace, got.Waited, 2); got != tc.remain {
					t.Errorf("remaining grace = %d, want %d", got, tc.remain)
				}
			})
		})
	}
}

// TestAbandonedPreStopRunsOn: an exec hook that outlives its grace period
// is abandoned, not stopped: the exec runs on (until it ends, the
// container's stop ends it, or the caller's context does), as the
// kubelet leaves it, so a looping hook lives past the grace into the
// stop's minimum window.
func TestAbandonedPreStopRunsOn(t *testing.T) {
	run(t, func(k *kernel.Kernel, newRunner func(*fakeExec, *fakeNet) *Runner) {
		exec := fakeExec{delay: 15 * time.Second}
		h := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"loop"}}}
		got := newRunner(&exec, nil).RunPreStop(context.Background(), "web/app", h, target(), 10)
		if !got.Cut || got.Waited != 10*time.Second {
			t.Fatalf("result %+v, want cut after 10 s", got)
		}
		if err := k.Tasks().Sleep(context.Background(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"done"}, exec.ended); diff != "" {
			t.Errorf("how the abandoned exec ended (-want +got):\n%s", diff)
		}
	})
}
