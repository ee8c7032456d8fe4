package images

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// pullRecords remembers which credentials the agent pulled each image
// with, so that a pod may use an image on the node only if it could have
// pulled it itself, as the kubelet's KubeletEnsureSecretPulledImages
// (on by default since v1.33; pkg/kubelet/images/pullmanager) decides with
// its default policy NeverVerifyPreloadedImages: an image the agent did
// not pull (preloaded) is every pod's; one it pulled anonymously too; one
// it pulled with a pull secret only a pod holding the same credentials
// (the same secret, or one with the same user and password) may use
// without pulling it again. Unlike the kubelet's, the records live in
// memory: after an agent restart every image counts as preloaded.
type pullRecords struct {
	mu sync.Mutex
	// pulled: by image ID, then by the repository as the spec wrote it
	// (tag and digest trimmed), who may use it.
	pulled map[string]map[string]*access
	// intents counts the pulls under way by the image as the spec wrote it.
	intents map[string]int
}

// access is who may use an image the agent pulled.
type access struct {
	// anyone: pulled without a pod's secret.
	anyone bool
	// secrets it was pulled with.
	secrets []secretKey
}

// secretKey names the credentials of one pull secret: the secret and a
// hash of its user and password.
type secretKey struct {
	source string
	uid    types.UID
	hash   string
}

func newPullRecords() *pullRecords {
	return &pullRecords{pulled: map[string]map[string]*access{}, intents: map[string]int{}}
}

// keyOf is the record of credential c.
func keyOf(c Credential) secretKey {
	h := sha256.Sum256([]byte(c.Username + "\x00" + c.Password))
	return secretKey{source: c.Source, uid: c.SourceUID, hash: hex.EncodeToString(h[:])}
}

// repositoryOf is image as the spec wrote it without its tag and digest.
func repositoryOf(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// intend records a pull of requested starting; done records its end.
func (r *pullRecords) intend(requested string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.intents[requested]++
}

func (r *pullRecords) done(requested string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.intents[requested] <= 1 {
		delete(r.intents, requested)
		return
	}
	r.intents[requested]--
}

// pulled records that requested was pulled as image imageRef with used
// (nil: without a pod's secret).
func (r *pullRecords) record(requested, imageRef string, used *Credential) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byRepo := r.pulled[imageRef]
	if byRepo == nil {
		byRepo = map[string]*access{}
		r.pulled[imageRef] = byRepo
	}
	repo := repositoryOf(requested)
	a := byRepo[repo]
	if a == nil {
		a = &access{}
		byRepo[repo] = a
	}
	if used == nil || used.Source == "" {
		a.anyone = true
		return
	}
	if k := keyOf(*used); !slices.Contains(a.secrets, k) {
		a.secrets = append(a.secrets, k)
	}
}

// mustPull reports whether a pod holding creds (its pull secrets'
// credentials for the image's repository, looked up only if needed) must
// pull requested although the node has it as imageRef.
func (r *pullRecords) mustPull(requested, imageRef string, podCreds func() []Credential) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	byRepo, pulled := r.pulled[imageRef]
	if !pulled && r.intents[requested] == 0 {
		return false // preloaded
	}
	a := byRepo[repositoryOf(requested)]
	switch {
	case a == nil:
		return true
	case a.anyone:
		return false
	}
	r.mu.Unlock()
	creds := podCreds()
	r.mu.Lock()
	for _, c := range creds {
		if c.Source == "" {
			continue
		}
		k := keyOf(c)
		for _, s := range a.secrets {
			if s.hash == k.hash || s.source == k.source && s.uid == k.uid {
				return false
			}
		}
	}
	return true
}
