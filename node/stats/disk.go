package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// VolumeUsage is what one of a pod's local volumes holds on disk.
type VolumeUsage struct {
	// Name is the volume's name in the pod's spec.
	Name string
	// UsedBytes and InodesUsed are its tree's usage (du).
	UsedBytes, InodesUsed uint64
}

// ContainerLogsUsage is what one of a pod's containers' logs hold on disk:
// every instance's log and its rotated files.
type ContainerLogsUsage struct {
	// Name is the container's name in the pod's spec.
	Name string
	// UsedBytes and InodesUsed are the usage of its log directory.
	UsedBytes, InodesUsed uint64
}

// podDisk is the local storage of the pods a sample measured: their
// emptyDir volumes and their containers' logs, by pod UID. A volume or log
// directory that does not exist (yet, or any more) is left out.
type podDisk struct {
	Volumes map[types.UID][]VolumeUsage
	Logs    map[types.UID][]ContainerLogsUsage
}

// measureDisk measures the emptyDir volumes and container log directories
// of pods. A tree that does not exist is left out; one that cannot be
// measured is left out too, and its error returned beside what could be
// (a volume the agent cannot read must not stop the evictions for memory).
func measureDisk(ctx context.Context, du deps.DiskUsage, cfg Config, pods []*corev1.Pod) (podDisk, error) {
	out := podDisk{Volumes: map[types.UID][]VolumeUsage{}, Logs: map[types.UID][]ContainerLogsUsage{}}
	var errs []error
	for _, pod := range pods {
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if v.EmptyDir == nil {
				continue
			}
			dir := podspec.VolumeDir(cfg.RootDir, pod.UID, v)
			u, ok, err := dirUsage(ctx, du, dir)
			if err != nil {
				errs = append(errs, fmt.Errorf("usage of emptyDir volume %q of pod %s/%s: %w", v.Name, pod.Namespace, pod.Name, err))
			}
			if ok {
				out.Volumes[pod.UID] = append(out.Volumes[pod.UID], VolumeUsage{Name: v.Name, UsedBytes: u.Bytes, InodesUsed: u.Inodes})
			}
		}
		logDir := podspec.LogDirectory(cfg.PodLogsRoot, podspec.RefOf(pod))
		for _, name := range containerNames(pod) {
			u, ok, err := dirUsage(ctx, du, filepath.Join(logDir, name))
			if err != nil {
				errs = append(errs, fmt.Errorf("usage of the logs of container %q of pod %s/%s: %w", name, pod.Namespace, pod.Name, err))
			}
			if ok {
				out.Logs[pod.UID] = append(out.Logs[pod.UID], ContainerLogsUsage{Name: name, UsedBytes: u.Bytes, InodesUsed: u.Inodes})
			}
		}
	}
	return out, errors.Join(errs...)
}

// dirUsage measures dir; ok is false when it does not exist.
func dirUsage(ctx context.Context, du deps.DiskUsage, dir string) (deps.DirUsage, bool, error) {
	u, err := du.DirUsage(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return deps.DirUsage{}, false, nil
	}
	if err != nil {
		return deps.DirUsage{}, false, err
	}
	return u, true, nil
}

// containerNames are the names of a pod's init and regular containers.
func containerNames(pod *corev1.Pod) []string {
	names := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}
