//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/real/mounter"
)

// hostMount is one line of the test's /proc/self/mountinfo (the host's
// mount namespace, where containerd and lockstep run).
type hostMount struct {
	point  string
	shared bool
}

func hostMounts(t *testing.T) []hostMount {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []hostMount
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		m := hostMount{point: f[4]}
		for _, opt := range f[6:] {
			if opt == "-" {
				break
			}
			m.shared = m.shared || strings.HasPrefix(opt, "shared:")
		}
		out = append(out, m)
	}
	return out
}

// mountsAt lists the host's mounts at point.
func mountsAt(t *testing.T, point string) []hostMount {
	t.Helper()
	return slices.DeleteFunc(hostMounts(t), func(m hostMount) bool { return m.point != point })
}

// mountsBelow lists the host's mount points strictly below dir.
func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, m := range hostMounts(t) {
		if strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	return out
}

// execIn runs cmd in the running container name of pod uid through CRI.
func (e *env) execIn(t *testing.T, uid, name string, cmd ...string) (string, int32) {
	t.Helper()
	_, cs := e.criOf(t, uid)
	for _, c := range cs {
		if c.GetMetadata().GetName() == name && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r, err := e.cri.ExecSync(ctxT(t, 20*time.Second), &runtimeapi.ExecSyncRequest{ContainerId: c.GetId(), Cmd: cmd, Timeout: 15})
			if err != nil {
				t.Fatalf("exec %v in %s: %v", cmd, name, err)
			}
			return strings.TrimSpace(string(r.GetStdout())) + strings.TrimSpace(string(r.GetStderr())), r.GetExitCode()
		}
	}
	t.Fatalf("no running container %s in pod %s", name, uid)
	return "", 0
}

// TestMountPropagationBidirectional: lockstep's root directory is a
// shared mount (made so at start, once: a restart stacks no second bind
// mount), so a privileged container's Bidirectional mounts of an emptyDir
// and of a hostPath below the root directory work on containerd; the
// tmpfs it mounts inside both reaches the other container (HostToContainer)
// and the host. Once the pod is deleted, the tmpfs inside the emptyDir is
// unmounted and the pod's directory removed (the one inside the hostPath
// is the host's, left as upstream leaves it; the test unmounts it).
func TestMountPropagationBidirectional(t *testing.T) {
	e := setup(t)
	root := filepath.Join(e.dir, "lockstep")
	if ms := mountsAt(t, root); len(ms) != 1 || !ms[0].shared {
		t.Fatalf("mounts at the root directory %s: %+v, want one, shared", root, ms)
	}
	hostDir := filepath.Join(root, "e2e-propagation-"+rand.String(5))
	t.Cleanup(func() {
		if err := mounter.New().UnmountTree(hostDir); err != nil {
			t.Error(err)
		}
		os.RemoveAll(hostDir)
	})
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	bidi, h2c, yes := corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, true
	p := e.pod("propagation", false,
		`for d in /mnt/e /mnt/h; do mkdir -p $d/tmpfs && mount -t tmpfs e2e-propagation $d/tmpfs && echo master > $d/tmpfs/file; done; `+sleeper)
	p.Spec.Volumes = []corev1.Volume{
		{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}},
	}
	master := &p.Spec.Containers[0]
	master.Name = "master"
	master.SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	master.VolumeMounts = []corev1.VolumeMount{
		{Name: "e", MountPath: "/mnt/e", MountPropagation: &bidi},
		{Name: "h", MountPath: "/mnt/h", MountPropagation: &bidi},
	}
	slave := corev1.Container{Name: "slave", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", sleeper},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "e", MountPath: "/mnt/e", MountPropagation: &h2c},
			{Name: "h", MountPath: "/mnt/h", MountPropagation: &h2c},
		}}
	p.Spec.Containers = append(p.Spec.Containers, slave)
	p = e.create(t, p)
	t.Cleanup(func() { e.deleteAndWait(t, p, 60*time.Second) })
	e.waitPod(t, p, 90*time.Second, "Ready", podReady)
	uid := string(p.UID)
	emptyDir := filepath.Join(e.podDir(uid), "volumes", "kubernetes.io~empty-dir", "e")
	for _, dir := range []string{"/mnt/e", "/mnt/h"} {
		poll(t, 20*time.Second, "the slave sees the master's tmpfs in "+dir, func() (bool, error) {
			out, code := e.execIn(t, uid, "slave", "cat", dir+"/tmpfs/file")
			return code == 0 && out == "master", nil
		})
	}
	for _, dir := range []string{emptyDir, hostDir} {
		b, err := os.ReadFile(filepath.Join(dir, "tmpfs", "file"))
		if err != nil || strings.TrimSpace(string(b)) != "master" {
			t.Errorf("the host reads %q (%v) in %s/tmpfs, want the master's tmpfs", b, err, dir)
		}
		if len(mountsAt(t, filepath.Join(dir, "tmpfs"))) == 0 {
			t.Errorf("no mount at %s/tmpfs on the host", dir)
		}
	}

	e.restartLockstep(t)
	e.waitNodeReady(t, 60*time.Second)
	if ms := mountsAt(t, root); len(ms) != 1 {
		t.Errorf("after a restart, %d mounts at the root directory %s, want one (no stacked bind mount)", len(ms), root)
	}

	e.deleteAndWait(t, p, 60*time.Second)
	poll(t, 30*time.Second, "the pod's directory removed", func() (bool, error) {
		_, err := os.Stat(e.podDir(uid))
		return os.IsNotExist(err), err
	})
	if left := mountsBelow(t, e.podDir(uid)); len(left) > 0 {
		t.Errorf("mounts left below the deleted pod's directory: %v", left)
	}
}
