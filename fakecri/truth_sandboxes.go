package fakecri

import (
	"maps"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TrueSandboxes lists every sandbox as it is at the clock's now, in
// creation order, bypassing every injected fault, like TrueContainers. It
// is for simulators and invariant checkers, not a CRI call: it never
// blocks.
func (r *Runtime) TrueSandboxes() []*runtimeapi.PodSandbox {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	out := []*runtimeapi.PodSandbox{}
	for _, sb := range r.sandboxOrder {
		state, visible := sb.stateAt(now, false)
		if !visible {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id:             sb.id,
			Metadata:       proto.Clone(sb.config.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
			State:          state,
			CreatedAt:      sb.createdAt,
			Labels:         maps.Clone(sb.config.GetLabels()),
			Annotations:    maps.Clone(sb.config.GetAnnotations()),
			RuntimeHandler: sb.handler,
		})
	}
	return out
}
