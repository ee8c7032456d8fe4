package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// ReasonPodFeatureUnsupported is the reason of a pod that failed admission
// because it needs a node feature the node does not declare.
const ReasonPodFeatureUnsupported = "PodFeatureUnsupported"

// FeaturesVersion is the Kubernetes release whose node-declared-features
// registry decides what a pod needs: the one lockstep stands in for.
const FeaturesVersion = "1.37.2"

// AdmitDeclaredFeatures decides on a pod new to the node as the kubelet's
// declared-features admit handler: the features the pod needs, inferred
// from its spec by the node-declared-features registry
// (k8s.io/component-helpers/nodedeclaredfeatures, the one the apiserver and
// the scheduler use), must all be among declared (the node's
// status.declaredFeatures); else the pod is refused, reason
// PodFeatureUnsupported, "Pod requires node features that are not
// available: <names>". The scheduler places no such pod here; this catches
// static pods and pods bound with spec.nodeName, which it never sees.
func AdmitDeclaredFeatures(pod *corev1.Pod, declared []string) Decision {
	fw := ndf.DefaultFramework
	needs, err := fw.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, version.MustParseGeneric(FeaturesVersion))
	if err != nil {
		return Decision{Reason: ReasonPodFeatureUnsupported, Message: fmt.Sprintf("Failed to infer pod's feature requirements: %v", err)}
	}
	if needs.IsEmpty() || ignoreDeclaredFeatures {
		return Decision{}
	}
	match, err := fw.MatchNodeFeatureSet(needs, fw.TryMap(declared))
	if err != nil {
		return Decision{Reason: ReasonPodFeatureUnsupported, Message: fmt.Sprintf("Failed to match pod's feature requirements against the node: %v", err)}
	}
	if !match.IsMatch {
		return Decision{Reason: ReasonPodFeatureUnsupported,
			Message: "Pod requires node features that are not available: " + strings.Join(match.UnsatisfiedRequirements, ", ")}
	}
	return Decision{}
}
