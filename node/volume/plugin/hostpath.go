package plugin

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// NameHostPath is the hostPath plugin's name (it has no directory of its
// own: the volume is the host's path).
const NameHostPath = "kubernetes.io~host-path"

// hostPath is the hostPath plugin: the host's path itself, checked
// against the volume's type.
type hostPath struct{}

func (hostPath) Name() string                                   { return NameHostPath }
func (hostPath) CanSupport(v *corev1.Volume) bool               { return v.HostPath != nil }
func (hostPath) ReadOnly(*corev1.Volume) bool                   { return false }
func (hostPath) ResolveOnce(*corev1.Volume) bool                { return false }
func (hostPath) IgnoredFields(*corev1.Volume) []string          { return nil }
func (hostPath) References(*corev1.Volume) ([]string, []string) { return noRefs() }

// Storage: the host's, not the pod's.
func (hostPath) Storage(*corev1.Volume) Storage { return Storage{} }

// Dir is the host path.
func (hostPath) Dir(_ string, v *corev1.Volume) string { return filepath.Clean(v.HostPath.Path) }

// SetUp checks the path's type, creating a directory or an empty file for
// the OrCreate types.
func (hostPath) SetUp(_ context.Context, h *Host, _ *corev1.Pod, v *corev1.Volume, dir string) (bool, error) {
	return setUpHostPath(h, dir, v.HostPath.Type)
}

// IsSetUp: the path passes its type check.
func (hostPath) IsSetUp(h *Host, _ *corev1.Pod, v *corev1.Volume, dir string) bool {
	return checkHostPathType(stat(h, dir), dir, v.HostPath.Type) == nil
}

// TearDown leaves the host's path alone.
func (hostPath) TearDown(*Host, string) error { return nil }

// setUpHostPath checks what is at p against typ, creating a directory or
// an empty file for the OrCreate types.
func setUpHostPath(h *Host, p string, typ *corev1.HostPathType) (bool, error) {
	info := stat(h, p)
	if info == nil && typ != nil {
		switch *typ {
		case corev1.HostPathDirectoryOrCreate:
			return true, h.Files.MkdirAll(p)
		case corev1.HostPathFileOrCreate:
			if err := h.Files.MkdirAll(path.Dir(p)); err != nil {
				return false, err
			}
			return true, h.Files.CreateFile(p, nil, 0o644)
		}
	}
	return false, checkHostPathType(info, p, typ)
}

// stat returns what is at p, or nil when nothing is.
func stat(h *Host, p string) fs.FileInfo {
	info, err := h.Files.Stat(p)
	if err != nil {
		return nil
	}
	return info
}

// checkHostPathType checks what is at p (info, nil when nothing) against a
// hostPath volume's type, as upstream's type checker does.
func checkHostPathType(info fs.FileInfo, p string, typ *corev1.HostPathType) error {
	if typ == nil || *typ == corev1.HostPathUnset {
		return nil
	}
	if info == nil {
		return fmt.Errorf("hostPath type check failed: %s does not exist", p)
	}
	mode := info.Mode()
	var ok bool
	var want string
	switch *typ {
	case corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory:
		ok, want = mode.IsDir(), "a directory"
	case corev1.HostPathFileOrCreate, corev1.HostPathFile:
		ok, want = mode.IsRegular(), "a file"
	case corev1.HostPathSocket:
		ok, want = mode&fs.ModeSocket != 0, "a socket file"
	case corev1.HostPathCharDev:
		ok, want = mode&fs.ModeCharDevice != 0, "a character device"
	case corev1.HostPathBlockDev:
		ok, want = mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0, "a block device"
	default:
		return fmt.Errorf("hostPath type check failed: unknown type %q", *typ)
	}
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not %s", p, want)
	}
	return nil
}
