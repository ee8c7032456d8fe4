package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

var _ deps.ObjectAPI = (*Server)(nil)

var (
	configMapsResource = schema.GroupResource{Resource: "configmaps"}
	secretsResource    = schema.GroupResource{Resource: "secrets"}
)

// objectStore holds the ConfigMaps and Secrets, by namespace/name.
type objectStore struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// GetConfigMap reads a ConfigMap. Under Node authorization the agent may
// read only a ConfigMap that a pod bound to its node references.
func (s *Server) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("configmap %s/%s", namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizeObjectLocked("configmaps", namespace, name); err != nil {
		return nil, err
	}
	cm, ok := s.objects.configMaps[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(configMapsResource, name)
	}
	return cm.DeepCopy(), nil
}

// GetSecret reads a Secret. Under Node authorization the agent may read
// only a Secret that a pod bound to its node references.
func (s *Server) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("secret %s/%s", namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizeObjectLocked("secrets", namespace, name); err != nil {
		return nil, err
	}
	sec, ok := s.objects.secrets[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(secretsResource, name)
	}
	return sec.DeepCopy(), nil
}

// authorizeObjectLocked: a node may read a ConfigMap or Secret only when
// a pod bound to it references it (Node authorization's graph).
func (s *Server) authorizeObjectLocked(resource, namespace, name string) error {
	if s.node == "" {
		return nil
	}
	for _, p := range s.pods {
		if p.Spec.NodeName == s.node && p.Namespace == namespace && references(p, resource, name) {
			return nil
		}
	}
	return s.forbidden("get", resource, name, fmt.Sprintf("no relationship found between node %q and this object", s.node))
}

// references reports whether pod refers to the ConfigMap or Secret name
// (resource "configmaps" or "secrets") in a volume or its environment.
func references(pod *corev1.Pod, resource, name string) bool {
	for _, n := range referencedNames(pod, resource == "configmaps") {
		if n == name {
			return true
		}
	}
	return false
}

// referencedNames lists the ConfigMaps (configMaps true) or Secrets a pod
// refers to.
func referencedNames(pod *corev1.Pod, configMaps bool) []string {
	var out []string
	add := func(cm, sec string) {
		if configMaps && cm != "" {
			out = append(out, cm)
		}
		if !configMaps && sec != "" {
			out = append(out, sec)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			add(v.ConfigMap.Name, "")
		}
		if v.Secret != nil {
			add("", v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(src.ConfigMap.Name, "")
				}
				if src.Secret != nil {
					add("", src.Secret.Name)
				}
			}
		}
	}
	for _, ref := range pod.Spec.ImagePullSecrets {
		add("", ref.Name)
	}
	cs := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range cs {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add(e.ConfigMapRef.Name, "")
			}
			if e.SecretRef != nil {
				add("", e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add(e.ValueFrom.ConfigMapKeyRef.Name, "")
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add("", e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	return out
}

// PutConfigMap creates or replaces a ConfigMap (an empty namespace means
// "default").
func (u *User) PutConfigMap(cm *corev1.ConfigMap) *corev1.ConfigMap {
	s := u.s
	c := cm.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	s.mu.Lock()
	defer s.unlock()
	if s.objects.configMaps == nil {
		s.objects.configMaps = map[string]*corev1.ConfigMap{}
	}
	var old *metav1.ObjectMeta
	if o := s.objects.configMaps[key(c.Namespace, c.Name)]; o != nil {
		old = &o.ObjectMeta
	}
	s.stampObjectLocked(&c.ObjectMeta, old)
	s.objects.configMaps[key(c.Namespace, c.Name)] = c
	return c.DeepCopy()
}

// PutSecret creates or replaces a Secret (an empty namespace means
// "default").
func (u *User) PutSecret(sec *corev1.Secret) *corev1.Secret {
	s := u.s
	c := sec.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	s.mu.Lock()
	defer s.unlock()
	if s.objects.secrets == nil {
		s.objects.secrets = map[string]*corev1.Secret{}
	}
	var old *metav1.ObjectMeta
	if o := s.objects.secrets[key(c.Namespace, c.Name)]; o != nil {
		old = &o.ObjectMeta
	}
	s.stampObjectLocked(&c.ObjectMeta, old)
	s.objects.secrets[key(c.Namespace, c.Name)] = c
	return c.DeepCopy()
}

// DeleteConfigMap removes a ConfigMap; a missing one is not an error.
func (u *User) DeleteConfigMap(namespace, name string) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	delete(s.objects.configMaps, key(namespace, name))
}

// DeleteSecret removes a Secret; a missing one is not an error.
func (u *User) DeleteSecret(namespace, name string) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	delete(s.objects.secrets, key(namespace, name))
}

// stampObjectLocked gives a written object its server metadata: an
// update keeps the identity of the object it replaces (old).
func (s *Server) stampObjectLocked(m *metav1.ObjectMeta, old *metav1.ObjectMeta) {
	if old != nil {
		m.UID, m.CreationTimestamp = old.UID, old.CreationTimestamp
	} else {
		m.UID = types.UID(s.nextUID())
		m.CreationTimestamp = metav1.NewTime(s.now())
	}
	m.ResourceVersion = fmt.Sprint(s.nextRV())
}
