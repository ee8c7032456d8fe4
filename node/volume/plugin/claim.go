package plugin

import (
	"context"
	"errors"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// NameLocalVolume is the directory name of a persistentVolumeClaim
// volume: upstream's local volume plugin's. The directory is a symbolic
// link to the path of the local or hostPath PersistentVolume bound to the
// claim (the runtime resolves it when it binds the mount); upstream
// bind-mounts the volume there instead, under the PersistentVolume's
// name.
const NameLocalVolume = "kubernetes.io~local-volume"

// claim is the persistentVolumeClaim plugin, for claims bound to a local
// or hostPath PersistentVolume.
type claim struct{}

func (claim) Name() string                          { return NameLocalVolume }
func (claim) CanSupport(v *corev1.Volume) bool      { return v.PersistentVolumeClaim != nil }
func (claim) ReadOnly(v *corev1.Volume) bool        { return v.PersistentVolumeClaim.ReadOnly }
func (claim) IgnoredFields(*corev1.Volume) []string { return nil } // the PersistentVolume's type is known only once read: SetUp fails one that is not local or hostPath
func (claim) Storage(*corev1.Volume) Storage        { return Storage{} }

func (claim) References(*corev1.Volume) ([]string, []string) { return noRefs() }

// ResolveOnce: a claim's volume is resolved once per agent life, as
// upstream's populator processes a pod's claims once.
func (claim) ResolveOnce(*corev1.Volume) bool { return true }

func (p claim) Dir(volumesDir string, v *corev1.Volume) string {
	return inPodDir(volumesDir, p, v)
}

// IsSetUp: the directory is a link to a path that exists.
func (claim) IsSetUp(h *Host, _ *corev1.Pod, _ *corev1.Volume, dir string) bool {
	if _, err := h.Files.Readlink(dir); err != nil {
		return false
	}
	return stat(h, dir) != nil
}

// TearDown: removing the pod's directory removes the link, not the
// PersistentVolume's data.
func (claim) TearDown(*Host, string) error { return nil }

// SetUp sets up a persistentVolumeClaim volume, as upstream's
// desired-state populator and the local and hostPath plugins do: it reads
// the claim and the PersistentVolume bound to it (one GET each), checks
// that the volume is a local or hostPath one that points back at the
// claim, checks its path, and links the volume's directory to that path.
// Before the first link of a pod's volume, a local PersistentVolume
// mounted read-write is given to the pod's fsGroup, as upstream's local
// plugin does on its first mount (see ownLocalVolume).
func (claim) SetUp(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume, dir string) (bool, error) {
	target, local, err := claimPath(ctx, h, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
	if err != nil {
		return false, err
	}
	old, err := h.Files.Readlink(dir)
	if err == nil && old == target {
		return false, nil
	}
	if local && !v.PersistentVolumeClaim.ReadOnly {
		if err := ownLocalVolume(h, pod, target); err != nil {
			return false, err
		}
	}
	if err == nil {
		if err := h.Files.Remove(dir); err != nil {
			return false, fmt.Errorf("replace link %s: %w", dir, err)
		}
	}
	if err := h.Files.MkdirAll(path.Dir(dir)); err != nil {
		return false, err
	}
	if err := h.Files.Symlink(target, dir); err != nil {
		return false, fmt.Errorf("link %s to %s: %w", dir, target, err)
	}
	return true, nil
}

// claimPath returns the host path of the local or hostPath
// PersistentVolume bound to claim namespace/name, checked, and whether it
// is a local one.
func claimPath(ctx context.Context, h *Host, namespace, name string) (target string, local bool, err error) {
	claim := fmt.Sprintf("%s/%s", namespace, name)
	if h.Claims == nil {
		return "", false, fmt.Errorf("persistentvolumeclaim %q: the agent has no apiserver to read it from", claim)
	}
	pvc, err := h.Claims.GetPersistentVolumeClaim(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return "", false, fmt.Errorf("persistentvolumeclaim %q not found", claim)
	case err != nil:
		return "", false, fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "":
		return "", false, fmt.Errorf("persistentvolumeclaim %q is not bound (phase %q, spec.volumeName %q)", claim, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := h.Claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	switch {
	case apierrors.IsNotFound(err):
		return "", false, fmt.Errorf("persistentvolume %q of claim %q not found", pvc.Spec.VolumeName, claim)
	case err != nil:
		return "", false, fmt.Errorf("persistentvolume %q of claim %q: %w", pvc.Spec.VolumeName, claim, err)
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID:
		return "", false, fmt.Errorf("persistentvolume %q is not bound to claim %q (its claimRef points elsewhere)", pv.Name, claim)
	case pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock:
		return "", false, fmt.Errorf("persistentvolume %q of claim %q: volumeMode Block is not supported by lockstep", pv.Name, claim)
	}
	switch {
	case pv.Spec.Local != nil:
		p := path.Clean(pv.Spec.Local.Path)
		if info := stat(h, p); info == nil {
			return "", false, fmt.Errorf("local persistentvolume %q of claim %q: path %s does not exist", pv.Name, claim, p)
		}
		return p, true, nil
	case pv.Spec.HostPath != nil:
		p := path.Clean(pv.Spec.HostPath.Path)
		if _, err := setUpHostPath(h, p, pv.Spec.HostPath.Type); err != nil {
			return "", false, fmt.Errorf("hostPath persistentvolume %q of claim %q: %w", pv.Name, claim, err)
		}
		if stat(h, p) == nil {
			return "", false, fmt.Errorf("hostPath persistentvolume %q of claim %q: path %s does not exist", pv.Name, claim, p)
		}
		return p, false, nil
	}
	return "", false, errors.New(unsupportedVolumeMessage(pv, claim))
}

// unsupportedVolumeMessage says which plugin a PersistentVolume needs
// that the agent lacks.
func unsupportedVolumeMessage(pv *corev1.PersistentVolume, claim string) string {
	plugin := "unknown"
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		plugin = "kubernetes.io/csi (driver " + s.CSI.Driver + ")"
	case s.NFS != nil:
		plugin = "kubernetes.io/nfs"
	case s.ISCSI != nil:
		plugin = "kubernetes.io/iscsi"
	case s.FC != nil:
		plugin = "kubernetes.io/fc"
	case s.RBD != nil:
		plugin = "kubernetes.io/rbd"
	case s.CephFS != nil:
		plugin = "kubernetes.io/cephfs"
	}
	return fmt.Sprintf("persistentvolume %q of claim %q: volume plugin %s is not supported by lockstep (only local and hostPath persistent volumes are)", pv.Name, claim, plugin)
}

// ownLocalVolume gives a local PersistentVolume's path to the pod's
// fsGroup (nothing without one) as upstream's SetVolumeOwnership does,
// honouring fsGroupChangePolicy: OnRootMismatch skips the walk when the
// path's root already has the group, group rwx and setgid.
func ownLocalVolume(h *Host, pod *corev1.Pod, dir string) error {
	gid := fsGroup(pod)
	if gid == nil {
		return nil
	}
	if sc := pod.Spec.SecurityContext; sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch &&
		!rootNeedsOwnership(h, dir, *gid) {
		return nil
	}
	if err := setOwnership(h, dir, *gid, false); err != nil {
		return fmt.Errorf("local persistentvolume path %s: %w", dir, err)
	}
	return nil
}
