package runtimesync

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// recordingRuntime is the Executor's narrow ports (Runtime, Images)
// recording every call, one line each; fail makes the first call of a
// method fail with its error. Images are present; new sandboxes and
// containers are numbered.
type recordingRuntime struct {
	calls []string
	fail  map[string]error
	next  int
	// handlers are the runtime handlers Status reports.
	handlers []*runtimeapi.RuntimeHandler
}

func (r *recordingRuntime) record(method, format string, args ...any) error {
	r.calls = append(r.calls, method+" "+fmt.Sprintf(format, args...))
	err := r.fail[method]
	delete(r.fail, method)
	return err
}

func (r *recordingRuntime) newID(prefix string) string {
	r.next++
	return fmt.Sprintf("%s%d", prefix, r.next)
}

func (r *recordingRuntime) RunPodSandbox(_ context.Context, c *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if err := r.record("RunPodSandbox", "%s attempt=%d handler=%q", c.GetMetadata().GetName(), c.GetMetadata().GetAttempt(), handler); err != nil {
		return "", err
	}
	return r.newID("sb"), nil
}

func (r *recordingRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.record("PodSandboxStatus", "%s", id); err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: id,
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.7"}}}, nil
}

func (r *recordingRuntime) StopPodSandbox(_ context.Context, id string) error {
	return r.record("StopPodSandbox", "%s", id)
}

func (r *recordingRuntime) RemovePodSandbox(_ context.Context, id string) error {
	return r.record("RemovePodSandbox", "%s", id)
}

func (r *recordingRuntime) CreateContainer(_ context.Context, sandbox string, c *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	rro := ""
	for _, m := range c.GetMounts() {
		if m.GetRecursiveReadOnly() {
			rro += " rro=" + m.GetContainerPath()
		}
	}
	if err := r.record("CreateContainer", "%s attempt=%d in %s image=%s%s", c.GetMetadata().GetName(), c.GetMetadata().GetAttempt(), sandbox, c.GetImage().GetImage(), rro); err != nil {
		return "", err
	}
	return r.newID("c"), nil
}

func (r *recordingRuntime) StartContainer(_ context.Context, id string) error {
	return r.record("StartContainer", "%s", id)
}

func (r *recordingRuntime) StopContainer(_ context.Context, id string, timeout int64) error {
	return r.record("StopContainer", "%s timeout=%d", id, timeout)
}

func (r *recordingRuntime) RemoveContainer(_ context.Context, id string) error {
	return r.record("RemoveContainer", "%s", id)
}

func (r *recordingRuntime) UpdateContainerResources(_ context.Context, id string, _ *runtimeapi.ContainerResources) error {
	return r.record("UpdateContainerResources", "%s", id)
}

func (r *recordingRuntime) ContainerStats(_ context.Context, id string) (*runtimeapi.ContainerStats, error) {
	return nil, r.record("ContainerStats", "%s", id)
}

func (r *recordingRuntime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	return nil, nil, r.record("ExecSync", "%s %v", id, cmd)
}

func (r *recordingRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{RuntimeHandlers: r.handlers}, r.record("Status", "")
}

func (r *recordingRuntime) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.record("ImageStatus", "%s", spec.GetImage()); err != nil {
		return nil, err
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + spec.GetImage()}}, nil
}

func (r *recordingRuntime) PullImage(_ context.Context, spec *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	return "sha256:" + spec.GetImage(), r.record("PullImage", "%s", spec.GetImage())
}

// recordedEvents records events and observed starts, one line each.
type recordedEvents struct{ lines []string }

func (r *recordedEvents) Event(obj *corev1.ObjectReference, eventType, reason, message string) {
	r.lines = append(r.lines, fmt.Sprintf("%s %s %s: %s", obj.FieldPath, eventType, reason, message))
}

func (r *recordedEvents) ObservePodSandboxStart(err error) {
	r.lines = append(r.lines, fmt.Sprintf("observe sandbox err=%v", err))
}

func (r *recordedEvents) ObserveContainerStart(init bool, code string) {
	r.lines = append(r.lines, fmt.Sprintf("observe container init=%v code=%q", init, code))
}

