package scenarios

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Pod options and objects for volume pods.

// WithVolume adds a volume to the pod.
func WithVolume(v corev1.Volume) PodOption {
	return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
}

// Mounts mounts volume at mountPath in container (created if missing).
func Mounts(container, volume, mountPath string) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: mountPath})
	}
}

// MountsPropagated mounts volume at mountPath in container with mount
// propagation mode.
func MountsPropagated(container, volume, mountPath string, mode corev1.MountPropagationMode) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: mountPath, MountPropagation: &mode})
	}
}

// Privileged makes container privileged.
func Privileged(container string) PodOption {
	return func(p *corev1.Pod) {
		yes := true
		findOrAdd(p, container).SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	}
}

// emptyDir is an emptyDir volume on disk.
func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// configMapVolume mounts every key of a configMap.
func configMapVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
}

// putConfigMap creates or replaces a configMap of namespace default.
func putConfigMap(h *harness.Harness, name string, data map[string]string) {
	h.API.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data})
}

// saMountPath is where the ServiceAccount admission plugin mounts the
// kube-api-access volume.
const saMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// kubeAPIAccess is the volume the ServiceAccount admission plugin injects
// (plugin/pkg/admission/serviceaccount: a token of 3607 s, the cluster's
// CA from the kube-root-ca.crt configMap, the namespace from the downward
// API), mounted read-only in container app, for service account "default".
func kubeAPIAccess(p *corev1.Pod) {
	exp, mode := int64(3607), int32(0o644)
	p.Spec.ServiceAccountName = "default"
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}})
	c := findOrAdd(p, "app")
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "kube-api-access-x7k2p", MountPath: saMountPath, ReadOnly: true})
}

// putRootCA creates the kube-root-ca.crt configMap the kube-api-access
// volume reads.
func putRootCA(h *harness.Harness) {
	h.API.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"},
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nsim\n-----END CERTIFICATE-----\n"}})
}

// claimVolume is a persistentVolumeClaim volume of claim.
func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// bindLocalClaim binds claim default/name to a new local
// PersistentVolume at hostPath (which it creates), as a binding
// controller would: the volume's claimRef, the claim's volumeName and
// phase Bound.
func bindLocalClaim(h *harness.Harness, name, pvName, hostPath string) {
	_ = h.Files.MkdirAll(hostPath)
	uid := types.UID("uid-of-claim-" + name)
	h.API.User().PutPersistentVolume(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: hostPath}},
		ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name, UID: uid}}})
	h.API.User().PutPersistentVolumeClaim(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pvName}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}})
}
