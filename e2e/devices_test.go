//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// /dev/foo; once the plugin stops, allocatable drops to 0 (capacity stays
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

	p := e.pod("devices", false, "echo FOO=$FOO_DEVICE; cat /dev/foo/marker; sleep 3600")
	two := corev1.ResourceList{res: resource.MustParse("2")}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: two, Limits: two}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Running and Ready", podReady)
	var body string
	poll(t, 15*time.Second, "the device env and mount in the pod's log", func() (bool, error) {
		var code int
		code, body = e.logs(t, p, "c", e.adminTok)
		return code == 200 && strings.Contains(body, "foo-host-dir"), fmt.Errorf("%d %q", code, body)
	})
	var ids string
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "FOO="); ok {
			ids = v
		}
	}
	if got := strings.Split(ids, ","); len(got) != 2 || !strings.HasPrefix(got[0], "foo-") || !strings.HasPrefix(got[1], "foo-") || got[0] == got[1] {
		t.Errorf("FOO_DEVICE = %q, want two distinct foo-<n> ids (log %q)", ids, body)
	}

	stop()
	start = time.Now()
	poll(t, 60*time.Second, "node allocatable example.com/foo: 0 after the plugin stopped", func() (bool, error) {
		c, a, err := e.nodeDevices(t, res)
		return c == "4" && a == "0", fmt.Errorf("capacity %q allocatable %q (%v)", c, a, err)
	})
	t.Logf("FIGURE device plugin stop to node allocatable 0: %v", time.Since(start).Round(time.Millisecond))
	// The running pod keeps its devices.
	if got := e.get(t, p); !podReady(got) {
		t.Errorf("pod %s not Running and Ready after the plugin stopped: %s", p.Name, got.Status.Phase)
	}
}
