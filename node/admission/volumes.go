package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ignoredVolumeFields names the parts of a pod's volumes the agent does
// not honour: volumes of a type the volume manager does not set up (the
// containers run without their mounts) and an emptyDir's huge-page media.
// (An emptyDir's sizeLimit is honoured: the eviction manager evicts a pod
// whose emptyDir exceeds it, and a medium Memory emptyDir is a tmpfs of
// that size.)
func ignoredVolumeFields(spec *corev1.PodSpec) []string {
	var out []string
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		prefix := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.EmptyDir != nil:
			if v.EmptyDir.Medium != corev1.StorageMediumDefault && v.EmptyDir.Medium != corev1.StorageMediumMemory {
				out = append(out, prefix+".emptyDir.medium")
			}
		case v.HostPath != nil, v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.PersistentVolumeClaim != nil:
			// A claim's volume type is known only once it is read: the
			// volume manager fails one that is not local or hostPath.
		case v.Projected != nil:
			// Every projected source is published, but podCertificate,
			// which fails the volume (FailedMount): running without the
			// certificate a pod asks for is no option.
		default:
			out = append(out, prefix+volumeTypeSuffix(v))
		}
	}
	return out
}

// volumeTypeSuffix names an unsupported volume's type as a path suffix
// (".persistentVolumeClaim"), or "" when no source is set.
func volumeTypeSuffix(v *corev1.Volume) string {
	s := &v.VolumeSource
	for _, t := range []struct {
		name string
		set  bool
	}{
		{"ephemeral", s.Ephemeral != nil},
		{"csi", s.CSI != nil},
		{"image", s.Image != nil},
		{"nfs", s.NFS != nil},
		{"iscsi", s.ISCSI != nil},
		{"fc", s.FC != nil},
		{"gitRepo", s.GitRepo != nil},
		{"awsElasticBlockStore", s.AWSElasticBlockStore != nil},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil},
		{"azureDisk", s.AzureDisk != nil},
		{"azureFile", s.AzureFile != nil},
		{"cephfs", s.CephFS != nil},
		{"rbd", s.RBD != nil},
		{"cinder", s.Cinder != nil},
		{"flexVolume", s.FlexVolume != nil},
		{"flocker", s.Flocker != nil},
		{"glusterfs", s.Glusterfs != nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil},
		{"portworxVolume", s.PortworxVolume != nil},
		{"quobyte", s.Quobyte != nil},
		{"scaleIO", s.ScaleIO != nil},
		{"storageos", s.StorageOS != nil},
		{"vsphereVolume", s.VsphereVolume != nil},
	} {
		if t.set {
			return "." + t.name
		}
	}
	return ""
}
