package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeClock is a settable wall clock for the caches.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// reviewAPI is a fake clientset whose TokenReviews know some tokens and
// whose SubjectAccessReviews allow some subresources; it records what was
// sent.
type reviewAPI struct {
	cs *fake.Clientset

	mu       sync.Mutex
	tokens   map[string]authenticationv1.UserInfo
	allowed  map[string]bool // subresource → allowed
	fail     bool
	reviews  []authenticationv1.TokenReviewSpec
	accesses []authorizationv1.SubjectAccessReviewSpec
}

func newReviewAPI() *reviewAPI {
	api := &reviewAPI{
		cs:      fake.NewClientset(),
		tokens:  map[string]authenticationv1.UserInfo{testToken: {Username: "alice", Groups: []string{"devs", "system:authenticated"}}},
		allowed: map[string]bool{"stats": true},
	}
	api.cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		api.mu.Lock()
		defer api.mu.Unlock()
		api.reviews = append(api.reviews, tr.Spec)
		if api.fail {
			return true, nil, errors.New("connection refused")
		}
		if u, ok := api.tokens[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: u}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: false, Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	api.cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		api.mu.Lock()
		defer api.mu.Unlock()
		api.accesses = append(api.accesses, sar.Spec)
		if api.fail {
			return true, nil, errors.New("connection refused")
		}
		if api.allowed[sar.Spec.ResourceAttributes.Subresource] {
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed"}
		} else {
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: false, Reason: "no RBAC policy matched"}
		}
		return true, sar, nil
	})
	return api
}

func (api *reviewAPI) counts() (int, int) {
	api.mu.Lock()
	defer api.mu.Unlock()
	return len(api.reviews), len(api.accesses)
}

