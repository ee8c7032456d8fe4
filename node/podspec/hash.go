package podspec

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ContainerHash returns the value of a container's
// io.kubernetes.container.hash annotation: the same value the upstream
// kubelet (v1.31 and later) computes for the same spec, so that containers
// it started are adopted by lockstep without a restart, and the other way
// round. It covers the container's name and image only.
//
// The value is FNV-1a 32 of a text rendering of the JSON object
// {"image":…,"name":…}: the JSON bytes (encoding/json, keys sorted, HTML
// characters escaped) are written as "([]uint8)[b0 b1 …]" with each byte
// in decimal, and the sum is printed in lower-case hex without leading
// zeros. That rendering is what upstream's hash helper prints for a byte
// slice; it must not change, or every container on a node restarts.
//
// Why only name and image: the API lets users change nothing else in a
// running pod's containers except resources, which are resized in place
// and so excluded; a static pod's edit is a new pod (new UID). Hashing more
// would add no restart a user can ask for, and would restart every
// container on the node whenever the apiserver starts defaulting a new
// field on read.
func ContainerHash(c *corev1.Container) string {
	doc, err := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	if err != nil {
		panic("podspec: marshal of a string map failed: " + err.Error()) // cannot happen
	}
	var b strings.Builder
	b.WriteString("([]uint8)[")
	for i, x := range doc {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(x)))
	}
	b.WriteByte(']')
	h := fnv.New32a()
	h.Write([]byte(b.String()))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
