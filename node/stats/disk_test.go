package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// fakeDU answers from a map of paths; others do not exist.
type fakeDU map[string]deps.DirUsage

func (f fakeDU) DirUsage(_ context.Context, path string) (deps.DirUsage, error) {
	if path == "/logs/ns_web_u1/init" {
		return deps.DirUsage{}, errors.New("permission denied")
	}
	u, ok := f[path]
	if !ok {
		return deps.DirUsage{}, fmt.Errorf("disk usage of %s: %w", path, fs.ErrNotExist)
	}
	return u, nil
}

// The emptyDir, configMap and secret volumes and every container's log
// directory are measured where they are laid out; other volume kinds and
// missing directories are left out.
func TestMeasureLocal(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "ns", "u1"
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "later", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}},
	}
	pod.Spec.Containers = []corev1.Container{{Name: "app"}}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
	du := fakeDU{
		"/root/pods/u1/volumes/kubernetes.io~empty-dir/cache": {Bytes: 4096, Inodes: 2},
		"/root/pods/u1/volumes/kubernetes.io~configmap/conf":  {Bytes: 1, Inodes: 1},
		"/logs/ns_web_u1/app":                                 {Bytes: 8192, Inodes: 3},
		"/logs/ns_web_u1/debug":                               {Bytes: 10, Inodes: 2},
		"/etc":                                                {Bytes: 1 << 20, Inodes: 100},
	}
	pod.Spec.InitContainers = nil
	got, err := measureLocal(context.Background(), du, Config{RootDir: "/root", PodLogsRoot: "/logs"}, []*corev1.Pod{pod})
	if err != nil {
		t.Fatal(err)
	}
	want := localUsage{
		Volumes: map[types.UID]map[string]FsUsage{"u1": {"cache": {UsedBytes: 4096, InodesUsed: 2}, "conf": {UsedBytes: 1, InodesUsed: 1}}},
		Logs:    map[types.UID]map[string]FsUsage{"u1": {"app": {UsedBytes: 8192, InodesUsed: 3}, "debug": {UsedBytes: 10, InodesUsed: 2}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("measureLocal (-want +got):\n%s", diff)
	}
	// Any other failure is reported, naming the container, beside what
	// could be measured.
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	got, err = measureLocal(context.Background(), du, Config{RootDir: "/root", PodLogsRoot: "/logs"}, []*corev1.Pod{pod})
	if err == nil || !strings.Contains(err.Error(), `container "init" of pod ns/web`) {
		t.Errorf("a failed measure reported as %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("measureLocal with a failure (-want +got):\n%s", diff)
	}
}
