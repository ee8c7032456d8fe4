package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// localUsage is what a sample measured of the pods' local storage through
// the DiskUsage port, one walk per directory: pod UID → volume name (or
// container name) → usage. A volume or log directory that does not exist
// (yet, or any more) is left out.
type localUsage struct {
	Volumes map[types.UID]map[string]FsUsage
	Logs    map[types.UID]map[string]FsUsage
}

// measureLocal measures the volumes their plugins measure and
// the container log directories of pods, each tree once. A tree that does
// not exist is left out; one that cannot be measured is left out too, and
// its error returned beside what could be (a volume the agent cannot read
// must not stop the evictions for memory).
func measureLocal(ctx context.Context, du deps.DiskUsage, cfg Config, pods []*corev1.Pod) (localUsage, error) {
	out := localUsage{Volumes: map[types.UID]map[string]FsUsage{}, Logs: map[types.UID]map[string]FsUsage{}}
	var errs []error
	for _, pod := range pods {
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if !measuredVolume(v) {
				continue
			}
			u, ok, err := dirUsage(ctx, du, podspec.VolumeDir(cfg.RootDir, pod.UID, v))
			if err != nil {
				errs = append(errs, fmt.Errorf("usage of volume %q of pod %s/%s: %w", v.Name, pod.Namespace, pod.Name, err))
			}
			if ok {
				put(out.Volumes, pod.UID, v.Name, u)
			}
		}
		logDir := podspec.LogDirectory(cfg.PodLogsRoot, podspec.RefOf(pod))
		for _, name := range containerNames(pod) {
			u, ok, err := dirUsage(ctx, du, filepath.Join(logDir, name))
			if err != nil {
				errs = append(errs, fmt.Errorf("usage of the logs of container %q of pod %s/%s: %w", name, pod.Namespace, pod.Name, err))
			}
			if ok {
				put(out.Logs, pod.UID, name, u)
			}
		}
	}
	return out, errors.Join(errs...)
}

// put sets m[uid][name] = u.
func put(m map[types.UID]map[string]FsUsage, uid types.UID, name string, u FsUsage) {
	if m[uid] == nil {
		m[uid] = map[string]FsUsage{}
	}
	m[uid][name] = u
}

// measuredVolume reports whether a volume's usage is measured, as its
// plugin says (emptyDir on disk or in memory, configMap, secret: the
// kinds whose data the node keeps for the pod, as upstream's ephemeral
// volumes).
func measuredVolume(v *corev1.Volume) bool {
	p, ok := plugin.For(v)
	return ok && p.Storage(v).Measured
}

// dirUsage measures dir; ok is false when it does not exist.
func dirUsage(ctx context.Context, du deps.DiskUsage, dir string) (FsUsage, bool, error) {
	u, err := du.DirUsage(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return FsUsage{}, false, nil
	}
	if err != nil {
		return FsUsage{}, false, err
	}
	return FsUsage{UsedBytes: u.Bytes, InodesUsed: u.Inodes}, true, nil
}

// containerNames are the names of a pod's init, regular and ephemeral
// containers.
func containerNames(pod *corev1.Pod) []string {
	names := make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)+len(pod.Spec.EphemeralContainers))
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

// rootfsUsage is each running container's writable layer from the
// runtime's stats, by pod UID and container name.
func rootfsUsage(containers []*runtimeapi.Container, stats []*runtimeapi.ContainerStats) map[types.UID]map[string]FsUsage {
	byID := make(map[string]*runtimeapi.ContainerStats, len(stats))
	for _, s := range stats {
		byID[s.GetAttributes().GetId()] = s
	}
	out := map[types.UID]map[string]FsUsage{}
	for _, c := range containers {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		l := byID[c.GetId()].GetWritableLayer()
		uid := types.UID(c.GetLabels()[podstate.LabelPodUID])
		name := c.GetLabels()[podstate.LabelContainerName]
		if l == nil || uid == "" || name == "" {
			continue
		}
		put(out, uid, name, FsUsage{UsedBytes: l.GetUsedBytes().GetValue(), InodesUsed: l.GetInodesUsed().GetValue()})
	}
	return out
}
