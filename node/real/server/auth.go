package server

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strings"
)

// Authenticator turns a bearer token into a user. ok is false when the
// token is not valid; err is set when the check itself failed.
type Authenticator interface {
	AuthenticateToken(ctx context.Context, token string) (user string, groups []string, ok bool, err error)
}

// Authorizer decides whether user (in groups) may do verb on the given
// resource/subresource of the named object. reason explains a decision for
// the logs; it is never sent to the client.
type Authorizer interface {
	Authorize(ctx context.Context, user string, groups []string, verb, resource, subresource, name string) (allowed bool, reason string, err error)
}

// AlwaysAllow is an Authorizer that allows every authenticated request
// (the kubelet's --authorization-mode=AlwaysAllow).
type AlwaysAllow struct{}

// Authorize allows.
func (AlwaysAllow) Authorize(context.Context, string, []string, string, string, string, string) (bool, string, error) {
	return true, "authorization mode AlwaysAllow", nil
}

// denyAll is the Authorizer used when none is configured: it forbids
// everything.
type denyAll struct{}

// Authorize forbids.
func (denyAll) Authorize(context.Context, string, []string, string, string, string, string) (bool, string, error) {
	return false, "no authorizer configured", nil
}

// Attributes is what a request to the secure port is authorized as: always
// resource "nodes" with the node's name, like the kubelet.
type Attributes struct {
	Verb        string
	Resource    string
	Subresource string
	Name        string
}

// RequestAttributes maps a request to the attributes the kubelet checks,
// in order; the request is allowed when one of them is. The verb comes
// from the HTTP method (GET and HEAD → get, POST → create, PUT → update,
// PATCH → patch, DELETE → delete, anything else → ""). /pods, /healthz and
// /configz are first checked as their fine-grained subresource (pods,
// healthz, configz; the kubelet's KubeletFineGrainedAuthz) and then as
// proxy; /stats… → stats, /metrics… → metrics, /logs… → log, /spec… →
// spec, /checkpoint… → checkpoint; everything else, /containerLogs and the
// streams included, → proxy.
func RequestAttributes(r *http.Request, nodeName string) []Attributes {
	a := Attributes{Resource: "nodes", Subresource: "proxy", Name: nodeName}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		a.Verb = "get"
	case http.MethodPost:
		a.Verb = "create"
	case http.MethodPut:
		a.Verb = "update"
	case http.MethodPatch:
		a.Verb = "patch"
	case http.MethodDelete:
		a.Verb = "delete"
	}
	p := r.URL.Path
	if p == "" {
		p = "/"
	}
	p = path.Clean(p)
	var out []Attributes
	for _, fine := range []string{"pods", "healthz", "configz"} {
		if isSubpath(p, "/"+fine) {
			f := a
			f.Subresource = fine
			out = append(out, f)
		}
	}
	switch {
	case isSubpath(p, "/stats"):
		a.Subresource = "stats"
	case isSubpath(p, "/metrics"):
		a.Subresource = "metrics"
	case isSubpath(p, "/logs"):
		a.Subresource = "log"
	case isSubpath(p, "/spec"):
		a.Subresource = "spec"
	case isSubpath(p, "/checkpoint"):
		a.Subresource = "checkpoint"
	}
	return append(out, a)
}

// isSubpath reports whether p is root or below it.
func isSubpath(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// secureFilter authenticates and authorizes every request before next.
type secureFilter struct {
	next     http.Handler
	nodeName func() string
	authn    Authenticator // nil: no bearer tokens
	clientCA *clientCAFile // nil: no client certificates
	authz    Authorizer    // never nil
	log      *slog.Logger
}

// ServeHTTP answers 401 to unauthenticated and 403 to unauthorized
// requests, with no detail in the body.
func (f *secureFilter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, groups, ok := f.authenticate(r)
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	var (
		attrs   Attributes
		allowed bool
		reason  string
		err     error
	)
	for _, attrs = range RequestAttributes(r, f.nodeName()) {
		allowed, reason, err = f.authz.Authorize(r.Context(), user, groups, attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Name)
		if err != nil {
			f.log.Error("authorization failed", "user", user, "verb", attrs.Verb, "resource", attrs.Resource, "subresource", attrs.Subresource, "path", r.URL.Path, "err", err)
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		}
		if allowed {
			break
		}
	}
	if !allowed {
		f.log.Info("request forbidden", "user", user, "verb", attrs.Verb, "resource", attrs.Resource, "subresource", attrs.Subresource, "path", r.URL.Path, "reason", reason)
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	f.next.ServeHTTP(w, r)
}

// AuthenticatedGroup is the group every authenticated user is in (added
// when the credential does not name it, as the kubelet's authenticator
// does), so that authorization rules for all authenticated users apply.
const AuthenticatedGroup = "system:authenticated"

// authenticate tries the client certificate, then the bearer token; the
// user is put in AuthenticatedGroup.
func (f *secureFilter) authenticate(r *http.Request) (string, []string, bool) {
	user, groups, ok := f.credential(r)
	if ok && !slices.Contains(groups, AuthenticatedGroup) {
		groups = append(groups, AuthenticatedGroup)
	}
	return user, groups, ok
}

// credential tries the client certificate, then the bearer token.
func (f *secureFilter) credential(r *http.Request) (string, []string, bool) {
	if user, groups, ok := f.clientCert(r); ok {
		return user, groups, true
	}
	token, ok := bearerToken(r)
	if !ok || f.authn == nil {
		return "", nil, false
	}
	user, groups, ok, err := f.authn.AuthenticateToken(r.Context(), token)
	if err != nil {
		f.log.Error("token authentication failed", "path", r.URL.Path, "err", err)
		return "", nil, false
	}
	if !ok || user == "" {
		return "", nil, false
	}
	return user, groups, true
}

// clientCert verifies the peer's certificate against the client CA: the
// user is its common name, the groups its organizations.
func (f *secureFilter) clientCert(r *http.Request) (string, []string, bool) {
	if f.clientCA == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return "", nil, false
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         f.clientCA.Pool(),
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		f.log.Info("client certificate rejected", "subject", leaf.Subject.String(), "err", err)
		return "", nil, false
	}
	if leaf.Subject.CommonName == "" {
		return "", nil, false
	}
	return leaf.Subject.CommonName, append([]string(nil), leaf.Subject.Organization...), true
}

// bearerToken extracts the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
