package images

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Credential is one user name and password for a registry, and the secret
// it came from.
type Credential struct {
	Username, Password string
	// Source is the secret's namespace/name.
	Source string
	// SourceUID is the secret's UID.
	SourceUID types.UID
}

// Keyring holds registry credentials by registry key: a host (with its
// port) optionally followed by a path prefix, the host's labels possibly
// globs ("*.example.com"). It follows the docker config matching rules of
// the kubelet's credential provider.
type Keyring struct {
	// keys in reverse lexical order, so that longer (more specific) keys
	// of a host come first.
	keys  []string
	creds map[string][]Credential
}

// dockerConfigEntry is one registry of a docker config.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// defaultRegistryKey is the key of Docker Hub's credentials, which the
// images without a registry host use.
const defaultRegistryKey = "index.docker.io"

// KeyringFromSecrets builds the keyring of the pull secrets, in their
// order: the kubernetes.io/dockerconfigjson ones by their
// .dockerconfigjson "auths" and the kubernetes.io/dockercfg ones by their
// .dockercfg; secrets of other types or without the key are skipped. A
// secret whose content does not parse is an error naming it.
func KeyringFromSecrets(secrets []*corev1.Secret) (*Keyring, error) {
	k := &Keyring{creds: map[string][]Credential{}}
	for _, s := range secrets {
		var cfg map[string]dockerConfigEntry
		switch {
		case s.Type == corev1.SecretTypeDockerConfigJson && len(s.Data[corev1.DockerConfigJsonKey]) > 0:
			var doc struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &doc); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %s: %w", s.Namespace, s.Name, corev1.DockerConfigJsonKey, err)
			}
			cfg = doc.Auths
		case s.Type == corev1.SecretTypeDockercfg && len(s.Data[corev1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &cfg); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %s: %w", s.Namespace, s.Name, corev1.DockerConfigKey, err)
			}
		default:
			continue
		}
		if err := k.add(s.Namespace+"/"+s.Name, s.UID, cfg); err != nil {
			return nil, fmt.Errorf("pull secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	return k, nil
}

// add adds a docker config's registries, in key order (a map's order is
// not the file's).
func (k *Keyring) add(source string, uid types.UID, cfg map[string]dockerConfigEntry) error {
	registries := make([]string, 0, len(cfg))
	for r := range cfg {
		registries = append(registries, r)
	}
	slices.Sort(registries)
	for _, registry := range registries {
		e := cfg[registry]
		cred := Credential{Username: e.Username, Password: e.Password, Source: source, SourceUID: uid}
		if e.Auth != "" {
			u, p, err := decodeAuth(e.Auth)
			if err != nil {
				return fmt.Errorf("registry %q: %w", registry, err)
			}
			cred.Username, cred.Password = u, p
		}
		key, ok := registryKey(registry)
		if !ok {
			continue
		}
		if _, seen := k.creds[key]; !seen {
			k.keys = append(k.keys, key)
		}
		k.creds[key] = append(k.creds[key], cred)
	}
	slices.Sort(k.keys)
	slices.Reverse(k.keys)
	return nil
}

// registryKey turns a docker config registry ("https://host:port/v1/",
// "host/path") into its key: host[:port] followed by the path, with a
// leading /v1/ or /v2/ dropped and a bare "/" path omitted. ok is false
// for an entry that is not a URL.
func registryKey(registry string) (string, bool) {
	if !strings.HasPrefix(registry, "https://") && !strings.HasPrefix(registry, "http://") {
		registry = "https://" + registry
	}
	u, err := url.Parse(registry)
	if err != nil {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

// decodeAuth decodes a docker config "auth" field: base64 of
// "user:password", padded or not.
func decodeAuth(field string) (string, string, error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	raw, err := enc.DecodeString(field)
	if err != nil {
		return "", "", fmt.Errorf("auth field: %w", err)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", fmt.Errorf("auth field must be base64(username:password)")
	}
	return user, pass, nil
}

// Lookup returns the credentials for repository (domain and path, as
// Reference.Repository gives it), to be tried in turn: those of every key
// that matches it — same port, same number of host labels, each label
// matching the key's (globs allowed), the repository's path starting with
// the key's — most specific key first; failing any, Docker Hub's for an
// image of Docker Hub.
func (k *Keyring) Lookup(repository string) []Credential {
	if k == nil {
		return nil
	}
	var out []Credential
	for _, key := range k.keys {
		if keyMatches(key, repository) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(repository) {
		out = append(out, k.creds[defaultRegistryKey]...)
	}
	return out
}

// keyMatches applies the credential provider's URL matching of a key (the
// glob) to a repository.
func keyMatches(key, repository string) bool {
	glob, err1 := url.Parse("https://" + key)
	target, err2 := url.Parse("https://" + repository)
	if err1 != nil || err2 != nil {
		return false
	}
	gLabels, gPort := splitHost(glob.Host)
	tLabels, tPort := splitHost(target.Host)
	if gPort != tPort || len(gLabels) != len(tLabels) || !strings.HasPrefix(target.Path, glob.Path) {
		return false
	}
	for i, g := range gLabels {
		if ok, err := filepath.Match(g, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost splits host[:port] into its dot-separated labels and port.
func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDefaultRegistry reports whether a repository is on Docker Hub: no
// registry host, or docker.io / index.docker.io.
func isDefaultRegistry(repository string) bool {
	first, _, hasSlash := strings.Cut(repository, "/")
	switch {
	case first == "":
		return false
	case !hasSlash, first == "docker.io", first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}
