package podspec

import (
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// ContainerHash returns a stable hash (16 hex digits, FNV-1a 64) of the
// container spec fields whose change requires a new container: its name
// and image. The same spec gives the same hash in every process, on every
// platform and with every version of k8s.io/api.
//
// Why only these two, as the upstream kubelet does since v1.31: the API
// lets users change nothing else in a running pod's containers except
// resources, which are resized in place and so excluded; a static pod's
// edit is a new pod (new UID). Hashing more would add no restart a user
// can ask for, and would restart every container on the node whenever the
// apiserver starts defaulting a new field on read (objects are re-defaulted
// when decoded, so an apiserver upgrade can change fields nobody edited).
//
// Widening the list later changes the hash of every existing container, so
// an agent upgrade would restart them all: treat it as a format change.
func ContainerHash(c *corev1.Container) string {
	h := fnv.New64a()
	// Length-prefixed fields, so no two (name, image) pairs encode alike.
	for _, f := range []string{c.Name, c.Image} {
		h.Write([]byte(strconv.Itoa(len(f))))
		h.Write([]byte{':'})
		h.Write([]byte(f))
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
