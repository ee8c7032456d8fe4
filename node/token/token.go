// Package token is the agent's service account token manager: it requests
// tokens bound to pods through the TokenRequest API (deps.TokenAPI) for
// projected serviceAccountToken volume sources, caches them, and hands out
// the cached token until it must be refreshed, as upstream's token manager
// does: once 80 % of its lifetime has passed or it is 24 hours old (each
// less a random jitter of up to 10 s). A refresh that fails keeps the old
// token while it has not expired; the caller (the volume manager) asks
// again at its next pass.
package token

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Refresh policy, as upstream's.
const (
	// MaxTTL is the age after which a token is refreshed whatever its
	// lifetime.
	MaxTTL = 24 * time.Hour
	// MaxJitter bounds the random time a refresh is brought forward.
	MaxJitter = 10 * time.Second
	// RefreshPercent is the part of its lifetime left when a token is
	// refreshed (20 %: refreshed at 80 % of its lifetime).
	RefreshPercent = 20
)

// Manager caches service account tokens by request.
type Manager struct {
	core  deps.Core // for its fault points
	clock deps.Clock
	rand  deps.Rand
	log   *slog.Logger
	api   deps.TokenAPI

	mu    sync.Mutex
	cache map[string]*authenticationv1.TokenRequest
}

// New returns a token manager requesting tokens through api (nil: every
// request fails, as in standalone mode).
func New(d deps.Core, api deps.TokenAPI) *Manager {
	return &Manager{core: d, clock: d.Clock, rand: d.Rand, log: d.Log.With("component", "tokens"), api: api,
		cache: map[string]*authenticationv1.TokenRequest{}}
}

// Get returns a token of the service account namespace/name for the
// request tr (audiences, expiration, bound object): the cached one while
// it needs no refresh, else a new one. When a refresh fails the cached
// token is returned while it has not expired.
func (m *Manager) Get(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	k := cacheKey(namespace, name, tr)
	m.mu.Lock()
	cached := m.cache[k]
	m.mu.Unlock()
	if cached != nil && !m.needsRefresh(cached) && !m.core.Fault(deps.FaultTokenRefreshEarly) {
		return cached, nil
	}
	if m.api == nil {
		return nil, fmt.Errorf("token of service account %s/%s: the agent has no apiserver to request it from", namespace, name)
	}
	fresh, err := m.api.CreateToken(ctx, namespace, name, tr)
	if err != nil {
		switch {
		case cached == nil:
			return nil, fmt.Errorf("failed to fetch token of service account %s/%s: %w", namespace, name, err)
		case m.expired(cached):
			return nil, fmt.Errorf("token of service account %s/%s expired and refresh failed: %w", namespace, name, err)
		}
		m.log.Warn("refreshing a token failed; the current one is kept", "serviceAccount", namespace+"/"+name,
			"expires", cached.Status.ExpirationTimestamp.Time, "error", err.Error())
		return cached, nil
	}
	m.mu.Lock()
	m.cache[k] = fresh
	m.mu.Unlock()
	return fresh, nil
}

// Forget drops the tokens bound to a pod (its volumes are gone).
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(m.cache)) {
		if ref := m.cache[k].Spec.BoundObjectRef; ref != nil && ref.UID == uid {
			delete(m.cache, k)
		}
	}
}

func (m *Manager) expired(tr *authenticationv1.TokenRequest) bool {
	return m.clock.Now().After(tr.Status.ExpirationTimestamp.Time)
}

// needsRefresh reports whether a token is older than MaxTTL or has less
// than RefreshPercent of its lifetime left, each brought forward by a
// jitter. A token whose request set no lifetime is never refreshed.
func (m *Manager) needsRefresh(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	now := m.clock.Now()
	life := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-life)
	jitter := time.Duration(m.rand.IntN(int(MaxJitter/time.Second))) * time.Second
	return now.After(issued.Add(MaxTTL-jitter)) || now.After(exp.Add(-life*RefreshPercent/100-jitter))
}

// cacheKey names a request without its secret: service account,
// audiences, lifetime and bound object.
func cacheKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%s/%d/%s/%s/%s", namespace, name, strings.Join(tr.Spec.Audiences, ","), exp, ref.Kind, ref.Name, ref.UID)
}
