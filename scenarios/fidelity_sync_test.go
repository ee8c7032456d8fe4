package scenarios

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Simulator scenarios for the differences with the upstream kubelet that
// issue 27's harness found in runtimesync (docs/fidelity.md): each fails
// on lockstep's behaviour before the fix.

// containerStates samples the API status of a pod's container every 100
// ms for d under the checker, and returns the distinct (restartCount,
// state) pairs in order ("1 running", "1 waiting CrashLoopBackOff: …").
func containerStates(t *testing.T, h *harness.Harness, c *Checker, pod, name string, d time.Duration) []string {
	t.Helper()
	var seen []string
	for end := h.K.Elapsed() + d; h.K.Elapsed() < end; {
		if err := RunChecked(h, c, 100*time.Millisecond, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		p, err := h.API.User().GetPod("default", pod)
		if err != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != name {
				continue
			}
			s := fmt.Sprintf("%d %s", cs.RestartCount, stateWord(cs.State))
			if len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
		}
	}
	return seen
}

// stateWord is a container state in one word, with a waiting reason and
// message.
func stateWord(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated"
	case s.Waiting != nil:
		return "waiting " + s.Waiting.Reason + ": " + s.Waiting.Message
	}
	return "none"
}

// TestCrashLoopCurveAsUpstream (B1, B3, E2): a container that exits
// after 2 s every time is restarted at once after its first exit (no
// CrashLoopBackOff at restartCount 0), then waits 10 s and 20 s, with
// upstream's waiting message and BackOff event (format.Pod:
// name_namespace(uid)); backoff-respected holds throughout.
func TestCrashLoopCurveAsUpstream(t *testing.T) {
	h := start(t, 27)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("crash", h.NodeName, Exits("app", 2*time.Second, 1)))
	states := containerStates(t, h, c, "crash", "app", 45*time.Second)
	if v := c.Violations(); len(v) > 0 {
		t.Fatalf("invariants broken: %v", v)
	}
	fp := fmt.Sprintf("crash_default(%s)", pod.UID)
	var backoffs []string
	for _, s := range states {
		if i := len("0 waiting CrashLoopBackOff"); len(s) > i && s[2:i] == "waiting CrashLoopBackOff" {
			backoffs = append(backoffs, s)
		}
	}
	want := []string{
		"1 waiting CrashLoopBackOff: back-off 10s restarting failed container=app pod=" + fp,
		"2 waiting CrashLoopBackOff: back-off 20s restarting failed container=app pod=" + fp,
	}
	if len(backoffs) < 2 {
		t.Fatalf("states %q: want CrashLoopBackOff after the 2nd and 3rd exits", states)
	}
	if diff := cmp.Diff(want, backoffs[:2]); diff != "" {
		t.Errorf("CrashLoopBackOff states (-want +got):\n%s\nall states: %q", diff, states)
	}
	if !slices.Contains(states, "1 running") {
		t.Errorf("states %q: the first exit was not restarted at once", states)
	}
	starts := instancesOf(h, c, pod.UID, "app")
	if len(starts) < 4 {
		t.Fatalf("%d instances after 45 s, want at least 4: %+v", len(starts), starts)
	}
	for i, w := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		if gap := starts[i+1].Started - starts[i].Finished; gap < w || gap > w+2*time.Second {
			t.Errorf("restart %d came %v after the exit, want %v (+≤2s)", i+1, gap, w)
		}
	}
	events := eventsOf(h, pod.UID, "BackOff")
	if len(events) != 1 || !hasPrefix(events[0], "BackOff Back-off restarting failed container app in pod "+fp+" x") {
		t.Errorf("BackOff events %q, want one \"Back-off restarting failed container app in pod %s\"", events, fp)
	}
}