func TestWebhooksThroughTheSecurePort(t *testing.T) {
	api := newReviewAPI()
	p := newProvider(t)
	s := newServer(t, p, SubjectAccessReviewAuthorizer(api.cs), func(c *Config) {
		c.Authenticator = TokenReviewAuthenticator(api.cs)
	})
	h := s.SecureHandler()

	if code, _ := get(t, h, "/stats/summary", "unknown"); code != http.StatusUnauthorized {
		t.Errorf("unknown token: %d, want 401", code)
	}
	if code, _ := get(t, h, "/stats/summary", testToken); code != http.StatusOK {
		t.Errorf("allowed stats: %d, want 200", code)
	}
	if code, body := get(t, h, "/pods", testToken); code != http.StatusForbidden || body != "Forbidden\n" {
		t.Errorf("denied proxy: %d %q, want 403", code, body)
	}

	wantReviews := []authenticationv1.TokenReviewSpec{{Token: "unknown"}, {Token: testToken}}
	wantAccesses := []authorizationv1.SubjectAccessReviewSpec{
		{User: "alice", Groups: []string{"devs", "system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "node-a"}},
		{User: "alice", Groups: []string{"devs", "system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "pods", Name: "node-a"}},
		{User: "alice", Groups: []string{"devs", "system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: "node-a"}},
	}
	api.mu.Lock()
	if diff := cmp.Diff(wantReviews, api.reviews); diff != "" {
		t.Errorf("TokenReviews sent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAccesses, api.accesses); diff != "" {
		t.Errorf("SubjectAccessReviews sent (-want +got):\n%s", diff)
	}
	api.mu.Unlock()

	// Cached: the same requests again ask nothing.
	get(t, h, "/stats/summary", testToken)
	get(t, h, "/pods", testToken)
	get(t, h, "/pods", "unknown")
	if r, a := api.counts(); r != 2 || a != 3 {
		t.Errorf("after repeats: %d TokenReviews, %d SubjectAccessReviews; want 2 and 3 (cached)", r, a)
	}
}

func TestTokenReviewCache(t *testing.T) {
	api := newReviewAPI()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	a := newTokenReviewer(api.cs, clk.now)
	ctx := context.Background()
	check := func(token string, wantOK bool, wantReviews int) {
		t.Helper()
		user, groups, ok, err := a.AuthenticateToken(ctx, token)
		if err != nil {
			t.Fatalf("AuthenticateToken(%q): %v", token, err)
		}
		if ok != wantOK {
			t.Errorf("AuthenticateToken(%q) ok = %v, want %v", token, ok, wantOK)
		}
		if ok && (user != "alice" || !cmp.Equal(groups, []string{"devs", "system:authenticated"})) {
			t.Errorf("AuthenticateToken(%q) = %q %v", token, user, groups)
		}
		if r, _ := api.counts(); r != wantReviews {
			t.Errorf("after %q: %d TokenReviews, want %d", token, r, wantReviews)
		}
	}
	check(testToken, true, 1)
	check("bad", false, 2)
	clk.add(NegativeTTL - time.Second)
	check(testToken, true, 2)
	check("bad", false, 2)
	clk.add(time.Second) // the negative answer expires
	check("bad", false, 3)
	check(testToken, true, 3)
	clk.add(TokenReviewTTL - NegativeTTL) // the positive answer expires
	check(testToken, true, 4)

	// A failed call is an error and is not cached.
	api.mu.Lock()
	api.fail = true
	api.mu.Unlock()
	if _, _, _, err := a.AuthenticateToken(ctx, "other"); err == nil {
		t.Errorf("failing TokenReview: no error")
	}
	api.mu.Lock()
	api.fail = false
	api.mu.Unlock()
	before, _ := api.counts()
	if _, _, ok, err := a.AuthenticateToken(ctx, "other"); err != nil || ok {
		t.Errorf("after recovery: ok=%v err=%v", ok, err)
	}
	if r, _ := api.counts(); r != before+1 {
		t.Errorf("a failed TokenReview was cached")
	}
}

func TestSubjectAccessReviewCache(t *testing.T) {
	api := newReviewAPI()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	a := newAccessReviewer(api.cs, clk.now)
	ctx := context.Background()
	check := func(sub string, groups []string, wantAllowed bool, wantSARs int) {
		t.Helper()
		allowed, reason, err := a.Authorize(ctx, "alice", groups, "get", "nodes", sub, "node-a")
		if err != nil {
			t.Fatalf("Authorize(%s): %v", sub, err)
		}
		if allowed != wantAllowed || reason == "" {
			t.Errorf("Authorize(%s) = %v %q, want %v with a reason", sub, allowed, reason, wantAllowed)
		}
		if _, n := api.counts(); n != wantSARs {
			t.Errorf("after %s: %d SubjectAccessReviews, want %d", sub, n, wantSARs)
		}
	}
	check("stats", []string{"a", "b"}, true, 1)
	check("stats", []string{"b", "a"}, true, 1) // group order does not matter
	check("stats", []string{"a"}, true, 2)      // other groups are another question
	check("log", []string{"a"}, false, 3)
	clk.add(NegativeTTL)
	check("log", []string{"a"}, false, 4)
	check("stats", []string{"a", "b"}, true, 4)
	clk.add(SubjectAccessReviewAllowedTTL - NegativeTTL)
	check("stats", []string{"a", "b"}, true, 5)

	api.mu.Lock()
	api.fail = true
	api.mu.Unlock()
	if _, _, err := a.Authorize(ctx, "bob", nil, "get", "nodes", "proxy", "node-a"); err == nil {
		t.Errorf("failing SubjectAccessReview: no error")
	}
}

func TestTTLCacheBounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	c := newTTLCache[int](clk.now)
	for i := range maxCacheEntries + 10 {
		c.put(string(rune(i)), i, time.Minute)
	}
	c.mu.Lock()
	n := len(c.m)
	c.mu.Unlock()
	if n > maxCacheEntries {
		t.Errorf("cache holds %d entries, bound %d", n, maxCacheEntries)
	}
	if v, ok := c.get(string(rune(maxCacheEntries + 9))); !ok || v != maxCacheEntries+9 {
		t.Errorf("latest entry lost: %v %v", v, ok)
	}
}
