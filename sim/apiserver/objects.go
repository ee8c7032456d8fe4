package apiserver

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The configuration objects containers read: configMaps, secrets and
// services (services.go). Users create and replace them (User.PutConfigMap, …); the
// agent reads them, a configMap or secret only when a pod bound to the
// node refers to it, as Node authorization allows.

var (
	configMapsResource = schema.GroupResource{Resource: "configmaps"}
	secretsResource    = schema.GroupResource{Resource: "secrets"}
	runtimeClassesRes  = schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}
)

// objects holds the configuration objects by namespace/name, guarded by
// Server.mu.
type objects struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	services   map[string]*corev1.Service
	// runtimeClasses are cluster-scoped, by name.
	runtimeClasses map[string]*nodev1.RuntimeClass
	// claims are by namespace/name, volumes (cluster-scoped) by name.
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	// trustBundles are cluster-scoped, by name.
	trustBundles map[string]*certificatesv1.ClusterTrustBundle
}

// GetConfigMap reads a configMap that a pod bound to the node refers to.
func (s *Server) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("configmap %s/%s", namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizeReferenced("configmaps", namespace, name, refersToConfigMap); err != nil {
		return nil, err
	}
	s.objGetCount["configmaps"]++
	cm, ok := s.objs.configMaps[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(configMapsResource, name)
	}
	return cm.DeepCopy(), nil
}

// GetSecret reads a secret that a pod bound to the node refers to.
func (s *Server) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("secret %s/%s", namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizeReferenced("secrets", namespace, name, refersToSecret); err != nil {
		return nil, err
	}
	s.objGetCount["secrets"]++
	sec, ok := s.objs.secrets[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(secretsResource, name)
	}
	return sec.DeepCopy(), nil
}

// authorizeReferenced: with Config.Node set, a configMap or secret is
// readable only when a pod bound to the node refers to it.
func (s *Server) authorizeReferenced(resource, namespace, name string, refers func(*corev1.PodSpec, string) bool) error {
	if s.node == "" {
		return nil
	}
	for _, p := range s.pods {
		if p.Spec.NodeName == s.node && p.Namespace == namespace && refers(&p.Spec, name) {
			return nil
		}
	}
	return s.forbidden(VerbGet, resource, name, fmt.Sprintf("no relationship found between node %q and this object", s.node))
}

// allContainers lists a pod's init and regular containers.
func allContainers(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

// refersToConfigMap reports whether a pod spec names the configMap in an
// env var, an envFrom or a volume (projected sources included).
func refersToConfigMap(spec *corev1.PodSpec, name string) bool {
	for _, c := range allContainers(spec) {
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.ConfigMapKeyRef != nil && r.ConfigMapKeyRef.Name == name {
				return true
			}
		}
		for _, f := range c.EnvFrom {
			if f.ConfigMapRef != nil && f.ConfigMapRef.Name == name {
				return true
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == name {
			return true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil && src.ConfigMap.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// refersToSecret reports whether a pod spec names the secret in an env
// var, an envFrom, a volume (projected sources included) or its image
// pull secrets.
func refersToSecret(spec *corev1.PodSpec, name string) bool {
	for _, c := range allContainers(spec) {
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == name {
				return true
			}
		}
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil && f.SecretRef.Name == name {
				return true
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil && src.Secret.Name == name {
					return true
				}
			}
		}
	}
	for _, ref := range spec.ImagePullSecrets {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// PutConfigMap creates or replaces a configMap ("default" namespace when
// unset).
func (u *User) PutConfigMap(cm *corev1.ConfigMap) {
	c := cm.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	u.s.mu.Lock()
	defer u.s.unlock()
	c.ResourceVersion = fmt.Sprint(u.s.nextRV())
	u.s.objs.configMaps[key(c.Namespace, c.Name)] = c
	u.s.notifyObjWatchesLocked("configmaps", key(c.Namespace, c.Name))
}

// PutSecret creates or replaces a secret ("default" namespace when unset).
func (u *User) PutSecret(sec *corev1.Secret) {
	c := sec.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	u.s.mu.Lock()
	defer u.s.unlock()
	c.ResourceVersion = fmt.Sprint(u.s.nextRV())
	u.s.objs.secrets[key(c.Namespace, c.Name)] = c
	u.s.notifyObjWatchesLocked("secrets", key(c.Namespace, c.Name))
}

// HasConfigMap reports whether the configMap namespace/name exists,
// bypassing every fault (for checkers).
func (u *User) HasConfigMap(namespace, name string) bool {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	_, ok := u.s.objs.configMaps[key(namespace, name)]
	return ok
}

// HasSecret reports whether the secret namespace/name exists, bypassing
// every fault (for checkers).
func (u *User) HasSecret(namespace, name string) bool {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	_, ok := u.s.objs.secrets[key(namespace, name)]
	return ok
}

// GetRuntimeClass reads a RuntimeClass (any node may read them all).
func (s *Server) GetRuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("runtimeclass %q", name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	rc, ok := s.objs.runtimeClasses[name]
	if !ok {
		return nil, apierrors.NewNotFound(runtimeClassesRes, name)
	}
	return rc.DeepCopy(), nil
}

// PutRuntimeClass creates or replaces a RuntimeClass.
func (u *User) PutRuntimeClass(rc *nodev1.RuntimeClass) {
	c := rc.DeepCopy()
	u.s.mu.Lock()
	defer u.s.unlock()
	c.ResourceVersion = fmt.Sprint(u.s.nextRV())
	u.s.objs.runtimeClasses[c.Name] = c
}
