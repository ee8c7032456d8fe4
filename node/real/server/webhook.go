package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The kubelet webhook cache lifetimes (KubeletConfiguration defaults).
const (
	// TokenReviewTTL is how long an authenticated token is remembered.
	TokenReviewTTL = 2 * time.Minute
	// SubjectAccessReviewAllowedTTL is how long an allowed decision is
	// remembered.
	SubjectAccessReviewAllowedTTL = 5 * time.Minute
	// NegativeTTL is how long a rejected token or a denied request is
	// remembered.
	NegativeTTL = 30 * time.Second
)

// maxCacheEntries bounds each webhook cache.
const maxCacheEntries = 4096

// ttlCache remembers values until their expiry on a wall clock.
type ttlCache[V any] struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]ttlEntry[V]
}

// ttlEntry is a cached value and when it expires.
type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

// newTTLCache returns an empty cache reading time from now.
func newTTLCache[V any](now func() time.Time) *ttlCache[V] {
	return &ttlCache[V]{now: now, m: map[string]ttlEntry[V]{}}
}

// get returns the unexpired value of key.
func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.now().Before(e.expires) {
		delete(c.m, key)
		var zero V
		return zero, false
	}
	return e.v, true
}

// put remembers v under key for ttl. When the cache is full, expired
// entries go first, then everything.
func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.m) >= maxCacheEntries {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCacheEntries {
			clear(c.m)
		}
	}
	c.m[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}

// tokenResult is a cached TokenReview answer.
type tokenResult struct {
	user   string
	groups []string
	ok     bool
}

// tokenReviewer authenticates bearer tokens with TokenReview.
type tokenReviewer struct {
	cs    kubernetes.Interface
	cache *ttlCache[tokenResult]
}

// TokenReviewAuthenticator returns an Authenticator that asks the
// apiserver (authentication.k8s.io/v1 TokenReview) who a bearer token
// belongs to. Answers are cached (keyed by the token's SHA-256): valid
// tokens for TokenReviewTTL, invalid ones for NegativeTTL; failed calls
// are not cached.
func TokenReviewAuthenticator(cs kubernetes.Interface) Authenticator {
	return newTokenReviewer(cs, time.Now)
}

// newTokenReviewer is TokenReviewAuthenticator on the clock now.
func newTokenReviewer(cs kubernetes.Interface, now func() time.Time) *tokenReviewer {
	return &tokenReviewer{cs: cs, cache: newTTLCache[tokenResult](now)}
}

// AuthenticateToken reviews token.
func (a *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (string, []string, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if r, ok := a.cache.get(key); ok {
		return r.user, slices.Clone(r.groups), r.ok, nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	got, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return "", nil, false, fmt.Errorf("create TokenReview: %w", err)
	}
	st := got.Status
	r := tokenResult{ok: st.Authenticated && st.User.Username != ""}
	ttl := NegativeTTL
	if r.ok {
		r.user, r.groups = st.User.Username, slices.Clone(st.User.Groups)
		ttl = TokenReviewTTL
	}
	a.cache.put(key, r, ttl)
	return r.user, slices.Clone(r.groups), r.ok, nil
}

// sarResult is a cached SubjectAccessReview answer.
type sarResult struct {
	allowed bool
	reason  string
}

// accessReviewer authorizes requests with SubjectAccessReview.
type accessReviewer struct {
	cs    kubernetes.Interface
	cache *ttlCache[sarResult]
}

// SubjectAccessReviewAuthorizer returns an Authorizer that asks the
// apiserver (authorization.k8s.io/v1 SubjectAccessReview, non-namespaced,
// API group "" version v1). Decisions are cached: allowed for
// SubjectAccessReviewAllowedTTL, denied for NegativeTTL; failed calls are
// not cached.
func SubjectAccessReviewAuthorizer(cs kubernetes.Interface) Authorizer {
	return newAccessReviewer(cs, time.Now)
}

// newAccessReviewer is SubjectAccessReviewAuthorizer on the clock now.
func newAccessReviewer(cs kubernetes.Interface, now func() time.Time) *accessReviewer {
	return &accessReviewer{cs: cs, cache: newTTLCache[sarResult](now)}
}

// Authorize reviews one request.
func (a *accessReviewer) Authorize(ctx context.Context, user string, groups []string, verb, resource, subresource, name string) (bool, string, error) {
	sorted := slices.Clone(groups)
	slices.Sort(sorted)
	key := strings.Join([]string{user, strings.Join(sorted, "\x01"), verb, resource, subresource, name}, "\x00")
	if r, ok := a.cache.get(key); ok {
		return r.allowed, r.reason, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: slices.Clone(groups),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb:        verb,
			Group:       "",
			Version:     "v1",
			Resource:    resource,
			Subresource: subresource,
			Name:        name,
		},
	}}
	got, err := a.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("create SubjectAccessReview for user %q %s %s/%s %q: %w", user, verb, resource, subresource, name, err)
	}
	r := sarResult{allowed: got.Status.Allowed && !got.Status.Denied, reason: got.Status.Reason}
	if got.Status.EvaluationError != "" && r.reason == "" {
		r.reason = got.Status.EvaluationError
	}
	ttl := NegativeTTL
	if r.allowed {
		ttl = SubjectAccessReviewAllowedTTL
	}
	a.cache.put(key, r, ttl)
	return r.allowed, r.reason, nil
}
