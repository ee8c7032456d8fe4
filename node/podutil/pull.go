package podutil

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DefaultPullPolicy is the pull policy of a container whose image is image
// and that sets none, as the API defaults it: Always when the image's tag
// is "latest" or when it has neither a tag nor a digest (the tag is then
// "latest" implicitly), else IfNotPresent. A digest does not override an
// explicit ":latest" tag ("app:latest@sha256:…" is Always).
//
// The reference is split textually, not validated: upstream gives
// IfNotPresent to a reference it cannot parse, this gives it the policy its
// text suggests.
func DefaultPullPolicy(image string) corev1.PullPolicy {
	name, digest, _ := strings.Cut(image, "@")
	last := name[strings.LastIndexByte(name, '/')+1:]
	_, tag, tagged := strings.Cut(last, ":")
	switch {
	case tagged && tag == "latest":
		return corev1.PullAlways
	case !tagged && digest == "":
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// PullPolicy is c's effective image pull policy: the one it sets, else the
// default for its image.
func PullPolicy(c *corev1.Container) corev1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	return DefaultPullPolicy(c.Image)
}
