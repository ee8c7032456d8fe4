package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// TestTokenRequests: the node may request a token only for a pod bound to
// it, for that pod's service account; the lifetime defaults to 3600 s and
// must be at least 600 s; ReviewToken accepts the token until it expires
// or its pod is gone.
func TestTokenRequests(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	defer k.Close()
	s := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Node: "node-a"})
	mk := func(name, node string) *corev1.Pod {
		p, err := s.User().CreatePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine, theirs := mk("mine", "node-a"), mk("theirs", "node-b")
	req := func(p *corev1.Pod, exp *int64) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api"}, ExpirationSeconds: exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}}
	}
	short := int64(60)
	type result struct {
		Token   string
		Expires time.Duration
		Err     string
	}
	got := map[string]result{}
	k.Tasks().Go("agent", func() {
		ctx := context.Background()
		do := func(name, sa string, tr *authenticationv1.TokenRequest) {
			out, err := s.CreateToken(ctx, "default", sa, tr)
			r := result{}
			switch {
			case apierrors.IsForbidden(err):
				r.Err = "Forbidden"
			case apierrors.IsBadRequest(err):
				r.Err = "BadRequest"
			case err != nil:
				r.Err = err.Error()
			default:
				r.Token, r.Expires = out.Status.Token, out.Status.ExpirationTimestamp.Sub(k.Now())
			}
			got[name] = r
		}
		do("own pod", "sa", req(mine, nil))
		do("other service account", "other", req(mine, nil))
		do("other node's pod", "sa", req(theirs, nil))
		do("too short", "sa", req(mine, &short))
	})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	want := map[string]result{
		"own pod":               {Token: "sim-token-1", Expires: time.Hour},
		"other service account": {Err: "Forbidden"},
		"other node's pod":      {Err: "Forbidden"},
		"too short":             {Err: "BadRequest"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
	if r := s.User().ReviewToken("sim-token-1"); !r.Authenticated || r.Username != "system:serviceaccount:default:sa" {
		t.Errorf("review of a fresh token: %+v", r)
	}
	if err := k.RunFor(time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := s.User().ReviewToken("sim-token-1"); r.Authenticated {
		t.Errorf("an expired token is accepted: %+v", r)
	}
	if r := s.User().ReviewToken("forged"); r.Authenticated {
		t.Errorf("an unknown token is accepted")
	}
}
