package stats

import (
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
)

// maxDuEntries bounds one directory walk, so that a volume holding
// millions of files cannot stall the sampler; a walk cut short reports
// what it counted.
const maxDuEntries = 100_000

// measureFiles fills s.VolumeUsage and s.LogsUsage from the Files port
// for the pods the Pods port lists. A directory that cannot be read is
// left out (a pod being set up or torn down), logged once.
func (p *Provider) measureFiles(s *Sample) {
	if p.ports.Files == nil || p.ports.Pods == nil {
		return
	}
	s.VolumeUsage = map[types.UID]map[string]FsUsage{}
	s.LogsUsage = map[types.UID]map[string]FsUsage{}
	for _, pod := range p.ports.Pods.ActivePods() {
		if vols := p.volumeUsage(pod); len(vols) > 0 {
			s.VolumeUsage[pod.UID] = vols
		}
		if logs := p.logsUsage(pod); len(logs) > 0 {
			s.LogsUsage[pod.UID] = logs
		}
	}
}

// measuredVolume reports whether a volume's usage counts: the kinds whose
// data the node keeps on its disk for the pod (emptyDir on disk or in
// memory, configMap, secret), as upstream's ephemeral volumes.
func measuredVolume(v *corev1.Volume) bool {
	return v.EmptyDir != nil || v.ConfigMap != nil || v.Secret != nil
}

// volumeUsage measures pod's emptyDir, configMap and secret volumes.
func (p *Provider) volumeUsage(pod *corev1.Pod) map[string]FsUsage {
	out := map[string]FsUsage{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !measuredVolume(v) {
			continue
		}
		dir := podspec.VolumeDir(p.cfg.RootDir, pod.UID, v)
		u, err := diskUsage(p.ports.Files, dir)
		if err != nil {
			p.warnFileOnce(fmt.Errorf("volume %q of pod %s/%s: %w", v.Name, pod.Namespace, pod.Name, err))
			continue
		}
		out[v.Name] = u
	}
	return out
}

// logsUsage measures the log directory of each of pod's containers
// (init, regular and ephemeral) that has one.
func (p *Provider) logsUsage(pod *corev1.Pod) map[string]FsUsage {
	out := map[string]FsUsage{}
	podDir := podspec.LogDirectory(p.cfg.PodLogsRoot, podspec.RefOf(pod))
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	for _, name := range names {
		u, err := diskUsage(p.ports.Files, filepath.Join(podDir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // not started yet
		}
		if err != nil {
			p.warnFileOnce(fmt.Errorf("logs of container %q of pod %s/%s: %w", name, pod.Namespace, pod.Name, err))
			continue
		}
		out[name] = u
	}
	return out
}

// warnFileOnce logs the first file measurement error only.
func (p *Provider) warnFileOnce(err error) {
	p.mu.Lock()
	warned := p.warnedFiles
	p.warnedFiles = true
	p.mu.Unlock()
	if !warned {
		p.log.Warn("volume or log usage unavailable", "error", err.Error())
	}
}

// diskUsage adds up the files below dir like du --apparent-size: every
// entry is an inode, regular files add their size, symbolic links are not
// followed.
func diskUsage(files deps.Files, dir string) (FsUsage, error) {
	u := FsUsage{InodesUsed: 1}
	budget := maxDuEntries
	if err := walkUsage(files, dir, &u, &budget); err != nil {
		return FsUsage{}, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return u, nil
}

// walkUsage adds dir's entries to u, recursing into directories, until
// budget runs out.
func walkUsage(files deps.Files, dir string, u *FsUsage, budget *int) error {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if *budget <= 0 {
			return nil
		}
		*budget--
		u.InodesUsed++
		switch {
		case e.Type()&fs.ModeSymlink != 0:
		case e.IsDir():
			if err := walkUsage(files, filepath.Join(dir, e.Name()), u, budget); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		default:
			info, err := e.Info()
			if err == nil && info.Size() > 0 {
				u.UsedBytes += uint64(info.Size())
			}
		}
	}
	return nil
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
		if out[uid] == nil {
			out[uid] = map[string]FsUsage{}
		}
		out[uid][name] = FsUsage{UsedBytes: l.GetUsedBytes().GetValue(), InodesUsed: l.GetInodesUsed().GetValue()}
	}
	return out
}
