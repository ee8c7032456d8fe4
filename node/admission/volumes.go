package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// ignoredVolumeFields names the parts of a pod's volumes the agent does
// not honour, as the volume plugin registry says: volumes of a type no
// plugin sets up (the containers run without their mounts), named by
// their source field, and the fields a plugin ignores (an emptyDir's
// huge-page media).
func ignoredVolumeFields(spec *corev1.PodSpec) []string {
	var out []string
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		prefix := fmt.Sprintf("spec.volumes[%d]", i)
		p, ok := plugin.For(v)
		if !ok {
			if field := plugin.SourceField(v); field != "" {
				prefix += "." + field
			}
			out = append(out, prefix)
			continue
		}
		for _, f := range p.IgnoredFields(v) {
			out = append(out, prefix+"."+f)
		}
	}
	return out
}