// TestExecutorCalls runs Execute against the recording runtime and checks
// the CRI calls it made for each plan, the events and observations it
// recorded, and the result the plan's outcomes gave.
func TestExecutorCalls(t *testing.T) {
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox:1.36"}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	rroPod := func(mode corev1.RecursiveReadOnlyMode) *corev1.Pod {
		return pod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &mode}}
		})
	}
	running := &podstate.PodStatus{UID: "uid-1", Name: "web", Namespace: "ns",
		Sandboxes: []podstate.Sandbox{{ID: "sb0", State: podstate.SandboxReady, IP: "10.0.0.1"}}}
	const appField = "spec.containers{app}"
	cases := []struct {
		name       string
		pod        *corev1.Pod
		st         *podstate.PodStatus
		fail       map[string]error
		handlers   []*runtimeapi.RuntimeHandler
		wantCalls  []string
		wantEvents []string
		wantResult Result
		wantErr    string
	}{
		{
			name: "new pod: a sandbox, its IP, the image, the container",
			pod:  pod(nil), st: &podstate.PodStatus{UID: "uid-1"},
			wantCalls: []string{
				"RunPodSandbox web attempt=0 handler=\"\"", "PodSandboxStatus sb1",
				"ImageStatus busybox:1.36", "ImageStatus busybox:1.36",
				"CreateContainer app attempt=0 in sb1 image=sha256:busybox:1.36", "StartContainer c2",
			},
			wantEvents: []string{
				"observe sandbox err=<nil>",
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Normal Created: Container created",
				appField + " Normal Started: Container started",
				"observe container init=false code=\"\"",
			},
			wantResult: Result{SandboxID: "sb1", Started: []Started{{Name: "app", ID: "c2"}}},
		},
		{
			name: "the sandbox fails: the container waits, nothing else is called",
			pod:  pod(nil), st: &podstate.PodStatus{UID: "uid-1"},
			fail:      map[string]error{"RunPodSandbox": errors.New("no network")},
			wantCalls: []string{"RunPodSandbox web attempt=0 handler=\"\""},
			wantEvents: []string{
				"observe sandbox err=no network",
				" Warning FailedCreatePodSandBox: Failed to create pod sandbox: no network",
			},
			wantResult: Result{Waiting: map[string]Waiting{"app": {Reason: "ContainerCreating"}}},
			wantErr:    "create sandbox of pod ns/web: no network",
		},
		{
			name: "a stale created instance: stopped, removed, the next attempt started",
			pod:  pod(nil),
			st: func() *podstate.PodStatus {
				st := *running
				st.Containers = []podstate.Container{{ID: "old", Name: "app", State: podstate.ContainerCreated, RestartCount: 1, Hash: "x"}}
				return &st
			}(),
			wantCalls: []string{
				"StopContainer old timeout=30", "RemoveContainer old",
				"ImageStatus busybox:1.36", "ImageStatus busybox:1.36",
				"CreateContainer app attempt=2 in sb0 image=sha256:busybox:1.36", "StartContainer c1",
			},
			wantEvents: []string{
				appField + " Normal Killing: Stopping container app",
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Normal Created: Container created",
				appField + " Normal Started: Container started",
				"observe container init=false code=\"\"",
			},
			wantResult: Result{SandboxID: "sb0", Started: []Started{{Name: "app", ID: "c1"}}},
		},
		{
			name: "the pull fails: ErrImagePull, no container created",
			pod:  pod(func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways }), st: running,
			fail:      map[string]error{"PullImage": errors.New("manifest unknown")},
			wantCalls: []string{"PullImage busybox:1.36"},
			wantEvents: []string{
				appField + " Normal Pulling: Pulling image \"busybox:1.36\"",
				appField + " Warning Failed: Failed to pull image \"busybox:1.36\": manifest unknown",
				appField + " Warning Failed: Error: ErrImagePull",
				"observe container init=false code=\"ErrImagePull\"",
			},
			wantResult: Result{SandboxID: "sb0", Waiting: map[string]Waiting{"app": {Reason: "ErrImagePull", Message: "manifest unknown"}}},
			wantErr:    `image "busybox:1.36" for container "app" of pod ns/web: ErrImagePull: manifest unknown`,
		},
		{
			name: "CreateContainer fails: CreateContainerError",
			pod:  pod(nil), st: running,
			fail: map[string]error{"CreateContainer": errors.New("no space left")},
			wantCalls: []string{
				"ImageStatus busybox:1.36", "ImageStatus busybox:1.36",
				"CreateContainer app attempt=0 in sb0 image=sha256:busybox:1.36",
			},
			wantEvents: []string{
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Warning Failed: Error: no space left",
				"observe container init=false code=\"CreateContainerError\"",
			},
			wantResult: Result{SandboxID: "sb0", Waiting: map[string]Waiting{"app": {Reason: "CreateContainerError", Message: "no space left"}}},
			wantErr:    `create container "app" of pod ns/web: no space left`,
		},
		{
			name: "recursiveReadOnly Enabled on a runtime without it: CreateContainerConfigError in the kubelet's words",
			pod:  rroPod(corev1.RecursiveReadOnlyEnabled), st: running,
			handlers:  []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{}}},
			wantCalls: []string{"ImageStatus busybox:1.36", "ImageStatus busybox:1.36", "Status "},
			wantEvents: []string{
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Warning Failed: Error: failed to resolve recursive read-only mode: volume \"data\" requested recursive read-only mode, but it is not supported by the runtime",
				"observe container init=false code=\"CreateContainerConfigError\"",
			},
			wantResult: Result{SandboxID: "sb0", Waiting: map[string]Waiting{"app": {Reason: "CreateContainerConfigError",
				Message: `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime`}}},
			wantErr: `container "app" of pod ns/web: failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime`,
		},
		{
			name: "recursiveReadOnly Enabled where the default handler supports it: mounted recursively read-only",
			pod:  rroPod(corev1.RecursiveReadOnlyEnabled), st: running,
			handlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}}},
			wantCalls: []string{"ImageStatus busybox:1.36", "ImageStatus busybox:1.36", "Status ",
				"CreateContainer app attempt=0 in sb0 image=sha256:busybox:1.36 rro=/data", "StartContainer c1"},
			wantEvents: []string{
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Normal Created: Container created",
				appField + " Normal Started: Container started",
				"observe container init=false code=\"\"",
			},
			wantResult: Result{SandboxID: "sb0", Started: []Started{{Name: "app", ID: "c1"}}},
		},
		{
			name: "recursiveReadOnly IfPossible on a runtime without it: a plain read-only mount",
			pod:  rroPod(corev1.RecursiveReadOnlyIfPossible), st: running,
			wantCalls: []string{"ImageStatus busybox:1.36", "ImageStatus busybox:1.36", "Status ",
				"CreateContainer app attempt=0 in sb0 image=sha256:busybox:1.36", "StartContainer c1"},
			wantEvents: []string{
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Normal Created: Container created",
				appField + " Normal Started: Container started",
				"observe container init=false code=\"\"",
			},
			wantResult: Result{SandboxID: "sb0", Started: []Started{{Name: "app", ID: "c1"}}},
		},
		{
			name: "the postStart hook fails: the new instance is killed",
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"setup"}}}}
			}),
			st:   running,
			fail: map[string]error{"ExecSync": errors.New("no such file")},
			wantCalls: []string{
				"ImageStatus busybox:1.36", "ImageStatus busybox:1.36",
				"CreateContainer app attempt=0 in sb0 image=sha256:busybox:1.36", "StartContainer c1",
				"ExecSync c1 [setup]", "StopContainer c1 timeout=30",
			},
			wantEvents: []string{
				appField + " Normal Pulled: Container image \"busybox:1.36\" already present on machine and can be accessed by the pod",
				appField + " Normal Created: Container created",
				appField + " Normal Started: Container started",
				appField + " Warning FailedPostStartHook: PostStartHook failed",
				appField + " Normal Killing: FailedPostStartHook",
				"observe container init=false code=\"PostStartHookError\"",
			},
			wantResult: Result{SandboxID: "sb0", Started: []Started{{Name: "app", ID: "c1"}}, Waiting: map[string]Waiting{"app": {
				Reason:  "PostStartHookError",
				Message: `Exec lifecycle hook ([setup]) for Container "app" in Pod "web_ns(uid-1)" failed - error: exec probe in container c1: no such file, message: ""`}}},
			wantErr: `postStart hook of container "app" of pod ns/web: exec probe in container c1: no such file`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := kernel.New(kernel.Config{Seed: 1})
			t.Cleanup(k.Close)
			rt := &recordingRuntime{fail: tc.fail, handlers: tc.handlers}
			rec := &recordedEvents{}
			e := NewExecutor(k.Deps().Core, Ports{Runtime: rt, Images: rt, Events: rec}, Config{Observer: rec})
			var res Result
			var err error
			done := false
			k.Tasks().Go("execute", func() {
				res, err = e.Execute(context.Background(), tc.pod, tc.st, false, nil, nil)
				done = true
			})
			if rerr := k.RunUntil(func() bool { return done }, time.Minute); rerr != nil {
				t.Fatal(rerr)
			}
			if diff := cmp.Diff(tc.wantCalls, rt.calls); diff != "" {
				t.Errorf("CRI calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, rec.lines); diff != "" {
				t.Errorf("events and observations (-want +got):\n%s", diff)
			}
			res.Actions = Actions{}
			if diff := cmp.Diff(tc.wantResult, res, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := fmt.Sprint(err); tc.wantErr != "" && got != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestResolveRecursiveReadOnly: the kubelet's resolveRecursiveReadOnly.
func TestResolveRecursiveReadOnly(t *testing.T) {
	mode := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }
	bidi := corev1.MountPropagationBidirectional
	tests := []struct {
		name     string
		m        corev1.VolumeMount
		supports bool
		want     bool
		wantErr  string
	}{
		{"unset", corev1.VolumeMount{Name: "v", ReadOnly: true}, true, false, ""},
		{"Disabled", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyDisabled)}, true, false, ""},
		{"IfPossible, supported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, true, true, ""},
		{"IfPossible, unsupported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, false, false, ""},
		{"Enabled, supported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, true, true, ""},
		{"Enabled, unsupported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, false, false,
			`volume "v" requested recursive read-only mode, but it is not supported by the runtime`},
		{"not read-only", corev1.VolumeMount{Name: "v", RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, true, false,
			`volume "v" requested recursive read-only mode, but it is not read-only`},
		{"propagation", corev1.VolumeMount{Name: "v", ReadOnly: true, MountPropagation: &bidi, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, true, false,
			`volume "v" requested recursive read-only mode, but it is not compatible with propagation "Bidirectional"`},
		{"unknown", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode("Sometimes")}, true, false,
			`unknown recursive read-only mode "Sometimes"`},
	}
	for _, tt := range tests {
		got, err := ResolveRecursiveReadOnly(tt.m, tt.supports)
		if got != tt.want || fmt.Sprint(err) != tt.wantErr && !(err == nil && tt.wantErr == "") {
			t.Errorf("%s: got %v, %v; want %v, %q", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

// cancellingRuntime cancels the sync's context at its first ImageStatus
// call, as a kill arriving while the sync checks the image would.
type cancellingRuntime struct {
	*recordingRuntime
	cancel context.CancelFunc
}

func (c cancellingRuntime) ImageStatus(ctx context.Context, spec *runtimeapi.ImageSpec, v bool) (*runtimeapi.ImageStatusResponse, error) {
	c.cancel()
	return c.recordingRuntime.ImageStatus(ctx, spec, v)
}

// TestExecutorSandboxReadyCancelAndReasons: the executor tells
// SandboxReady once the new sandbox runs and its IP is read, before the
// image; a sync cancelled mid-way (a kill took over) makes no further
// call; and the reasons a sync leaves containers waiting for are kept for
// the next status (Reasons) until a sync starts the container.
func TestExecutorSandboxReadyCancelAndReasons(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox:1.36"}}
	ctx, cancel := context.WithCancel(context.Background())
	rt := cancellingRuntime{recordingRuntime: &recordingRuntime{}, cancel: cancel}
	var calls []string
	var ready []string
	e := NewExecutor(k.Deps().Core, Ports{Runtime: rt, Images: rt}, Config{SandboxReady: func(pod *corev1.Pod) {
		ready = append(ready, fmt.Sprintf("%s after %d calls", pod.Name, len(rt.calls)))
	}})
	execute := func(ctx context.Context, st *podstate.PodStatus) (Result, error) {
		var res Result
		var err error
		done := false
		k.Tasks().Go("execute", func() {
			res, err = e.Execute(ctx, p, st, false, nil, nil)
			done = true
		})
		if rerr := k.RunUntil(func() bool { return done }, time.Minute); rerr != nil {
			t.Fatal(rerr)
		}
		return res, err
	}
	_, err := execute(ctx, &podstate.PodStatus{UID: "uid-1"})
	calls = rt.calls
	want := []string{"RunPodSandbox web attempt=0 handler=\"\"", "PodSandboxStatus sb1", "ImageStatus busybox:1.36"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("CRI calls of the cancelled sync (-want +got):\n%s", diff)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sync's error %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"web after 2 calls"}, ready); diff != "" {
		t.Errorf("SandboxReady calls (-want +got):\n%s", diff)
	}

	// A sync whose image check fails leaves app waiting: the reason is
	// kept for the next sync's status; a sync that starts it drops it.
	rt.recordingRuntime.fail = map[string]error{"ImageStatus": errors.New("disk error")}
	running := &podstate.PodStatus{UID: "uid-1", Sandboxes: []podstate.Sandbox{{ID: "sb1", State: podstate.SandboxReady, IP: "10.0.0.7"}}}
	rt.cancel = func() {}
	if _, err := execute(context.Background(), running); err == nil {
		t.Fatal("sync with a failing image check: no error")
	}
	if got := e.Reasons("uid-1")["app"].Reason; got == "" {
		t.Errorf("no reason kept for app after a failed start: %v", e.Reasons("uid-1"))
	}
	if _, err := execute(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	if got := e.Reasons("uid-1"); len(got) != 0 {
		t.Errorf("reasons after app started: %v, want none", got)
	}
}
