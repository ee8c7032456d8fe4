package apiserver

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// PersistentVolumeClaims and PersistentVolumes: users create and bind
// them (User.PutPersistentVolume, User.PutPersistentVolumeClaim; there
// is no binding controller: a test binds a claim by setting its
// spec.volumeName and phase); the agent reads a claim only when a pod
// bound to the node uses it, and a volume only when such a claim is bound
// to it, as Node authorization allows.

var (
	claimsResource  = schema.GroupResource{Resource: "persistentvolumeclaims"}
	volumesResource = schema.GroupResource{Resource: "persistentvolumes"}
	// trustBundlesResource: users create ClusterTrustBundles
	// (User.PutClusterTrustBundle); every node may read them.
	trustBundlesResource = schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}
)

// GetPersistentVolumeClaim reads a claim that a pod bound to the node uses.
func (s *Server) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("persistentvolumeclaim %s/%s", namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizeReferenced("persistentvolumeclaims", namespace, name, usesClaim); err != nil {
		return nil, err
	}
	pvc, ok := s.objs.claims[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(claimsResource, name)
	}
	return pvc.DeepCopy(), nil
}

// GetPersistentVolume reads a volume bound to a claim that a pod bound to
// the node uses.
func (s *Server) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("persistentvolume %q", name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizeVolume(name); err != nil {
		return nil, err
	}
	pv, ok := s.objs.volumes[name]
	if !ok {
		return nil, apierrors.NewNotFound(volumesResource, name)
	}
	return pv.DeepCopy(), nil
}

// authorizeVolume: with Config.Node set, a PersistentVolume is readable
// only when a claim used by a pod bound to the node names it.
func (s *Server) authorizeVolume(name string) error {
	if s.node == "" {
		return nil
	}
	for _, p := range s.pods {
		if p.Spec.NodeName != s.node {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if pvc := s.objs.claims[key(p.Namespace, v.PersistentVolumeClaim.ClaimName)]; pvc != nil && pvc.Spec.VolumeName == name {
				return nil
			}
		}
	}
	return s.forbidden(VerbGet, "persistentvolumes", name, fmt.Sprintf("no relationship found between node %q and this object", s.node))
}

// usesClaim reports whether a pod spec has a volume of the claim.
func usesClaim(spec *corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
			return true
		}
	}
	return false
}

// PutPersistentVolumeClaim creates or replaces a claim ("default"
// namespace when unset; a new one gets a UID).
func (u *User) PutPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	c := pvc.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	u.s.mu.Lock()
	defer u.s.unlock()
	if c.UID == "" {
		if old := u.s.objs.claims[key(c.Namespace, c.Name)]; old != nil {
			c.UID = old.UID
		} else {
			c.UID = types.UID(u.s.nextUID())
		}
	}
	c.ResourceVersion = fmt.Sprint(u.s.nextRV())
	u.s.objs.claims[key(c.Namespace, c.Name)] = c
}

// PutPersistentVolume creates or replaces a PersistentVolume.
func (u *User) PutPersistentVolume(pv *corev1.PersistentVolume) {
	c := pv.DeepCopy()
	u.s.mu.Lock()
	defer u.s.unlock()
	c.ResourceVersion = fmt.Sprint(u.s.nextRV())
	u.s.objs.volumes[c.Name] = c
}

// GetClusterTrustBundle reads a ClusterTrustBundle (any node may read
// them all).
func (s *Server) GetClusterTrustBundle(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("clustertrustbundle %q", name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	b, ok := s.objs.trustBundles[name]
	if !ok {
		return nil, apierrors.NewNotFound(trustBundlesResource, name)
	}
	return b.DeepCopy(), nil
}

// ListClusterTrustBundles lists the ClusterTrustBundles of a signer, by
// name.
func (s *Server) ListClusterTrustBundles(ctx context.Context, signerName string) ([]*certificatesv1.ClusterTrustBundle, error) {
	if err := s.request(ctx, VerbList, fmt.Sprintf("clustertrustbundles of signer %q", signerName)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	var out []*certificatesv1.ClusterTrustBundle
	for _, k := range sortedKeys(s.objs.trustBundles) {
		if b := s.objs.trustBundles[k]; b.Spec.SignerName == signerName {
			out = append(out, b.DeepCopy())
		}
	}
	return out, nil
}

// PutClusterTrustBundle creates or replaces a ClusterTrustBundle.
func (u *User) PutClusterTrustBundle(b *certificatesv1.ClusterTrustBundle) {
	c := b.DeepCopy()
	u.s.mu.Lock()
	defer u.s.unlock()
	c.ResourceVersion = fmt.Sprint(u.s.nextRV())
	u.s.objs.trustBundles[c.Name] = c
}
