package apiserver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mirrorAnnotation marks a mirror pod (the kubelet's key).
const mirrorAnnotation = "kubernetes.io/config.mirror"

// The checks below are what Node authorization and the NodeRestriction
// admission plugin impose on a kubelet's credentials, applied to the
// agent's calls when Config.Node names the agent's node. The user side is
// an administrator and is never restricted.

func (s *Server) forbidden(verb, resource, name, reason string) error {
	gr := schema.GroupResource{Resource: resource}
	return apierrors.NewForbidden(gr, name, fmt.Errorf("User %q cannot %s resource %q: %s", "system:node:"+s.node, verb, resource, reason))
}

// authorizePodListLocked: a node may list and watch only its own pods.
func (s *Server) authorizePodList(verb, nodeName string) error {
	if s.node == "" || nodeName == s.node {
		return nil
	}
	return s.forbidden(verb, "pods", "", fmt.Sprintf("node %q may only see pods bound to itself, not to %q", s.node, nodeName))
}

// authorizePod: a node may read and write only pods bound to it; reading
// a pod that does not exist is forbidden too (there is no relationship).
func (s *Server) authorizePod(verb string, p *corev1.Pod, name string) error {
	if s.node == "" {
		return nil
	}
	if p == nil || p.Spec.NodeName != s.node {
		return s.forbidden(verb, "pods", name, fmt.Sprintf("no relationship found between node %q and this object", s.node))
	}
	return nil
}

// admitMirrorPod: a node may create only mirror pods bound to itself whose
// controller owner is its own Node.
func (s *Server) admitMirrorPod(p *corev1.Pod) error {
	if s.node == "" {
		return nil
	}
	switch {
	case p.Annotations[mirrorAnnotation] == "":
		return s.forbidden("create", "pods", p.Name, fmt.Sprintf("node %q can only create mirror pods", s.node))
	case p.Spec.NodeName != s.node:
		return s.forbidden("create", "pods", p.Name, fmt.Sprintf("node %q can only create pods bound to itself", s.node))
	}
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "Node" && ref.Name == s.node && ref.Controller != nil && *ref.Controller {
			return nil
		}
	}
	return s.forbidden("create", "pods", p.Name, fmt.Sprintf("node %q can only create pods with a controller owner reference set to itself", s.node))
}
