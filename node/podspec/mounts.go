package podspec

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// DefaultRootDir is the agent's root directory when NodeInfo.RootDir is
// empty; pods' volumes live below it.
const DefaultRootDir = "/var/lib/lockstep"

// The volume plugins' directory names below a pod's volumes directory, as
// the upstream kubelet spells them: aliases of the registry's
// (node/volume/plugin), kept for the callers that name one directory.
const (
	PluginEmptyDir    = plugin.NameEmptyDir
	PluginConfigMap   = plugin.NameConfigMap
	PluginSecret      = plugin.NameSecret
	PluginDownwardAPI = plugin.NameDownwardAPI
	PluginProjected   = plugin.NameProjected
	PluginHostPath    = plugin.NameHostPath
	PluginLocalVolume = plugin.NameLocalVolume
)

// PodsDir returns the directory holding every pod's directory:
// <root>/pods (root "" means DefaultRootDir).
func PodsDir(root string) string {
	if root == "" {
		root = DefaultRootDir
	}
	return filepath.Join(root, "pods")
}

// PodDir returns a pod's directory, <root>/pods/<uid>.
func PodDir(root string, uid types.UID) string { return filepath.Join(PodsDir(root), string(uid)) }

// PodVolumesDir returns the directory of a pod's volumes,
// <root>/pods/<uid>/volumes, with one subdirectory per plugin.
func PodVolumesDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "volumes")
}

// PodContainersDir returns the directory of a pod's per-container files,
// <root>/pods/<uid>/containers, as upstream lays it out.
func PodContainersDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "containers")
}

// TerminationLogPath returns the host file of one instance of a container
// that is bind-mounted at its terminationMessagePath:
// <root>/pods/<uid>/containers/<name>/<instance>, instance naming the
// instance (upstream: 8 random hex digits).
func TerminationLogPath(root string, uid types.UID, container, instance string) string {
	return filepath.Join(PodContainersDir(root, uid), container, instance)
}

// terminationLogMount binds host file log at c's terminationMessagePath
// (nil without either), read-write, as upstream.
func terminationLogMount(c *corev1.Container, log string) *runtimeapi.Mount {
	if log == "" || c.TerminationMessagePath == "" {
		return nil
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: log,
		Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}
}

// VolumeDir returns where a supported volume of a pod lives on the host,
// as its plugin says (<root>/pods/<uid>/volumes/<plugin>/<name>, or the
// host path itself for a hostPath volume; "" for an unsupported type).
func VolumeDir(root string, uid types.UID, v *corev1.Volume) string {
	p, ok := plugin.For(v)
	if !ok {
		return ""
	}
	return p.Dir(PodVolumesDir(root, uid), v)
}

// containerMounts maps a container's volumeMounts to CRI mounts, in spec
// order: the host side is the volume's directory (VolumeDir), joined with
// the mount's subPath (or its subPathExpr expanded against the
// container's environment through lookup). A subPath must stay inside
// its volume: an absolute one or one with a ".." component is refused.
// Mounts of volume types the agent does not support are left out (the pod
// runs without them; admission names them). Bidirectional propagation is
// refused for an unprivileged container, as upstream. The pod's managed
// hosts file comes last (see hostsMount; podIPs are the sandbox's).
func containerMounts(pod *corev1.Pod, c *corev1.Container, podIPs []string, node NodeInfo, lookup func(string) (string, bool)) ([]*runtimeapi.Mount, error) {
	vols := make(map[string]*corev1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no volume of that name in the pod", m.Name)
		}
		p, ok := plugin.For(v)
		if !ok {
			continue
		}
		host, err := mountSource(p.Dir(PodVolumesDir(node.RootDir, pod.UID), v), m, lookup)
		if err != nil {
			return nil, err
		}
		prop, err := propagation(c, m)
		if err != nil {
			return nil, err
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      host,
			Readonly:      m.ReadOnly || p.ReadOnly(v),
			Propagation:   prop,
		})
	}
	if m := hostsMount(pod, c, podIPs, node); m != nil {
		out = append(out, m)
	}
	return out, nil
}

// mountSource returns the host path a mount binds: the volume's directory
// or a path below it.
func mountSource(volDir string, m corev1.VolumeMount, lookup func(string) (string, bool)) (string, error) {
	sub := m.SubPath
	if m.SubPathExpr != "" {
		sub = expand(m.SubPathExpr, lookup)
	}
	if sub == "" {
		return volDir, nil
	}
	if err := CheckSubPath(sub); err != nil {
		return "", fmt.Errorf("volumeMount %q: %w", m.Name, err)
	}
	return filepath.Join(volDir, sub), nil
}

// CheckSubPath refuses a subPath that could leave its volume by its
// spelling: an absolute path or one with a ".." component.
func CheckSubPath(sub string) error {
	if path.IsAbs(sub) {
		return fmt.Errorf("subPath %q must be a relative path", sub)
	}
	for _, part := range strings.Split(sub, "/") {
		if part == ".." {
			return fmt.Errorf("subPath %q must not contain '..'", sub)
		}
	}
	return nil
}

// propagation maps a mount's propagation mode to CRI's.
func propagation(c *corev1.Container, m corev1.VolumeMount) (runtimeapi.MountPropagation, error) {
	if m.MountPropagation == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *m.MountPropagation {
	case corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case corev1.MountPropagationBidirectional:
		if !unprivilegedBidirectional && (c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged) {
			return 0, fmt.Errorf("volumeMount %q: Bidirectional mount propagation is available only to privileged containers", m.Name)
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("volumeMount %q: unknown mount propagation %q", m.Name, *m.MountPropagation)
}

// DownwardAPIValue returns the value a downwardAPI volume item publishes:
// a pod field (fieldRef) or a container's resource (resourceFieldRef,
// which names its container).
func DownwardAPIValue(pod *corev1.Pod, item *corev1.DownwardAPIVolumeFile, node NodeInfo) (string, error) {
	switch {
	case item.FieldRef != nil:
		return fieldRefValue(pod, item.FieldRef, nil, node)
	case item.ResourceFieldRef != nil:
		c := findContainer(pod, item.ResourceFieldRef.ContainerName)
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef %s: no container %q in the pod", item.ResourceFieldRef.Resource, item.ResourceFieldRef.ContainerName)
		}
		return resourceFieldRefValue(pod, c, item.ResourceFieldRef, node)
	}
	return "", fmt.Errorf("downwardAPI item %q has neither fieldRef nor resourceFieldRef", item.Path)
}
