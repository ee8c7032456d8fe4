//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// evictedFor waits for p to be Failed/Evicted and checks the kubelet's
// message, the DisruptionTarget condition and the Evicted event.
func (e *env) evictedFor(t *testing.T, p *corev1.Pod, wantMessage string) {
	t.Helper()
	start := time.Now()
	got := e.waitPod(t, p, 90*time.Second, "Failed Evicted", failedWith("Evicted"))
	t.Logf("FIGURE pod %s evicted %v after the check began", p.Name, time.Since(start).Round(time.Second))
	if got.Status.Message != wantMessage {
		t.Errorf("eviction message %q, want %q", got.Status.Message, wantMessage)
	}
	var dt *corev1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == corev1.DisruptionTarget {
			dt = &got.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != corev1.ConditionTrue || dt.Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("DisruptionTarget condition %+v", dt)
	}
	poll(t, 30*time.Second, "Evicted event on the pod", func() (bool, error) {
		evs, err := e.admin.CoreV1().Events(p.Namespace).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + p.Name + ",reason=Evicted"})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Message == wantMessage {
				return true, nil
			}
		}
		return false, nil
	})
	// Evicted pods are never restarted: the containers stay stopped.
	e.waitCRIStopped(t, string(p.UID), 30*time.Second)
	// Its worker has run its last step (terminated) and the PLEG has
	// relisted twice since: a restart would be a further step.
	e.waitPodsSettled(t, 30*time.Second, p)
	if cur := e.get(t, p); cur.Status.Phase != corev1.PodFailed {
		t.Errorf("evicted pod left Failed: phase %s", cur.Status.Phase)
	}
}

// waitCRIStopped waits until no container of the pod runs in containerd.
func (e *env) waitCRIStopped(t *testing.T, uid string, d time.Duration) {
	t.Helper()
	poll(t, d, "pod's containers stopped in containerd", func() (bool, error) {
		_, cs := e.criOf(t, uid)
		for _, c := range cs {
			if c.GetState().String() == "CONTAINER_RUNNING" {
				return false, nil
			}
		}
		return true, nil
	})
}

// A pod whose emptyDir (sizeLimit 1Mi) gets 4Mi written is evicted with
// the kubelet's reason and message.
func TestEmptyDirOverSizeLimitIsEvicted(t *testing.T) {
	e := setup(t)
	limit := resource.MustParse("1Mi")
	p := e.pod("emptydir-limit", true, "dd if=/dev/zero of=/data/fill bs=1048576 count=4 && echo written; while :; do sleep 1; done")
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p = e.create(t, p)
	e.evictedFor(t, p, `Usage of EmptyDir volume "data" exceeds the limit "1Mi". `)
}

// A pod under its emptyDir sizeLimit keeps running through several
// eviction cycles.
func TestEmptyDirUnderSizeLimitKeepsRunning(t *testing.T) {
	e := setup(t)
	limit := resource.MustParse("8Mi")
	p := e.pod("emptydir-under", true, "dd if=/dev/zero of=/data/fill bs=1048576 count=2 && echo written; while :; do sleep 1; done")
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Running and Ready", podReady)
	e.waitLogs(t, p, "c", "written", 20*time.Second)
	// Two whole eviction cycles after the write (the first one counted
	// may have sampled before it), each with a fresh stats sample.
	e.waitMoreCycles(t, metricEvictCycles, nil, 3, 45*time.Second)
	if got := e.get(t, p); !podReady(got) {
		t.Errorf("pod under its sizeLimit stopped: phase %s reason %q message %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}

// A container that writes 10Mi to its root filesystem over its 5Mi
// ephemeral-storage limit is evicted, its pod's total staying under the
// pod's limit (a second container has room): the container's message.
// (The conformance spec "Pods Extended ... evicted pods should be
// terminal" runs the one-container shape, where the pod's total limit is
// met first, as upstream checks it first.)
func TestContainerOverEphemeralStorageLimitIsEvicted(t *testing.T) {
	e := setup(t)
	p := e.pod("ephemeral-limit", true, "dd if=/dev/zero of=/fill bs=1048576 count=10 && echo written; while :; do sleep 1; done")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("5Mi")},
	}
	roomy := p.Spec.Containers[0]
	roomy.Name, roomy.Command = "roomy", []string{"sh", "-c", "while :; do sleep 1; done"}
	roomy.Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("100Mi")},
	}
	p.Spec.Containers = append(p.Spec.Containers, roomy)
	p = e.create(t, p)
	e.evictedFor(t, p, `Container c exceeded its local ephemeral storage limit "5Mi". `)
}

// A one-container pod over its ephemeral-storage limit (the conformance
// spec's shape) is evicted for the pod's total.
func TestPodOverEphemeralStorageLimitIsEvicted(t *testing.T) {
	e := setup(t)
	p := e.pod("pod-ephemeral-limit", true, "dd if=/dev/zero of=/fill bs=1048576 count=10 && echo written; while :; do sleep 1; done")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("5Mi")},
	}
	p = e.create(t, p)
	e.evictedFor(t, p, "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. ")
}
