package apiserver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UpdateEphemeralContainers writes the pods/ephemeralcontainers
// subresource as `kubectl debug` does (client-go's
// UpdateEphemeralContainers): only spec.ephemeralContainers is taken from
// pod, with its UID and resource version as preconditions (an empty
// resource version updates unconditionally). As the real apiserver, it
// refuses to remove or change an ephemeral container, and a name another
// container of the pod already has (Invalid). The generation is bumped.
func (u *User) UpdateEphemeralContainers(pod *corev1.Pod) (*corev1.Pod, error) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.pods[key(pod.Namespace, pod.Name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, pod.Name)
	}
	if err := uidPrecondition(podsResource, pod.Name, pod.UID, old.UID); err != nil {
		return nil, err
	}
	if err := rvPrecondition(podsResource, pod.Name, pod.ResourceVersion, old.ResourceVersion); err != nil {
		return nil, err
	}
	p := old.DeepCopy()
	p.Spec.EphemeralContainers = nil
	for _, ec := range pod.Spec.EphemeralContainers {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, *ec.DeepCopy())
	}
	defaultPodSpec(&p.Spec)
	if errs := validateEphemeralUpdate(&old.Spec, &p.Spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, errs)
	}
	if equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return old.DeepCopy(), nil
	}
	p.Generation++
	return s.putPodLocked(ActorUser, VerbUpdateEphemeralContainers, old, p).DeepCopy(), nil
}

// validateEphemeralUpdate checks the ephemeral containers of next against
// those of old: none removed or changed, names unique in the pod, an image
// set, a target that names a regular or init container.
func validateEphemeralUpdate(old, next *corev1.PodSpec) field.ErrorList {
	path := field.NewPath("spec", "ephemeralContainers")
	var errs field.ErrorList
	nextByName := map[string]*corev1.EphemeralContainer{}
	for i := range next.EphemeralContainers {
		nextByName[next.EphemeralContainers[i].Name] = &next.EphemeralContainers[i]
	}
	for i, ec := range old.EphemeralContainers {
		if n, ok := nextByName[ec.Name]; !ok || !equality.Semantic.DeepEqual(ec, *n) {
			errs = append(errs, field.Forbidden(path.Index(i), fmt.Sprintf("existing ephemeral container %q may not be removed or changed", ec.Name)))
		}
	}
	names := map[string]bool{}
	for _, c := range append(append([]corev1.Container(nil), next.InitContainers...), next.Containers...) {
		names[c.Name] = true
	}
	for i, ec := range next.EphemeralContainers {
		switch {
		case ec.Name == "":
			errs = append(errs, field.Required(path.Index(i).Child("name"), ""))
		case names[ec.Name]:
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), ec.Name))
		case ec.Image == "":
			errs = append(errs, field.Required(path.Index(i).Child("image"), ""))
		}
		if t := ec.TargetContainerName; t != "" && !containerNamed(next, t) {
			errs = append(errs, field.NotFound(path.Index(i).Child("targetContainerName"), t))
		}
		names[ec.Name] = true
	}
	return errs
}

func containerNamed(spec *corev1.PodSpec, name string) bool {
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		if c.Name == name {
			return true
		}
	}
	return false
}
