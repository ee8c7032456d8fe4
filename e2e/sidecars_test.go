//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sidecar is a restartable init container (restartPolicy Always) running
// cmd.
func sidecar(name, cmd string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.Container{Name: name, Image: busybox, ImagePullPolicy: corev1.PullNever,
		Command: []string{"sh", "-c", cmd}, RestartPolicy: &always}
}

func initStatusOf(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// TestNativeSidecarOnContainerd: a sidecar writes a file in a shared
// emptyDir when it starts; the app, started after it, finds the file; the
// pod is Ready with the sidecar reported running, started and ready, and
// Initialized.
func TestNativeSidecarOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("sidecar", false, `if test -f /shared/proxy-up; then echo saw-sidecar; else echo no-sidecar; fi; `+sleeper)
	p.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("shared", "/shared")}
	proxy := sidecar("proxy", `touch /shared/proxy-up; `+sleeper)
	proxy.VolumeMounts = []corev1.VolumeMount{mount("shared", "/shared")}
	p.Spec.InitContainers = []corev1.Container{proxy}
	p = e.create(t, p)
	got := e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	e.waitLogs(t, p, "c", "saw-sidecar", 20*time.Second)
	cs := initStatusOf(got, "proxy")
	if cs == nil || cs.State.Running == nil || cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("sidecar status %+v: want running, started and ready", cs)
	}
	if s := podCondition(got, corev1.PodInitialized); s != corev1.ConditionTrue {
		t.Errorf("Initialized %q, want True", s)
	}
}

// TestJobWithSidecarSucceedsOnContainerd: a restartPolicy Never pod whose
// app exits 0 after 2 s beside a sidecar that would run forever: the
// sidecar is stopped and the pod is Succeeded, nothing left running in
// containerd.
func TestJobWithSidecarSucceedsOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("sidecar-job", false, `sleep 2; echo job-done`)
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.InitContainers = []corev1.Container{sidecar("proxy", sleeper)}
	p = e.create(t, p)
	got := e.waitPod(t, p, 90*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if cs := initStatusOf(got, "proxy"); cs == nil || cs.State.Terminated == nil || cs.RestartCount != 0 {
		t.Errorf("sidecar status %+v: want terminated, never restarted", cs)
	}
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("app state %+v, want terminated with 0", got.Status.ContainerStatuses[0].State)
	}
	poll(t, 30*time.Second, "no running container of the finished pod", func() (bool, error) {
		_, cs := e.criOf(t, string(p.UID))
		for _, c := range cs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false, fmt.Errorf("%s still runs", c.Metadata.GetName())
			}
		}
		return true, nil
	})
}

// TestActiveDeadlineOnContainerd: a pod with activeDeadlineSeconds 5 whose
// container would run forever is Failed with reason DeadlineExceeded and
// its container stopped.
func TestActiveDeadlineOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("deadline", false, sleeper)
	deadline := int64(5)
	p.Spec.ActiveDeadlineSeconds = &deadline
	p = e.create(t, p)
	got := e.waitPod(t, p, 60*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if got.Status.Reason != "DeadlineExceeded" || got.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q message %q", got.Status.Reason, got.Status.Message)
	}
	poll(t, 30*time.Second, "the container stopped", func() (bool, error) {
		_, cs := e.criOf(t, string(p.UID))
		for _, c := range cs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false, fmt.Errorf("%s still runs", c.Metadata.GetName())
			}
		}
		return true, nil
	})
	found := false
	for _, ev := range e.events(t, p) {
		if ev == "DeadlineExceeded: Pod was active on the node longer than the specified deadline" {
			found = true
		}
	}
	if !found {
		t.Errorf("no DeadlineExceeded event: %q", e.events(t, p))
	}
}

// TestEphemeralContainerOnContainerd: a debug container added through the
// pods/ephemeralcontainers subresource (what kubectl debug does) runs in
// the pod's sandbox, in the process namespace of its target: it sees the
// target's process, prints what it saw, and is reported terminated in
// ephemeralContainerStatuses, never restarted.
func TestEphemeralContainerOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("debugged", false, `sleep 3607 & wait`)
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	cur := e.get(t, p)
	cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "c", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: busybox, ImagePullPolicy: corev1.PullNever,
		Command: []string{"sh", "-c", `if ps | grep -v grep | grep -q "sleep 3607"; then echo target-visible; else echo target-hidden; fi`},
	}}}
	ctx := ctxT(t, 20*time.Second)
	if _, err := e.admin.CoreV1().Pods(p.Namespace).UpdateEphemeralContainers(ctx, p.Name, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update ephemeral containers of %s: %v", p.Name, err)
	}
	got := e.waitPod(t, p, 60*time.Second, "debugger terminated", func(p *corev1.Pod) bool {
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
	})
	if cs := got.Status.EphemeralContainerStatuses[0]; cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 {
		t.Errorf("debugger status %+v", cs)
	}
	e.waitLogs(t, p, "debugger", "target-visible", 20*time.Second)
	// The worker has stepped after the debugger exited and the PLEG has
	// relisted twice since its last step: a restart would be a step.
	e.waitPodsSettled(t, 30*time.Second, p)
	_, cs := e.criOf(t, string(p.UID))
	n := 0
	for _, c := range cs {
		if c.Metadata.GetName() == "debugger" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d instances of the debugger in containerd, want 1", n)
	}
	if !podReady(e.get(t, p)) {
		t.Error("the pod is no longer Ready")
	}
}
