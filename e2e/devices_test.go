//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeDevices is the node's capacity and allocatable of resource ("" when
// absent).
func (e *env) nodeDevices(t *testing.T, res corev1.ResourceName) (string, string, error) {
	n, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	var c, a string
	if q, ok := n.Status.Capacity[res]; ok {
		c = q.String()
	}
	if q, ok := n.Status.Allocatable[res]; ok {
		a = q.String()
	}
	return c, a, nil
}

// TestDevicePluginOnContainerd: the sample device plugin (`lockstep
// deviceplugin`) registers with the node's <root-dir>/device-plugins,
// the node shows example.com/foo: 4; a pod requesting 2 runs and sees
// FOO_DEVICE with two ids and the plugin's host directory mounted at
// /dev/foo; lockstep restarts, the plugin registers again and a second
// pod gets the two other devices (the checkpoint kept the first pod's)
// while the first runs on untouched; once the plugin stops, allocatable drops to 0 (capacity stays
// until the 5 min grace passes, which leaves other tests unaffected:
// they request no example.com/foo).
func TestDevicePluginOnContainerd(t *testing.T) {
	e := setup(t)
	const res = corev1.ResourceName("example.com/foo")
	hostDir, err := os.MkdirTemp("", "lockstep-e2e-foo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	if err := os.WriteFile(filepath.Join(hostDir, "marker"), []byte("foo-host-dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(e.dir, "logs", "deviceplugin.log"))
	if err != nil {
		logf, err = os.CreateTemp("", "deviceplugin-*.log")
		if err != nil {
			t.Fatal(err)
		}
	}
	defer logf.Close()
	plugin := exec.Command(filepath.Join(e.dir, "bin", "lockstep"), "deviceplugin", "--resource", string(res), "--count", "4",
		"--dir", filepath.Join(e.dir, "lockstep", "device-plugins"), "--host-dir", hostDir)
	plugin.Stdout, plugin.Stderr = logf, logf
	if err := plugin.Start(); err != nil {
		t.Fatalf("start the sample device plugin: %v", err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = plugin.Process.Signal(syscall.SIGTERM)
		_ = plugin.Wait()
	}
	t.Cleanup(stop)

	start := time.Now()
	poll(t, 60*time.Second, "node capacity and allocatable example.com/foo: 4", func() (bool, error) {
		c, a, err := e.nodeDevices(t, res)
		return c == "4" && a == "4", fmt.Errorf("capacity %q allocatable %q (%v)", c, a, err)
	})
	t.Logf("FIGURE device plugin start to node allocatable 4: %v", time.Since(start).Round(time.Millisecond))

	p, ids := e.devicePod(t, res, 2)
	before := e.get(t, p).Status.ContainerStatuses[0].ContainerID

	// lockstep restarts: the plugin registers again on the new socket, the
	// checkpoint keeps p's devices, and a second pod gets the other two.
	e.restartLockstep(t)
	poll(t, 30*time.Second, "the plugin registered again", func() (bool, error) {
		b, err := os.ReadFile(logf.Name())
		return strings.Count(string(b), "device plugin registered") >= 2, err
	})
	p2, ids2 := e.devicePod(t, res, 2)
	for _, id := range ids2 {
		if slices.Contains(ids, id) {
			t.Errorf("pod %s got %v, overlapping pod %s's %v held across the restart", p2.Name, ids2, p.Name, ids)
		}
	}
	if got := e.get(t, p); !podReady(got) || got.Status.ContainerStatuses[0].ContainerID != before {
		t.Errorf("pod %s after the restart: ready %v, container %s; want the same container %s", p.Name, podReady(got), got.Status.ContainerStatuses[0].ContainerID, before)
	}

	// After the restart the node reports the devices again (all healthy:
	// allocatable counts held devices too) before the plugin stops.
	poll(t, 60*time.Second, "node allocatable example.com/foo: 4 after the restart", func() (bool, error) {
		c, a, err := e.nodeDevices(t, res)
		return c == "4" && a == "4", fmt.Errorf("capacity %q allocatable %q (%v)", c, a, err)
	})
	stop()
	start = time.Now()
	poll(t, 60*time.Second, "node allocatable example.com/foo: 0 after the plugin stopped", func() (bool, error) {
		c, a, err := e.nodeDevices(t, res)
		return c == "4" && a == "0", fmt.Errorf("capacity %q allocatable %q (%v)", c, a, err)
	})
	t.Logf("FIGURE device plugin stop to node allocatable 0: %v", time.Since(start).Round(time.Millisecond))
	// The running pods keep their devices.
	for _, pod := range []*corev1.Pod{p, p2} {
		if got := e.get(t, pod); !podReady(got) {
			t.Errorf("pod %s not Running and Ready after the plugin stopped: %s", pod.Name, got.Status.Phase)
		}
	}
}

// devicePod creates a pod requesting n devices of res that prints its
// device env and reads the mounted host directory, waits for it to run
// and returns it with its device ids.
func (e *env) devicePod(t *testing.T, res corev1.ResourceName, n int) (*corev1.Pod, []string) {
	t.Helper()
	p := e.pod("devices", false, "echo FOO=$FOO_DEVICE; cat /dev/foo/marker; sleep 3600")
	q := corev1.ResourceList{res: *resource.NewQuantity(int64(n), resource.DecimalSI)}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Running and Ready", podReady)
	var body string
	poll(t, 15*time.Second, "the device env and mount in the pod's log", func() (bool, error) {
		var code int
		code, body = e.logs(t, p, "c", e.adminTok)
		return code == 200 && strings.Contains(body, "foo-host-dir"), fmt.Errorf("%d %q", code, body)
	})
	var ids []string
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "FOO="); ok {
			ids = strings.Split(v, ",")
		}
	}
	distinct := map[string]bool{}
	for _, id := range ids {
		if strings.HasPrefix(id, "foo-") {
			distinct[id] = true
		}
	}
	if len(ids) != n || len(distinct) != n {
		t.Errorf("pod %s: FOO_DEVICE = %v, want %d distinct foo-<n> ids (log %q)", p.Name, ids, n, body)
	}
	return p, ids
}