// TestLivenessKillRestartsInTheSameSync (B1 after a probe kill): a
// container killed for its liveness probe is started again in the same
// sync, as upstream's computePodActions does; the back-off is judged on
// the instance that exited before the killed one, so a container that
// runs well past its back-off between kills never waits.
func TestLivenessKillRestartsInTheSameSync(t *testing.T) {
	h := start(t, 28)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("live", h.NodeName, Grace(1), Env("app", "FAKECRI_EXEC", "alive=1"),
		WithProbe("app", LivenessProbe, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"alive"}}},
			PeriodSeconds: 10, FailureThreshold: 3, InitialDelaySeconds: 1})))
	// Killed every 30 s (3 failures 10 s apart): at each of the first
	// four kills the back-off (none, none, 10 s, 20 s) has passed since
	// the earlier exit; the fifth, 30 s after it, would wait its 40 s.
	states := containerStates(t, h, c, "live", "app", 140*time.Second)
	if v := c.Violations(); len(v) > 0 {
		t.Fatalf("invariants broken: %v", v)
	}
	if n := restartCount(h, pod, "app"); n != 4 {
		t.Errorf("restartCount %d after 140 s, want 4 (states %q)", n, states)
	}
	for _, in := range instancesOf(h, c, pod.UID, "app") {
		if in.Finished == 0 {
			continue
		}
		if _, ok := findStart(instancesOf(h, c, pod.UID, "app"), in.Finished); !ok {
			t.Errorf("no instance started when the one killed at %v stopped (want a restart in the same sync)", in.Finished)
		}
	}
	for _, s := range states {
		if s != "0 waiting ContainerCreating: " && s[2:] != "running" {
			t.Errorf("state %q: want no waiting between probe kills (all states %q)", s, states)
		}
	}
}

// findStart finds an instance started within 2 s after at.
func findStart(insts []instanceTimes, at time.Duration) (instanceTimes, bool) {
	for _, in := range insts {
		if in.Started >= at && in.Started-at <= 2*time.Second {
			return in, true
		}
	}
	return instanceTimes{}, false
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// TestConfigErrorTextsAsUpstream (E4, E1): a container whose env names a
// missing configMap, or a missing key of one, waits in
// CreateContainerConfigError with the kubelet's words as its message and
// a Failed event "Error: <them>", not lockstep's wrapped Go error; a
// container that starts gets "Container created" and "Container started".
func TestConfigErrorTextsAsUpstream(t *testing.T) {
	h := start(t, 29)
	c := NewChecker(h)
	h.API.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}})
	nosuch := mustCreate(t, h, NewPod("nosuch", h.NodeName, func(p *corev1.Pod) {
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nosuch"}}}}
	}))
	keyless := mustCreate(t, h, NewPod("keyless", h.NodeName, func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "absent"}}}}
	}))
	fine := mustCreate(t, h, NewPod("fine", h.NodeName))
	checked(t, h, c, 20*time.Second)
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{nosuch, `configmap "nosuch" not found`},
		{keyless, "couldn't find key absent in ConfigMap default/settings"},
	} {
		if r, msg := waitingReason(h, tc.pod.Name); r != "CreateContainerConfigError" || msg != tc.want {
			t.Errorf("pod %s waits %s %q, want CreateContainerConfigError %q", tc.pod.Name, r, msg, tc.want)
		}
		events := eventsOf(h, tc.pod.UID, "Failed")
		if len(events) != 1 || !hasPrefix(events[0], "Failed Error: "+tc.want+" x") {
			t.Errorf("pod %s Failed events %q, want \"Error: %s\"", tc.pod.Name, events, tc.want)
		}
	}
	if diff := cmp.Diff([]string{"Created Container created x1", "Started Container started x1"}, eventsOf(h, fine.UID, "Created", "Started")); diff != "" {
		t.Errorf("events of a started container (-want +got):\n%s", diff)
	}
}

