package eviction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/admission"
)

// Reason is the reason of an evicted pod's status and event (the same as
// a pod refused under node pressure).
const Reason = admission.ReasonEvicted

// Message is an evicted pod's status message and event, worded as the
// kubelet's: the starved resource, the threshold and what was available,
// then each container using more than it requests.
func Message(t Threshold, obs Observations, c Candidate) string {
	r := signalResource(t.Signal)
	msg := fmt.Sprintf("The node was low on resource: %s. ", r)
	if o, ok := obs[t.Signal]; ok {
		msg += fmt.Sprintf("Threshold quantity: %s, available: %s. ",
			quantity(t.Value.Amount(o.Capacity), r), quantity(o.Available, r))
	}
	if !c.HasStats || (r != corev1.ResourceMemory && r != corev1.ResourceEphemeralStorage) {
		return msg
	}
	specs := append(append([]corev1.Container(nil), c.Pod.Spec.Containers...), c.Pod.Spec.InitContainers...)
	for _, cu := range c.Usage.Containers {
		for i := range specs {
			if specs[i].Name != cu.Name {
				continue
			}
			req := specs[i].Resources.Requests[r]
			use := cu.Memory
			if r == corev1.ResourceEphemeralStorage {
				use = cu.Disk
			}
			if u := resource.NewQuantity(use, resource.BinarySI); u.Cmp(req) > 0 {
				msg += fmt.Sprintf("Container %s was using %s, request is %s, has larger consumption of %s. ", cu.Name, u, req.String(), r)
			}
			break
		}
	}
	return msg
}

// quantity formats an amount of r as the kubelet prints it.
func quantity(v int64, r corev1.ResourceName) string {
	if r == corev1.ResourceMemory || r == corev1.ResourceEphemeralStorage {
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return resource.NewQuantity(v, resource.DecimalSI).String()
}
