package apiserver

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Service account tokens (the TokenRequest API). The server issues
// deterministic tokens ("sim-token-<serial>") bound to a pod, remembers
// each one, and answers ReviewToken as TokenReview would: a token is valid
// while it has not expired and its pod still exists with the same UID.

// Limits of a token's requested lifetime, as the apiserver validates and
// defaults them.
const (
	DefaultTokenExpirationSeconds = 3600
	MinTokenExpirationSeconds     = 600
)

var serviceAccountsResource = schema.GroupResource{Resource: "serviceaccounts"}

// issuedToken is what the server remembers of a token it issued.
type issuedToken struct {
	namespace, serviceAccount string
	audiences                 []string
	podName                   string
	podUID                    string
	expires                   time.Time
}

// CreateToken issues a token for a service account, bound to a pod. With
// Config.Node set, the node may request one only for a pod bound to it
// that runs as that service account, as Node authorization and
// NodeRestriction allow.
func (s *Server) CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if err := s.request(ctx, VerbCreate, fmt.Sprintf("token of serviceaccount %s/%s", namespace, serviceAccount)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	out := tr.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		exp := int64(DefaultTokenExpirationSeconds)
		out.Spec.ExpirationSeconds = &exp
	}
	if *out.Spec.ExpirationSeconds < MinTokenExpirationSeconds {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.expirationSeconds: Invalid value: %d: may not specify a duration less than %d seconds",
			*out.Spec.ExpirationSeconds, MinTokenExpirationSeconds))
	}
	ref := out.Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" {
		if s.node != "" {
			return nil, s.forbidden(VerbCreate, "serviceaccounts/token", serviceAccount, "a node may only request tokens bound to its pods")
		}
	} else {
		p := s.pods[key(namespace, ref.Name)]
		switch {
		case p == nil || string(p.UID) != string(ref.UID):
			return nil, apierrors.NewNotFound(podsResource, ref.Name)
		case s.node != "" && (p.Spec.NodeName != s.node || p.Spec.ServiceAccountName != serviceAccount):
			return nil, s.forbidden(VerbCreate, "serviceaccounts/token", serviceAccount,
				fmt.Sprintf("no relationship found between node %q and this object", s.node))
		}
	}
	s.tokenSerial++
	token := fmt.Sprintf("sim-token-%d", s.tokenSerial)
	expires := s.now().Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second)
	it := issuedToken{namespace: namespace, serviceAccount: serviceAccount, audiences: out.Spec.Audiences, expires: expires}
	if ref != nil {
		it.podName, it.podUID = ref.Name, string(ref.UID)
	}
	s.tokens[token] = it
	out.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expires)}
	s.log.Info("apiserver: token issued", "serviceAccount", namespace+"/"+serviceAccount, "pod", it.podName, "expires", expires)
	return out, nil
}

// TokenReview is what ReviewToken says of a token.
type TokenReview struct {
	// Authenticated is true for a token the server issued that has not
	// expired and whose pod still exists.
	Authenticated bool
	// Username is system:serviceaccount:<namespace>:<name>.
	Username string
	// Audiences are the token's audiences.
	Audiences []string
	// Expires is when the token expires.
	Expires time.Time
	// Known says the server issued the token; Expired that it has
	// expired; PodGone that its pod no longer exists (with that UID).
	Known, Expired, PodGone bool
	// PodUID is the UID of the pod the token is bound to.
	PodUID string
}

// ReviewToken checks a token as the TokenReview API does.
func (u *User) ReviewToken(token string) TokenReview {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.tokens[token]
	if !ok {
		return TokenReview{}
	}
	r := TokenReview{Username: "system:serviceaccount:" + it.namespace + ":" + it.serviceAccount, Audiences: it.audiences, Expires: it.expires,
		Known: true, PodUID: it.podUID}
	r.Expired = s.clock.Now().After(it.expires)
	if it.podName != "" {
		p := s.pods[key(it.namespace, it.podName)]
		r.PodGone = p == nil || string(p.UID) != it.podUID
	}
	r.Authenticated = !r.Expired && !r.PodGone
	return r
}
