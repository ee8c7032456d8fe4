package apiserver

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// ResizePod writes the pods/resize subresource as `kubectl patch
// --subresource resize` does: the named containers (regular or init) get
// resources, nothing else changes, the generation is bumped. As the real
// apiserver (v1.37) it refuses (Invalid) a resize of anything but cpu and
// memory, one that changes the pod's QoS class, and one of a pod that has
// finished; and (Forbidden, cause NodeCapacity) one whose requests exceed
// the allocatable resources of the node the pod is bound to.
func (u *User) ResizePod(namespace, name string, resources map[string]corev1.ResourceRequirements) (*corev1.Pod, error) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	p := old.DeepCopy()
	path := field.NewPath("spec")
	var errs field.ErrorList
	for _, cname := range slices.Sorted(maps.Keys(resources)) {
		c := containerByName(&p.Spec, cname)
		if c == nil {
			errs = append(errs, field.NotFound(path.Child("containers"), cname))
			continue
		}
		r := resources[cname]
		r = *r.DeepCopy()
		defaultRequests(&r)
		for _, rn := range changedResources(c.Resources, r) {
			if rn != corev1.ResourceCPU && rn != corev1.ResourceMemory {
				errs = append(errs, field.Forbidden(path.Child("containers").Key(cname).Child("resources"), "only cpu and memory resources are mutable"))
			}
		}
		c.Resources = r
	}
	if specQOS(p) != specQOS(old) {
		errs = append(errs, field.Invalid(path, "", "Pod QOS Class may not change as a result of resizing"))
	}
	if old.Status.Phase == corev1.PodSucceeded || old.Status.Phase == corev1.PodFailed {
		errs = append(errs, field.Forbidden(path, "pod resize is not allowed for terminated pods"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, errs)
	}
	if equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return old.DeepCopy(), nil
	}
	if node, ok := s.nodes[p.Spec.NodeName]; ok {
		if missing := undeclaredFeatures(old, p, node.Status.DeclaredFeatures); len(missing) > 0 {
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
				fmt.Errorf("pod update requires features %s which are not available on node %q", strings.Join(missing, ", "), node.Name))
		}
		if err := withinAllocatable(p, node.Status.Allocatable); err != nil {
			forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name, err)
			forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{Type: "NodeCapacity"})
			return nil, forbidden
		}
	}
	p.Generation++
	return s.putPodLocked(ActorUser, VerbResize, old, p).DeepCopy(), nil
}

// undeclaredFeatures lists the node-declared features the update from old
// to p needs that the node does not declare, as the real apiserver's pod
// update check does (NodeDeclaredFeatures, GA in v1.37), with the same
// registry (k8s.io/component-helpers/nodedeclaredfeatures): resizing a
// non-sidecar init container needs InPlacePodVerticalScalingInitContainers.
func undeclaredFeatures(old, p *corev1.Pod, declared []string) []string {
	fw := ndf.DefaultFramework
	needs, err := fw.InferForPodUpdate(&ndf.PodInfo{Spec: &old.Spec, Status: &old.Status}, &ndf.PodInfo{Spec: &p.Spec, Status: &p.Status},
		version.MustParseGeneric(admission.FeaturesVersion))
	if err != nil || needs.IsEmpty() {
		return nil
	}
	match, err := fw.MatchNodeFeatureSet(needs, fw.TryMap(declared))
	if err != nil || match.IsMatch {
		return nil
	}
	return match.UnsatisfiedRequirements
}

// containerByName finds a regular or init container of spec.
func containerByName(spec *corev1.PodSpec, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// defaultRequests sets a request to its limit where only the limit is
// given, as the apiserver's defaulting does.
func defaultRequests(r *corev1.ResourceRequirements) {
	for rn, q := range r.Limits {
		if _, ok := r.Requests[rn]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[rn] = q.DeepCopy()
		}
	}
}

// changedResources lists the resource names whose request or limit
// differs between a and b.
func changedResources(a, b corev1.ResourceRequirements) []corev1.ResourceName {
	names := map[corev1.ResourceName]bool{}
	for _, pair := range [][2]corev1.ResourceList{{a.Requests, b.Requests}, {a.Limits, b.Limits}} {
		for _, l := range pair {
			for rn := range l {
				if x, y := pair[0][rn], pair[1][rn]; x.Cmp(y) != 0 {
					names[rn] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// withinAllocatable is the resize admission plugin's node check: the pod's
// cpu and memory requests may not exceed the node's allocatable.
func withinAllocatable(pod *corev1.Pod, allocatable corev1.ResourceList) error {
	req := admission.PodRequests(pod)
	cpu, mem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
	var msg []string
	if a := allocatable[corev1.ResourceCPU]; cpu.Cmp(a) > 0 {
		msg = append(msg, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpu.MilliValue(), a.MilliValue()))
	}
	if a := allocatable[corev1.ResourceMemory]; mem.Cmp(a) > 0 {
		msg = append(msg, fmt.Sprintf("memory, requested: %d, allocatable: %d", mem.Value(), a.Value()))
	}
	if len(msg) > 0 {
		return fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(msg, "; "))
	}
	return nil
}

// specQOS is the pod's QoS class computed from its spec (not the status's
// copy, which never changes).
func specQOS(pod *corev1.Pod) corev1.PodQOSClass {
	p := pod.DeepCopy()
	p.Status.QOSClass = ""
	return podspec.QOSClass(p)
}
