//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readdManifest is a static pod manifest of name with grace seconds of
// grace, running image with the shell command cmd ("": the image's own,
// for an image without a shell) — the shape of upstream's node e2e specs.
func readdManifest(name, image string, grace int, cmd string) string {
	command := ""
	if cmd != "" {
		command = fmt.Sprintf("    command: [sh, -c, %q]\n", cmd)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: %d
  containers:
  - name: c
    image: %s
    imagePullPolicy: IfNotPresent
%s`, name, grace, image, command)
}

// termTrapper traps TERM and keeps running till it is killed.
const termTrapper = `trap "sleep 100" TERM; while :; do sleep 1; done`

// TestStaticManifestRemovedAndWrittenBack: upstream's node e2e "should
// successfully recreate when file is removed and recreated" on
// containerd — the manifest removed and written back unchanged at once
// restarts the static pod (restart count 1), its mirror pod Running.
func TestStaticManifestRemovedAndWrittenBack(t *testing.T) {
	e := setup(t)
	name := "static-readd"
	manifest := readdManifest(name, busybox, 5, sleeper)
	path := filepath.Join(e.dir, "manifests", name+".yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + e.node, Namespace: "default"}}
	e.waitPod(t, mirror, 60*time.Second, "mirror Running and Ready", podReady)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitPod(t, mirror, 60*time.Second, "mirror Running with restart count 1", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodRunning && len(cs) == 1 && cs[0].State.Running != nil && cs[0].RestartCount == 1
	})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, mirror, 60*time.Second)
}

// TestStaticManifestRewrittenDuringTermination: upstream's node e2e
// "should update a static pod when the static pod is updated multiple
// times during the graceful termination period", shortened — the running
// version traps TERM for its whole grace period while the manifest is
// rewritten 30 times 100 ms apart (images that do not exist), then once
// more with a real image; the mirror pod ends as that last version,
// Running.
func TestStaticManifestRewrittenDuringTermination(t *testing.T) {
	e := setup(t)
	name := "static-burst"
	path := filepath.Join(e.dir, "manifests", name+".yaml")
	write := func(image, cmd string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(readdManifest(name, image, 5, cmd)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(busybox, termTrapper)
	t.Cleanup(func() { os.Remove(path) })
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + e.node, Namespace: "default"}}
	first := e.waitPod(t, mirror, 60*time.Second, "mirror Running and Ready", podReady)
	for i := range 30 {
		write(fmt.Sprintf("localhost:1/lockstep-e2e-missing-%d:v1", i), termTrapper)
		time.Sleep(100 * time.Millisecond)
	}
	write(pauseImage, "")
	got := e.waitPod(t, mirror, 90*time.Second, "mirror of the last version Running", func(p *corev1.Pod) bool {
		return p.UID != first.UID && p.Status.Phase == corev1.PodRunning && len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == pauseImage
	})
	if img := got.Spec.Containers[0].Image; img != pauseImage {
		t.Errorf("mirror pod image %s, want the last version's %s", img, pauseImage)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, mirror, 60*time.Second)
}
