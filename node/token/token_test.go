package token_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/token"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// issuer is a TokenAPI that numbers its tokens and can be made to fail.
type issuer struct {
	clock deps.Clock
	n     int
	fail  bool
}

func (i *issuer) CreateToken(_ context.Context, _, _ string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if i.fail {
		return nil, errors.New("connection refused")
	}
	i.n++
	out := tr.DeepCopy()
	out.Status.Token = string(rune('a' + i.n - 1))
	out.Status.ExpirationTimestamp = metav1.NewTime(i.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

func request(seconds int64) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "p", UID: "uid-1"}}}
}

// step is one call of the transcript: at elapsed time, whether the API
// fails, and what Get returned.
type step struct {
	At    time.Duration
	Fail  bool
	Token string
	Err   bool
}

func transcript(t *testing.T, seconds int64, script []step) []step {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 3})
	t.Cleanup(k.Close)
	api := &issuer{clock: k}
	m := token.New(k.Deps().Core, api)
	var got []step
	for _, s := range script {
		if err := k.RunFor(s.At - k.Elapsed()); err != nil {
			t.Fatal(err)
		}
		api.fail = s.Fail
		tr, err := m.Get(context.Background(), "ns", "sa", request(seconds))
		g := step{At: s.At, Fail: s.Fail, Err: err != nil}
		if err == nil {
			g.Token = tr.Status.Token
		}
		got = append(got, g)
	}
	return got
}

// TestRefreshAt80Percent: a one-hour token is reused until 80 % of its
// lifetime (less at most 10 s of jitter) and replaced after; a failed
// refresh keeps the old token until it expires, then is an error.
func TestRefreshAt80Percent(t *testing.T) {
	want := []step{
		{At: 0, Token: "a"},
		{At: 47 * time.Minute, Token: "a"},                         // 2820 s < 2870 s
		{At: 48*time.Minute + time.Second, Token: "b"},             // > 2880 s: refreshed
		{At: 48*time.Minute + 2*time.Second, Token: "b"},           // cached again
		{At: 96*time.Minute + time.Second, Fail: true, Token: "b"}, // due, API down: old token kept
		{At: 108 * time.Minute, Fail: true, Token: "b"},            // still valid (expires at 108 min + 1 s)
		{At: 108*time.Minute + 2*time.Second, Fail: true, Err: true},
		{At: 109 * time.Minute, Token: "c"},
	}
	if diff := cmp.Diff(want, transcript(t, 3600, want)); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

// TestRefreshAfter24Hours: a token of two days is refreshed once a day.
func TestRefreshAfter24Hours(t *testing.T) {
	want := []step{
		{At: 0, Token: "a"},
		{At: 23*time.Hour + 59*time.Minute, Token: "a"},
		{At: 24*time.Hour + time.Second, Token: "b"},
	}
	if diff := cmp.Diff(want, transcript(t, 48*3600, want)); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

// TestFirstRequestFails: with no token yet, a failure is an error.
func TestFirstRequestFails(t *testing.T) {
	want := []step{{At: 0, Fail: true, Err: true}, {At: time.Second, Token: "a"}}
	if diff := cmp.Diff(want, transcript(t, 3600, want)); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}
