package images

import (
	"fmt"
	"strings"
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

// ParseReference splits an image reference. It checks what a registry
// would refuse (an empty name, upper case or stray characters in the
// repository path, a malformed tag or digest) without being a full
// validator of the distribution grammar.
func ParseReference(image string) (Reference, error) {
	if image == "" {
		return Reference{}, fmt.Errorf("image reference is empty")
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	var r Reference
	if hasDigest {
		algo, hex, ok := strings.Cut(digest, ":")
		if !ok || algo == "" || len(hex) < 32 || strings.Trim(hex, "0123456789abcdef") != "" {
			return Reference{}, fmt.Errorf("image reference %q: invalid digest %q", image, digest)
		}
		r.Digest = digest
	}
	domain, rest := "docker.io", name
	if i := strings.IndexByte(name, '/'); i >= 0 && (strings.ContainsAny(name[:i], ".:") || name[:i] == "localhost") {
		domain, rest = name[:i], name[i+1:]
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		rest, r.Tag = rest[:i], rest[i+1:]
		if !validTag(r.Tag) {
			return Reference{}, fmt.Errorf("image reference %q: invalid tag %q", image, r.Tag)
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	for _, comp := range strings.Split(rest, "/") {
		if !validComponent(comp) {
			return Reference{}, fmt.Errorf("image reference %q: invalid repository name %q", image, rest)
		}
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	r.Domain, r.Path = domain, rest
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

// validComponent: lowercase alphanumerics separated by '.', '_', '__' or
// dashes.
func validComponent(s string) bool {
	if s == "" || !lowerAlnum(s[0]) || !lowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return !strings.Contains(s, "..") && !strings.Contains(s, "___")
}

// validTag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func validTag(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerAlnum(c) && !(c >= 'A' && c <= 'Z') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
