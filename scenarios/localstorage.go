package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Local-storage pods of create-storage: what each kind limits, and the
// usage they reach (under or over that limit) after their growth delay.
const (
	storageEmptyDirLimit = "4Mi"
	storageContainerCap  = "16Ki" // the logging container's limit
	storagePodCap        = "2Mi"  // each of the two containers' limits
	storageLogLine       = "local storage grows by a line of logs every tenth of a second...."
)

// storageKinds name create-storage's kinds (argument a).
var storageKinds = []string{"emptydir", "container-logs", "pod-total", "critical-emptydir"}

// opCreateStorage creates a pod of local-storage kind a whose usage goes
// over its limit when b is odd (under it when even) c·5 s after it starts:
//   - emptydir: an emptyDir "cache" with sizeLimit 4Mi gets 8Mi (or 2Mi)
//     written;
//   - container-logs: container "app" (ephemeral-storage limit 16Ki)
//     logs a line every 100 ms (≈1 KiB/s; under: its limit is 16Mi),
//     beside container "side" (limit 64Mi);
//   - pod-total: containers "app" and "side" (2Mi each) share an emptyDir
//     without sizeLimit that gets 6Mi (or 3Mi) written;
//   - critical-emptydir: the emptydir pod, system-node-critical: never
//     evicted.
func opCreateStorage(r *run, a [3]int) error {
	name := fmt.Sprintf("s%d", r.step)
	if _, err := Create(r.h, storagePod(r.h.NodeName, name, a)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// storagePod is create-storage's pod.
func storagePod(node, name string, a [3]int) *corev1.Pod {
	kind, over, after := storageKinds[pick(a[0], len(storageKinds))], pick(a[1], 2) == 1, time.Duration(pick(a[2], 4))*5*time.Second
	written := func(under, over string, isOver bool) string {
		amount := under
		if isOver {
			amount = over
		}
		if after == 0 {
			return amount
		}
		return fmt.Sprintf("0,%s:%s", after, amount)
	}
	opts := []PodOption{Grace(10)}
	switch kind {
	case "emptydir", "critical-emptydir":
		opts = append(opts, WithVolume(sizedEmptyDir("cache", storageEmptyDirLimit)), Mounts("app", "cache", "/cache"),
			Env("app", "FAKECRI_WRITE", "/cache="+written("2Mi", "8Mi", over)))
		if kind == "critical-emptydir" {
			prio := int32(2_000_001_000)
			opts = append(opts, func(p *corev1.Pod) { p.Spec.PriorityClassName, p.Spec.Priority = "system-node-critical", &prio })
		}
	case "container-logs":
		limit := storageContainerCap
		if !over {
			limit = "16Mi"
		}
		opts = append(opts, Env("app", "FAKECRI_LOG", storageLogLine), Env("app", "FAKECRI_LOG_EVERY", "100ms"),
			EphemeralLimit("app", limit), Container("side"), EphemeralLimit("side", "64Mi"))
	case "pod-total":
		opts = append(opts, WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/scratch"), Mounts("side", "scratch", "/scratch"),
			Env("app", "FAKECRI_WRITE", "/scratch="+written("3Mi", "6Mi", over)),
			EphemeralLimit("app", storagePodCap), EphemeralLimit("side", storagePodCap))
	}
	return NewPod(name, node, opts...)
}

// sizedEmptyDir is a disk emptyDir volume with a sizeLimit.
func sizedEmptyDir(name, limit string) corev1.Volume {
	q := resource.MustParse(limit)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}}
}

// EphemeralLimit sets a container's ephemeral-storage limit (created if
// missing).
func EphemeralLimit(container, limit string) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse(limit)
	}
}