// TestRecursiveReadOnlyAsUpstream (known difference 3): on a runtime
// whose handlers do not report recursive read-only mounts (fakecri's),
// a mount asking for them Enabled fails its container with
// CreateContainerConfigError in the kubelet's words, and no container is
// created; IfPossible falls back to a plain read-only mount and runs.
func TestRecursiveReadOnlyAsUpstream(t *testing.T) {
	h := start(t, 30)
	c := NewChecker(h)
	withRRO := func(mode corev1.RecursiveReadOnlyMode) PodOption {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &mode})
		}
	}
	rro := mustCreate(t, h, NewPod("rro", h.NodeName, withRRO(corev1.RecursiveReadOnlyEnabled)))
	mustCreate(t, h, NewPod("ifpossible", h.NodeName, withRRO(corev1.RecursiveReadOnlyIfPossible)))
	checked(t, h, c, 20*time.Second)
	const want = `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime`
	if r, msg := waitingReason(h, "rro"); r != "CreateContainerConfigError" || msg != want {
		t.Errorf("rro waits %s %q, want CreateContainerConfigError %q", r, msg, want)
	}
	if events := eventsOf(h, rro.UID, "Failed"); len(events) != 1 || !hasPrefix(events[0], "Failed Error: "+want+" x") {
		t.Errorf("rro Failed events %q, want \"Error: %s\"", events, want)
	}
	if cs := PodContainers(h, rro.UID); len(cs) != 0 {
		t.Errorf("containers created for rro: %+v", cs)
	}
	if !PodIs(h, "default", "ifpossible", corev1.PodRunning, true) {
		t.Errorf("ifpossible is not Running and ready")
	}
}

// TestEnvFileKeyRefAsUpstream (known difference 5): env
// valueFrom.fileKeyRef reads the key from the file an init container
// wrote into an emptyDir (here the test writes it into the volume's host
// directory while the init container runs), in the kubelet's v1.37
// format (KEY='value'); a file in another format fails the container
// with the kubelet's "couldn't parse env file".
func TestEnvFileKeyRefAsUpstream(t *testing.T) {
	h := start(t, 31)
	c := NewChecker(h)
	envFile := func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		p.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "KEY", ValueFrom: &corev1.EnvVarSource{
			FileKeyRef: &corev1.FileKeySelector{VolumeName: "config", Path: "env", Key: "KEY"}}})
	}
	good := mustCreate(t, h, NewPod("envfile", h.NodeName, Init("setup", 4*time.Second, 0), envFile))
	bad := mustCreate(t, h, NewPod("badfile", h.NodeName, Init("setup", 4*time.Second, 0), envFile))
	checked(t, h, c, 2*time.Second)
	for pod, content := range map[*corev1.Pod]string{good: "KEY='value-from-file'\n", bad: "KEY=value-from-file\n"} {
		path := podspec.PodVolumesDir("", pod.UID) + "/" + podspec.PluginEmptyDir + "/config/env"
		if err := h.Files.CreateFile(path, []byte(content), 0o644); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
	// The failed start shows at the sync after the one that failed (the
	// status is set before a sync's actions, as the kubelet's), which
	// comes after the worker's back-off of 10 s (jittered up to 15 s).
	checked(t, h, c, 30*time.Second)
	if !PodIs(h, "default", "envfile", corev1.PodRunning, true) {
		t.Fatalf("envfile is not Running and ready")
	}
	got := "(no app container)"
	for _, ct := range PodContainers(h, good.UID) {
		if ct.Name == "app" {
			cfg, _ := h.Runtime.TrueContainerConfig(ct.ID)
			got = "(unset)"
			for _, kv := range cfg.GetEnvs() {
				if kv.GetKey() == "KEY" {
					got = string(kv.GetValue())
				}
			}
		}
	}
	if got != "value-from-file" {
		t.Errorf("app's KEY = %q, want value-from-file", got)
	}
	if r, msg := waitingReason(h, "badfile"); r != "CreateContainerConfigError" || msg != "couldn't parse env file" {
		t.Errorf("badfile waits %s %q, want CreateContainerConfigError \"couldn't parse env file\"", r, msg)
	}
}
