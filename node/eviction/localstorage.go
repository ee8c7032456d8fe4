package eviction

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/stats"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// The local-storage limit signals, as kubelet_evictions labels them.
const (
	SignalEmptyDirFsLimit           = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
)

// localStorageGrace is the grace period of a pod evicted for its local
// storage, as the kubelet's immediate evictions.
const localStorageGrace = 1

// ContainerStorage is what one container holds on the node's disk.
type ContainerStorage struct {
	Name string
	// Running says the container has a running instance (only those are
	// held against their limit, as upstream).
	Running bool
	// Rootfs is its writable layer (running containers only); Logs its
	// log directory (every instance's logs).
	Rootfs, Logs int64
}

// PodStorage is what a pod holds on the node's disk: its measured
// volumes (emptyDir, configMap, secret) by name and its containers.
type PodStorage struct {
	Volumes    map[string]int64
	Containers []ContainerStorage
}

// LocalStorage is the pods' local storage by UID; a pod without an entry
// was not measured.
type LocalStorage map[types.UID]PodStorage

// ObserveLocalStorage joins a sample's volumes and logs with the writable
// layers of its Summary's running containers.
func ObserveLocalStorage(s stats.Sample, sum *statsv1alpha1.Summary) LocalStorage {
	out := LocalStorage{}
	entry := func(uid types.UID) PodStorage {
		ps, ok := out[uid]
		if !ok {
			ps = PodStorage{Volumes: map[string]int64{}}
		}
		return ps
	}
	for _, p := range sum.Pods {
		uid := types.UID(p.PodRef.UID)
		ps := entry(uid)
		for _, c := range p.Containers {
			cs := ContainerStorage{Name: c.Name, Running: true}
			if c.Rootfs != nil && c.Rootfs.UsedBytes != nil {
				cs.Rootfs = clamp(*c.Rootfs.UsedBytes)
			}
			ps.Containers = append(ps.Containers, cs)
		}
		out[uid] = ps
	}
	for uid, vs := range s.VolumeUsage {
		ps := entry(uid)
		for name, v := range vs {
			ps.Volumes[name] = clamp(v.UsedBytes)
		}
		out[uid] = ps
	}
	for uid, ls := range s.LogsUsage {
		ps := entry(uid)
		// Containers the Summary has not listed (not running) follow
		// in name order.
		for _, name := range slices.Sorted(maps.Keys(ls)) {
			i := containerIndex(ps.Containers, name)
			if i < 0 {
				ps.Containers = append(ps.Containers, ContainerStorage{Name: name})
				i = len(ps.Containers) - 1
			}
			ps.Containers[i].Logs = clamp(ls[name].UsedBytes)
		}
		out[uid] = ps
	}
	return out
}

func containerIndex(cs []ContainerStorage, name string) int {
	for i := range cs {
		if cs[i].Name == name {
			return i
		}
	}
	return -1
}

// LocalStorageViolation is why a pod is evicted for its local storage.
type LocalStorageViolation struct {
	// Signal is the limit exceeded (SignalEmptyDirFsLimit, …).
	Signal string
	// Message is the evicted pod's status message and event, worded as
	// the kubelet's.
	Message string
}

// CheckLocalStorage decides whether pod exceeds a local storage limit, in
// the kubelet's order: an emptyDir volume over its sizeLimit, then the
// pod's total (writable layers, logs and disk-backed emptyDirs) over the
// pod's ephemeral-storage limit, then a container's logs (and its
// writable layer, unless the runtime has an image filesystem of its own:
// dedicatedImageFs) over the container's ephemeral-storage limit. Usage
// equal to a limit is within it. Critical pods are the caller's concern.
func CheckLocalStorage(pod *corev1.Pod, ps PodStorage, dedicatedImageFs bool) (LocalStorageViolation, bool) {
	if v, ok := emptyDirOverLimit(pod, ps); ok {
		return v, true
	}
	if v, ok := podOverLimit(pod, ps); ok {
		return v, true
	}
	return containerOverLimit(pod, ps, dedicatedImageFs)
}

func emptyDirOverLimit(pod *corev1.Pod, ps PodStorage) (LocalStorageViolation, bool) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		limit := volumeStorage(v).SizeLimit
		if limit == nil || limit.Sign() <= 0 {
			continue
		}
		used, ok := ps.Volumes[v.Name]
		if !ok || resource.NewQuantity(used, resource.BinarySI).Cmp(*limit) <= 0 {
			continue
		}
		return LocalStorageViolation{Signal: SignalEmptyDirFsLimit,
			Message: fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, limit.String())}, true
	}
	return LocalStorageViolation{}, false
}

// volumeStorage is how v's usage counts, as its plugin says (nothing for
// an unsupported type).
func volumeStorage(v *corev1.Volume) plugin.Storage {
	if p, ok := plugin.For(v); ok {
		return p.Storage(v)
	}
	return plugin.Storage{}
}

func podOverLimit(pod *corev1.Pod, ps PodStorage) (LocalStorageViolation, bool) {
	limit, ok := admission.PodLimits(pod)[corev1.ResourceEphemeralStorage]
	if !ok {
		return LocalStorageViolation{}, false
	}
	var total int64
	for _, c := range ps.Containers {
		total += c.Rootfs + c.Logs
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if volumeStorage(v).EvictionLocal {
			total += ps.Volumes[v.Name]
		}
	}
	if resource.NewQuantity(total, resource.BinarySI).Cmp(limit) <= 0 {
		return LocalStorageViolation{}, false
	}
	return LocalStorageViolation{Signal: SignalEphemeralPodFsLimit,
		Message: fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String())}, true
}

func containerOverLimit(pod *corev1.Pod, ps PodStorage, dedicatedImageFs bool) (LocalStorageViolation, bool) {
	limits := map[string]resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok && !q.IsZero() {
			limits[c.Name] = q
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok && !q.IsZero() && podutil.IsSidecar(c) {
			limits[c.Name] = q
		}
	}
	for _, c := range ps.Containers {
		limit, ok := limits[c.Name]
		if !ok || !c.Running {
			continue
		}
		used := c.Logs
		if !dedicatedImageFs {
			used += c.Rootfs
		}
		if resource.NewQuantity(used, resource.BinarySI).Cmp(limit) <= 0 {
			continue
		}
		return LocalStorageViolation{Signal: SignalEphemeralContainerFsLimit,
			Message: fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", c.Name, limit.String())}, true
	}
	return LocalStorageViolation{}, false
}
