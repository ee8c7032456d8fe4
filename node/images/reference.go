package images

import (
	"fmt"

	"github.com/distribution/reference"
)

// Reference is an image reference split into its parts, with docker's
// defaults applied to Domain and Path ("busybox" is docker.io,
// library/busybox).
type Reference struct {
	// Domain is the registry host, with its port if any.
	Domain string
	// Path is the repository path inside the registry.
	Path string
	// Tag is the tag ("" when the reference has none).
	Tag string
	// Digest is the digest ("" when the reference has none).
	Digest string
}

// Repository is the reference's repository, domain and path
// ("docker.io/library/busybox"): what credentials are looked up for.
func (r Reference) Repository() string { return r.Domain + "/" + r.Path }

// ParseReference splits an image reference as the kubelet and
// containerd do (the distribution reference grammar, docker's defaults
// applied): it refuses what a registry would (an empty name, upper case or
// stray characters in the repository path, a malformed tag or digest).
func ParseReference(image string) (Reference, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return Reference{}, fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	r := Reference{Domain: reference.Domain(named), Path: reference.Path(named)}
	if t, ok := named.(reference.Tagged); ok {
		r.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		r.Digest = d.Digest().String()
	}
	return r, nil
}

// WithDefaultTag returns image with ":latest" appended when it has neither
// a tag nor a digest, as the kubelet names the image it pulls.
func WithDefaultTag(image string) (string, error) {
	r, err := ParseReference(image)
	if err != nil {
		return "", err
	}
	if r.Tag == "" && r.Digest == "" {
		return image + ":latest", nil
	}
	return image, nil
}
