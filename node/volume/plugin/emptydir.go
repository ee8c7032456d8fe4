package plugin

import (
	"context"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
)

// emptyDirMode is an emptyDir's mode: writable by anyone, as upstream
// makes it.
const emptyDirMode fs.FileMode = 0o777

// NameEmptyDir is the emptyDir plugin's directory name.
const NameEmptyDir = "kubernetes.io~empty-dir"

// emptyDir is the emptyDir plugin: a directory of the pod's own, a tmpfs
// of at most sizeLimit for medium Memory.
type emptyDir struct{}

func (emptyDir) Name() string                                   { return NameEmptyDir }
func (emptyDir) CanSupport(v *corev1.Volume) bool               { return v.EmptyDir != nil }
func (emptyDir) ReadOnly(*corev1.Volume) bool                   { return false }
func (emptyDir) ResolveOnce(*corev1.Volume) bool                { return false }
func (emptyDir) References(*corev1.Volume) ([]string, []string) { return noRefs() }

func (p emptyDir) Dir(volumesDir string, v *corev1.Volume) string {
	return inPodDir(volumesDir, p, v)
}

// IgnoredFields names a huge-page medium (only the disk and Memory are
// honoured).
func (emptyDir) IgnoredFields(v *corev1.Volume) []string {
	if m := v.EmptyDir.Medium; m != corev1.StorageMediumDefault && m != corev1.StorageMediumMemory {
		return []string{"emptyDir.medium"}
	}
	return nil
}

// Storage: measured; on the node's disk it is the pod's ephemeral
// storage, and its sizeLimit evicts the pod.
func (emptyDir) Storage(v *corev1.Volume) Storage {
	return Storage{
		Measured:      true,
		PodEphemeral:  v.EmptyDir.Medium == corev1.StorageMediumDefault,
		EvictionLocal: v.EmptyDir.Medium != corev1.StorageMediumMemory,
		SizeLimit:     v.EmptyDir.SizeLimit,
	}
}

// memory reports whether v is a tmpfs and its size (0: the default).
func (emptyDir) memory(v *corev1.Volume) (bool, int64) {
	if v.EmptyDir.Medium != corev1.StorageMediumMemory {
		return false, 0
	}
	if v.EmptyDir.SizeLimit != nil {
		return true, v.EmptyDir.SizeLimit.Value()
	}
	return true, 0
}

// SetUp creates (and mounts, for medium Memory) the directory, makes it
// writable by anyone, and gives it to the pod's fsGroup.
func (p emptyDir) SetUp(_ context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume, dir string) (bool, error) {
	memory, size := p.memory(v)
	if _, err := ensureDir(h, dir, memory, size); err != nil {
		return false, err
	}
	if err := worldWritable(h, dir); err != nil {
		return false, err
	}
	if gid := fsGroup(pod); gid != nil {
		if err := setOwnership(h, dir, *gid, false); err != nil {
			return false, err
		}
	}
	return true, nil
}

// worldWritable gives a volume's directory mode 0777, keeping its setgid
// and sticky bits (a tmpfs root is sticky, as upstream's emptyDir on
// medium Memory is), as upstream's emptyDir setupDir does; the API data
// volumes, which upstream wraps in an emptyDir, get it too.
func worldWritable(h *Host, dir string) error {
	info, err := h.Files.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := h.Files.Chmod(dir, info.Mode()&(fs.ModeSetgid|fs.ModeSticky)|emptyDirMode); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// IsSetUp: the directory has mode 0777, setgid when the pod has an
// fsGroup (so a crash half-way through set-up is finished by the next
// pass), and its tmpfs when memory-backed.
func (p emptyDir) IsSetUp(h *Host, pod *corev1.Pod, v *corev1.Volume, dir string) bool {
	info, err := h.Files.Stat(dir)
	if err != nil || !info.IsDir() || info.Mode().Perm() != emptyDirMode {
		return false
	}
	if fsGroup(pod) != nil && info.Mode()&fs.ModeSetgid == 0 {
		return false
	}
	memory, _ := p.memory(v)
	return !memory || tmpfsMounted(h, dir)
}

// TearDown unmounts the tmpfs an emptyDir may have (the pod, and so its
// medium, may be gone).
func (emptyDir) TearDown(h *Host, dir string) error { return unmountTmpfs(h, dir) }
