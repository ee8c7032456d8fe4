package scenarios

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestTokensKubeAPIAccessVolume: the volume the ServiceAccount admission
// plugin injects is published in full: a token the apiserver accepts, for
// the pod's service account, the CA and the namespace.
func TestTokensKubeAPIAccessVolume(t *testing.T) {
	h := start(t, 93)
	putRootCA(h)
	pod := mustCreate(t, h, NewPod("client", h.NodeName, kubeAPIAccess))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "client", corev1.PodRunning, true) })
	dir := mountOf(h, pod.UID, "app", saMountPath)
	read := func(name string) string {
		data, err := h.Files.ReadFile(dir + "/" + name)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return string(data)
	}
	if got := read("namespace"); got != "default" {
		t.Errorf("namespace file %q, want default", got)
	}
	if got := read("ca.crt"); got != "-----BEGIN CERTIFICATE-----\nsim\n-----END CERTIFICATE-----\n" {
		t.Errorf("ca.crt %q", got)
	}
	review := h.API.User().ReviewToken(read("token"))
	if !review.Authenticated || review.Username != "system:serviceaccount:default:default" {
		t.Errorf("the token on disk is not accepted: %+v", review)
	}
	if ok, _ := h.Mounts.IsMountPoint(dir); !ok {
		t.Errorf("the projected volume %s is not a tmpfs", dir)
	}
	for _, e := range h.API.User().Events() {
		if e.Reason == "UnsupportedPodField" || e.Reason == "FailedMount" {
			t.Errorf("unexpected event %s: %s", e.Reason, e.Message)
		}
	}
}

// TestTokensRefreshedOverHours: over five virtual hours, the token on
// disk is replaced at about 80 % of its lifetime, is never expired when
// read, and an apiserver outage across a refresh keeps the old token (the
// refresh is retried and succeeds once the apiserver is back, before the
// old token expires).
func TestTokensRefreshedOverHours(t *testing.T) {
	t.Parallel()
	h := start(t, 94)
	c := NewChecker(h)
	putRootCA(h)
	pod := mustCreate(t, h, NewPod("client", h.NodeName, kubeAPIAccess))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "client", corev1.PodRunning, true) })
	file := mountOf(h, pod.UID, "app", saMountPath) + "/token"
	type change struct{ At, Expires time.Duration }
	var changes []change
	last := ""
	issued := map[string]time.Duration{}
	for minute := 0; minute < 5*60; minute++ {
		switch minute {
		case 40:
			c.APIImpaired(16 * time.Minute)
			h.API.Down(true)
		case 56:
			h.API.Down(false)
		}
		data, err := h.Files.ReadFile(file)
		if err != nil {
			t.Fatalf("at %v: %v", h.K.Elapsed(), err)
		}
		tok := string(data)
		r := h.API.User().ReviewToken(tok)
		if !r.Authenticated {
			t.Fatalf("at %v the token on disk is not valid (%+v)", h.K.Elapsed(), r)
		}
		if tok != last {
			expires := r.Expires.Sub(h.K.Now().Add(-h.K.Elapsed()))
			changes = append(changes, change{At: h.K.Elapsed().Truncate(time.Minute), Expires: expires.Truncate(time.Minute)})
			if _, seen := issued[tok]; seen {
				t.Fatalf("at %v an older token came back", h.K.Elapsed())
			}
			issued[tok] = h.K.Elapsed()
			last = tok
		}
		if err := RunChecked(h, c, time.Minute, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
	// The first token is published at once and valid for 3607 s; each
	// later one replaces its predecessor at the first resync (every
	// minute) after 80 % of its lifetime (48 min 6 s, less up to 10 s of
	// jitter): 47 to 50 minutes later, as the disk is sampled each minute.
	// The refresh due at 48 min falls in the outage (40–56 min): the old
	// token stays, and is replaced soon after the apiserver is back (the
	// volume's retry back-off is at most 2 min 2 s), before it expires.
	if len(changes) < 6 {
		t.Fatalf("only %d tokens in five hours: %+v", len(changes), changes)
	}
	if changes[0].Expires != 60*time.Minute {
		t.Errorf("the first token expires at %v, want 60m (3607 s)", changes[0].Expires)
	}
	for i := 1; i < len(changes); i++ {
		prev, cur := changes[i-1], changes[i]
		gap := cur.At - prev.At
		switch {
		case i == 1:
			if cur.At < 56*time.Minute || cur.At > 59*time.Minute {
				t.Errorf("the refresh across the outage came at %v; want between 56m and 59m (before the old token expires at %v)", cur.At, prev.Expires)
			}
		case gap < 47*time.Minute || gap > 50*time.Minute:
			t.Errorf("token %d replaced its predecessor after %v; want 47m to 50m (80 %% of 3607 s): %+v", i, gap, changes)
		}
		if cur.Expires-cur.At < 59*time.Minute {
			t.Errorf("token %d, published at %v, expires at %v: not a fresh token", i, cur.At, cur.Expires)
		}
	}
}
