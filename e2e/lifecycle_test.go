//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stubborn ignores TERM: only SIGKILL at the end of the grace period stops it.
const stubborn = `trap "" TERM; echo stubborn; while :; do sleep 1; done`

// TestPreviousInstanceLogs reads the previous instance's log through the
// secure port, as `kubectl logs --previous` does: the dead instance must
// survive the restart and the housekeeping that follows it.
func TestPreviousInstanceLogs(t *testing.T) {
	e := setup(t)
	p := e.create(t, e.pod("previous", true, `echo "instance $(cat /proc/sys/kernel/random/uuid)"; sleep 4; exit 3`))
	got := e.waitPod(t, p, 90*time.Second, "restarted once and running again", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1 && cs[0].State.Running != nil
	})
	// Housekeeping runs every 2 s: give it several turns to (wrongly)
	// collect the previous instance before reading it.
	restarts := got.Status.ContainerStatuses[0].RestartCount
	var prev, cur string
	poll(t, 20*time.Second, "previous and current logs of distinct instances", func() (bool, error) {
		code, body := e.logsQuery(t, got, "c", e.adminTok, "previous=true")
		if code != 200 {
			return false, fmt.Errorf("previous: %d %q", code, body)
		}
		prev = body
		code, body = e.logs(t, got, "c", e.adminTok)
		if code != 200 {
			return false, fmt.Errorf("current: %d %q", code, body)
		}
		cur = body
		return strings.Contains(prev, "instance ") && strings.Contains(cur, "instance ") && prev != cur, fmt.Errorf("previous %q, current %q", prev, cur)
	})
	if now := e.get(t, p).Status.ContainerStatuses[0].RestartCount; now != restarts {
		t.Logf("restartCount moved from %d to %d while reading; previous still served", restarts, now)
	}
	// The previous instance itself stays in containerd beside the running
	// one, through several housekeeping turns (2 s each), not only its log
	// file: `kubectl logs --previous` reads the runtime's instance.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		_, ctrs := e.criOf(t, string(p.UID))
		exited := 0
		for _, c := range ctrs {
			if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				exited++
			}
		}
		if exited < 1 {
			t.Fatalf("containerd holds %d exited instances of the restarted container (of %d), want the previous one kept", exited, len(ctrs))
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Log shippers tail /var/log/containers/<pod>_<ns>_<container>-<id>.log.
	latest := e.get(t, p).Status.ContainerStatuses[0]
	id := strings.TrimPrefix(latest.ContainerID, "containerd://")
	link := filepath.Join(e.dir, "containers", fmt.Sprintf("%s_%s_c-%s.log", p.Name, p.Namespace, id))
	if target, err := os.Readlink(link); err != nil {
		t.Errorf("container log symlink: %v", err)
	} else if _, err := os.Stat(target); err != nil {
		t.Errorf("container log symlink %s points to %s: %v", link, target, err)
	}
	t.Logf("previous log %q, current log %q", strings.TrimSpace(prev), strings.TrimSpace(cur))
}

// TestShorterGraceAndForceDelete deletes a TERM-ignoring pod with a long
// grace period, then deletes it again with a short one (and, separately,
// forces it): the second delete must win, as with the upstream kubelet.
func TestShorterGraceAndForceDelete(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		name  string
		grace int64
		limit time.Duration
	}{
		{"shorter grace 5", 5, 20 * time.Second},
		{"force", 0, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.pod("regrace", true, stubborn)
			long := int64(120)
			p.Spec.TerminationGracePeriodSeconds = &long
			p = e.create(t, p)
			e.waitPod(t, p, 60*time.Second, "Ready", podReady)
			pods := e.admin.CoreV1().Pods(p.Namespace)
			if err := pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("first delete: %v", err)
			}
			e.waitPod(t, p, 10*time.Second, "marked for deletion", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
			// Let the agent begin the 120 s kill before shortening it.
			poll(t, 10*time.Second, "termination under way", func() (bool, error) {
				got, err := pods.Get(context.Background(), p.Name, metav1.GetOptions{})
				return err == nil && got.DeletionGracePeriodSeconds != nil && *got.DeletionGracePeriodSeconds == 120, err
			})
			start := time.Now()
			grace := tc.grace
			if err := pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
				t.Fatalf("second delete (grace %d): %v", grace, err)
			}
			poll(t, tc.limit, "no running container of the pod in containerd", func() (bool, error) {
				_, ctrs := e.criOf(t, string(p.UID))
				for _, c := range ctrs {
					if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
						return false, fmt.Errorf("container %s still running", c.Id)
					}
				}
				return true, nil
			})
			t.Logf("second delete with grace %d stopped the container after %v", grace, time.Since(start))
			e.waitGone(t, p, 30*time.Second)
			e.waitCRIEmpty(t, string(p.UID), 30*time.Second)
		})
	}
}

// TestStaticPodEditIsSerialised edits a static pod's manifest: the new
// version (a new UID) must start only after the old one has stopped, so two
// instances of the same static pod never run at once.
func TestStaticPodEditIsSerialised(t *testing.T) {
	e := setup(t)
	name := "static-edit"
	full := name + "-" + e.node
	manifest := func(version string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    env: [{name: VERSION, value: %q}]
    command: [sh, -c, 'trap "sleep 3; exit 0" TERM; echo $VERSION; while :; do sleep 1; done']
`, name, busybox, version))
	}
	path := filepath.Join(e.dir, "manifests", name+".yaml")
	if err := os.WriteFile(path, manifest("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	running := func() []*runtimeapi.Container {
		ctx := ctxT(t, 10*time.Second)
		cs, err := e.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.pod.name": full},
		}})
		if err != nil {
			t.Fatalf("ListContainers: %v", err)
		}
		return cs.Containers
	}
	var oldUID string
	poll(t, 60*time.Second, "v1 running", func() (bool, error) {
		cs := running()
		if len(cs) == 1 {
			oldUID = cs[0].Labels["io.kubernetes.pod.uid"]
		}
		return len(cs) == 1, fmt.Errorf("%d running", len(cs))
	})
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: full, Namespace: "default"}}
	e.waitPod(t, mirror, 60*time.Second, "mirror Ready", podReady)
	if err := os.WriteFile(path, manifest("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Watch containerd throughout the switch: never two at once.
	most := 0
	poll(t, 90*time.Second, "v2 running in place of v1", func() (bool, error) {
		cs := running()
		if len(cs) > most {
			most = len(cs)
		}
		return len(cs) == 1 && cs[0].Labels["io.kubernetes.pod.uid"] != oldUID, fmt.Errorf("%d running", len(cs))
	})
	if most > 1 {
		t.Errorf("saw %d running instances of static pod %s at once during the edit, want at most 1", most, full)
	}
	e.waitPod(t, mirror, 60*time.Second, "mirror of v2 Ready", func(p *corev1.Pod) bool {
		return podReady(p) && p.Annotations["kubernetes.io/config.hash"] != oldUID
	})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, mirror, 60*time.Second)
}
