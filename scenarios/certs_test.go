package scenarios

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/certs"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// certWorld is a simulated node before its agent starts: the apiserver
// with its scripted CSR approver and signer, and the node's certificate
// store. The agent starts once the bootstrap has its certificate, as the
// daemon does.
type certWorld struct {
	h     *harness.Harness
	store *harness.CertStore
	// pending, when set, keeps the request's key across managers (the
	// daemon's kubelet-client.key.tmp across restarts).
	pending *harness.KeyFile
	// installed records when each certificate was installed.
	installed []time.Duration
}

func newCertWorld(t *testing.T, seed uint64) *certWorld {
	t.Helper()
	h := harness.New(harness.Config{
		Seed:   seed,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
	})
	t.Cleanup(h.Close)
	return &certWorld{h: h, store: &harness.CertStore{}}
}

func (w *certWorld) core() deps.Core {
	return deps.Core{Clock: w.h.K, Rand: w.h.K.Rand(), Tasks: w.h.K.Tasks(), Log: w.h.K.Logger().With("component", "node")}
}

func (w *certWorld) manager(req certs.Request, wait time.Duration) *certs.Manager {
	ports := certs.Ports{CSR: w.h.API, Keys: harness.KeyGen{Rand: w.h.K.Rand()}, Store: w.store}
	if w.pending != nil {
		ports.Pending = w.pending
	}
	return certs.New(w.core(), ports,
		certs.Config{Name: "client certificate of node " + w.h.NodeName, Request: req, Wait: wait,
			OnChange: func(*tls.Certificate) { w.installed = append(w.installed, w.h.K.Elapsed()) }})
}

// bootstrap runs Ensure as a task and returns a function reporting its
// result once it has one.
func (w *certWorld) bootstrap(m *certs.Manager) func() (error, bool) {
	var (
		done bool
		res  error
	)
	w.h.K.Tasks().Go("tls bootstrap", func() {
		res = m.Ensure(context.Background())
		done = true
	})
	return func() (error, bool) { return res, done }
}

func (w *certWorld) runUntilBootstrapped(t *testing.T, result func() (error, bool), limit time.Duration) error {
	t.Helper()
	if err := w.h.K.RunUntil(func() bool { _, ok := result(); return ok }, limit); err != nil {
		t.Fatalf("bootstrap did not end within %v: %v", limit, err)
	}
	err, _ := result()
	return err
}

// verifyClient checks a certificate against the simulated cluster CA as
// the apiserver's x509 authenticator does, and returns the user and groups.
func verifyClient(t *testing.T, w *certWorld, leaf *x509.Certificate) (string, []string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(w.h.API.User().ClusterCA())
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: w.h.K.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate does not verify against the cluster CA: %v", err)
	}
	return leaf.Subject.CommonName, leaf.Subject.Organization
}

// TestCertsBootstrapWithApproval: a node with no certificate requests one
// (signer kube-apiserver-client-kubelet, CN system:node:<name>, O
// system:nodes), gets it once the approver signs it, and then joins: the
// agent registers the node and it becomes Ready.
func TestCertsBootstrapWithApproval(t *testing.T) {
	w := newCertWorld(t, 141)
	w.h.API.User().SignCSRs(&apiserver.CSRPolicy{Delay: 30 * time.Second, Duration: 30 * 24 * time.Hour})
	m := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
	if m.Current() != nil {
		t.Fatal("a certificate before the bootstrap")
	}
	if err := w.runUntilBootstrapped(t, w.bootstrap(m), 10*time.Minute); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	if got := w.h.K.Elapsed(); got < 30*time.Second || got > 40*time.Second {
		t.Errorf("bootstrapped after %v, want just after the approver's 30 s", got)
	}
	csrs := w.h.API.User().CSRs()
	if len(csrs) != 1 {
		t.Fatalf("%d certificate signing requests, want 1", len(csrs))
	}
	c := csrs[0]
	type spec struct {
		Signer string
		Usages []certificatesv1.KeyUsage
		Prefix bool
	}
	want := spec{certificatesv1.KubeAPIServerClientKubeletSignerName, []certificatesv1.KeyUsage{"digital signature", "client auth"}, true}
	if d := cmp.Diff(want, spec{c.Spec.SignerName, c.Spec.Usages, strings.HasPrefix(c.Name, "node-csr-")}); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
	cur := m.Current()
	if cur == nil {
		t.Fatal("no current certificate after the bootstrap")
	}
	user, groups := verifyClient(t, w, cur.Leaf)
	if d := cmp.Diff([]string{"system:node:sim-node", "system:nodes"}, append([]string{user}, groups...)); d != "" {
		t.Errorf("identity (-want +got):\n%s", d)
	}
	if life := cur.Leaf.NotAfter.Sub(cur.Leaf.NotBefore); life != 30*24*time.Hour+apiserver.SigningBackdate {
		t.Errorf("lifetime %v, want 30 days and the signer's backdate", life)
	}
	// A restart reuses the stored certificate: no new request.
	again := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
	if err := w.runUntilBootstrapped(t, w.bootstrap(again), time.Minute); err != nil || len(w.h.API.User().CSRs()) != 1 {
		t.Errorf("restart: err %v, %d requests; want the stored certificate reused", err, len(w.h.API.User().CSRs()))
	}
	w.h.StartAgent()
	runUntil(t, w.h, "the node is Ready", 2*time.Minute, func() bool {
		c := nodeReadyCondition(w.h.API.User().Nodes(), w.h.NodeName)
		return c != nil && c.Status == corev1.ConditionTrue
	})
}

// TestCertsBootstrapThroughOutage: the apiserver is down when the node
// starts, and again while it waits for its request: creation is retried
// with back-off, the broken wait resumes on the same request (no second
// request is created), and the node gets its certificate once the
// apiserver is back.
func TestCertsBootstrapThroughOutage(t *testing.T) {
	w := newCertWorld(t, 142)
	api := w.h.API
	api.User().SignCSRs(&apiserver.CSRPolicy{Delay: time.Minute, Duration: 30 * 24 * time.Hour})
	api.Down(true)
	m := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
	result := w.bootstrap(m)
	if err := w.h.K.RunFor(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	creates := api.Requests()[apiserver.Request{Verb: apiserver.VerbCreate, Resource: "certificatesigningrequests"}]
	if creates < 3 {
		t.Errorf("%d creation attempts during a 2 min outage, want retries with back-off", creates)
	}
	if len(api.User().CSRs()) != 0 {
		t.Fatal("a request was created while the apiserver was down")
	}
	if m.ServerHealthy() {
		t.Error("the apiserver counts as healthy while nothing answers")
	}
	api.Down(false)
	if err := w.h.K.RunUntil(func() bool { return len(api.User().CSRs()) == 1 }, 2*time.Minute); err != nil {
		t.Fatalf("no request after the apiserver came back: %v", err)
	}
	if err := w.h.K.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	api.Down(true) // the approver signs while the node cannot see it
	if err := w.h.K.RunFor(4 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if c := api.User().CSRs()[0]; len(c.Status.Certificate) == 0 {
		t.Fatal("the approver did not sign during the outage")
	}
	if _, done := result(); done || m.Current() != nil {
		t.Fatal("the node saw its certificate while the apiserver was down")
	}
	api.Down(false)
	if err := w.runUntilBootstrapped(t, result, 2*time.Minute); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	if n := len(api.User().CSRs()); n != 1 {
		t.Errorf("%d requests, want the one request resumed", n)
	}
	if m.Current() == nil {
		t.Error("no certificate after the outage")
	}
	if !m.ServerHealthy() {
		t.Error("the apiserver counts as unhealthy after it answered")
	}
}

// TestCertsBootstrapPendingAcrossRestart: the node restarts (its
// bootstrap ends with a crash) while its request is pending. With the key
// kept (the daemon's kubelet-client.key.tmp) the restarted node asks with
// the same key, which names the same request: it waits for that one
// request, and once it is approved (after the restart, or while the node
// was down) installs the certificate issued for that key and drops the
// kept key. Without a kept key the restart makes a second request, which
// an approver would have to approve again.
func TestCertsBootstrapPendingAcrossRestart(t *testing.T) {
	for _, c := range []struct {
		name             string
		keep             bool
		approveWhileDown bool
	}{
		{"key kept, approved after the restart", true, false},
		{"key kept, approved while down", true, true},
		{"no key kept", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newCertWorld(t, 146)
			if c.keep {
				w.pending = &harness.KeyFile{}
			}
			api := w.h.API
			ctx, crash := w.h.K.WithCancel(context.Background())
			first := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
			firstDone := false
			w.h.K.Tasks().Go("tls bootstrap before the restart", func() {
				_ = first.Ensure(ctx)
				firstDone = true
			})
			if err := w.h.K.RunFor(10 * time.Minute); err != nil {
				t.Fatal(err)
			}
			if n := len(api.User().CSRs()); n != 1 {
				t.Fatalf("%d requests before the restart, want 1 (pending)", n)
			}
			firstReq := api.User().CSRs()[0]
			crash()
			if err := w.h.K.RunUntil(func() bool { return firstDone }, time.Minute); err != nil {
				t.Fatalf("the first bootstrap did not end with the crash: %v", err)
			}
			if c.approveWhileDown {
				if err := api.User().ApproveCSR(firstReq.Name, 30*24*time.Hour); err != nil {
					t.Fatal(err)
				}
			}

			second := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
			result := w.bootstrap(second)
			if err := w.h.K.RunFor(5 * time.Minute); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range api.User().CSRs() {
				names = append(names, r.Name)
			}
			want := []string{firstReq.Name}
			if !c.keep {
				if len(names) != 2 {
					t.Fatalf("requests %v without a kept key, want a second one after the restart", names)
				}
				want = append(want, names[1])
			}
			if d := cmp.Diff(want, names); d != "" {
				t.Fatalf("requests after the restart (-want +got):\n%s", d)
			}
			latest := names[len(names)-1]
			if !c.approveWhileDown {
				if _, done := result(); done {
					t.Fatal("the restarted bootstrap ended before anyone approved its request")
				}
				if err := api.User().ApproveCSR(latest, 30*24*time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.runUntilBootstrapped(t, result, 5*time.Minute); err != nil {
				t.Fatalf("bootstrap after the restart: %v", err)
			}
			cur := second.Current()
			if cur == nil {
				t.Fatal("no certificate after the approval")
			}
			got, err := x509.MarshalPKIXPublicKey(cur.Leaf.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			if first := requestKey(t, firstReq); (string(got) == string(first)) != c.keep {
				t.Errorf("certificate for the first run's key: %v, want %v", string(got) == string(first), c.keep)
			}
			if c.keep {
				if kept, _ := w.pending.Load(); kept != nil || w.pending.Saves() != 1 {
					t.Errorf("kept key after the issuance: %d bytes, %d keys saved; want none left, one saved", len(kept), w.pending.Saves())
				}
			}
		})
	}
}

// TestCertsBootstrapKeptKeyOfExpiredIssue: the request was issued while
// the node was down, and the certificate expired before the restart. The
// restarted node finds its request settled, says the certificate expired,
// and drops the kept key, so the next start asks anew instead of finding
// the same expired certificate forever.
func TestCertsBootstrapKeptKeyOfExpiredIssue(t *testing.T) {
	w := newCertWorld(t, 147)
	w.pending = &harness.KeyFile{}
	api := w.h.API
	ctx, crash := w.h.K.WithCancel(context.Background())
	first := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
	w.h.K.Tasks().Go("tls bootstrap before the restart", func() { _ = first.Ensure(ctx) })
	if err := w.h.K.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	crash()
	name := api.User().CSRs()[0].Name
	if err := api.User().ApproveCSR(name, 15*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := w.h.K.RunFor(30 * time.Minute); err != nil {
		t.Fatal(err)
	}
	err := w.runUntilBootstrapped(t, w.bootstrap(w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), name) {
		t.Fatalf("restart after the issued certificate expired: %v, want an error naming %s and the expiry", err, name)
	}
	if kept, _ := w.pending.Load(); kept != nil {
		t.Error("the key of the settled request is still kept")
	}
	api.User().SignCSRs(&apiserver.CSRPolicy{Delay: 10 * time.Second, Duration: 30 * 24 * time.Hour})
	again := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
	if err := w.runUntilBootstrapped(t, w.bootstrap(again), 5*time.Minute); err != nil {
		t.Fatalf("the next start: %v", err)
	}
	if n := len(api.User().CSRs()); n != 2 || again.Current() == nil {
		t.Errorf("%d requests, certificate %v; want a second request with a new key, issued", n, again.Current() != nil)
	}
}

// requestKey is the DER public key a CertificateSigningRequest was made with.
func requestKey(t *testing.T, csr *certificatesv1.CertificateSigningRequest) []byte {
	t.Helper()
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		t.Fatalf("request %s is not PEM", csr.Name)
	}
	r, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatalf("request %s: %v", csr.Name, err)
	}
	der, err := x509.MarshalPKIXPublicKey(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestCertsBootstrapDenied: a denied request ends the bootstrap with an
// error naming the request, the reason and the message, and its kept key
// is dropped (the next start asks anew).
func TestCertsBootstrapDenied(t *testing.T) {
	w := newCertWorld(t, 143)
	w.pending = &harness.KeyFile{}
	w.h.API.User().SignCSRs(&apiserver.CSRPolicy{Delay: 5 * time.Second, Deny: true, DenyReason: "NotOurNode", DenyMessage: "unknown machine"})
	m := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultBootstrapWait)
	err := w.runUntilBootstrapped(t, w.bootstrap(m), time.Minute)
	if !errors.Is(err, certs.ErrDenied) {
		t.Fatalf("bootstrap error %v, want ErrDenied", err)
	}
	name := w.h.API.User().CSRs()[0].Name
	for _, part := range []string{name, "NotOurNode", "unknown machine", "client certificate of node sim-node"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	if m.Current() != nil {
		t.Error("a certificate after a denial")
	}
	if kept, _ := w.pending.Load(); kept != nil {
		t.Error("the denied request's key is still kept: the next start would find the same denied request")
	}
}

// TestCertsBootstrapTimesOut: a request nobody approves ends the bootstrap
// after the bound with an error naming the request and the signer.
func TestCertsBootstrapTimesOut(t *testing.T) {
	w := newCertWorld(t, 144)
	m := w.manager(certs.ClientRequest(w.h.NodeName), time.Hour)
	err := w.runUntilBootstrapped(t, w.bootstrap(m), 2*time.Hour)
	if !errors.Is(err, certs.ErrTimedOut) {
		t.Fatalf("bootstrap error %v, want ErrTimedOut", err)
	}
	if got := w.h.K.Elapsed(); got != time.Hour {
		t.Errorf("gave up after %v, want 1h", got)
	}
	name := w.h.API.User().CSRs()[0].Name
	for _, part := range []string{name, certificatesv1.KubeAPIServerClientKubeletSignerName, "is it approved?"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
}

// window is an apiserver outage, from and to virtual elapsed times.
type window struct{ From, To time.Duration }

// rotationRun runs the client certificate over months: bootstrap, then
// rotation, with the apiserver down during outages, checking every 10
// virtual minutes that the node holds a valid certificate (each new one
// verified against the cluster CA).
func rotationRun(t *testing.T, seed uint64, months int, outages []window) *certWorld {
	t.Helper()
	w := newCertWorld(t, seed)
	w.h.API.User().SignCSRs(&apiserver.CSRPolicy{Delay: 20 * time.Second, Duration: 30 * 24 * time.Hour})
	m := w.manager(certs.ClientRequest(w.h.NodeName), certs.DefaultRotationWait)
	if err := w.runUntilBootstrapped(t, w.bootstrap(m), 10*time.Minute); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	ctx, cancel := w.h.K.WithCancel(context.Background())
	defer cancel()
	w.h.K.Tasks().Go("client certificate rotation", func() { m.Run(ctx) })
	end := time.Duration(months) * 30 * 24 * time.Hour
	const step = 10 * time.Minute
	var seen *x509.Certificate
	for at := w.h.K.Elapsed().Truncate(step) + step; at <= end; at += step {
		if err := w.h.K.RunFor(at - w.h.K.Elapsed()); err != nil {
			t.Fatal(err)
		}
		for _, o := range outages {
			switch at {
			case o.From:
				w.h.API.Down(true)
			case o.To:
				w.h.API.Down(false)
			}
		}
		cur := m.Current()
		if cur == nil {
			t.Fatalf("at %v the node has no valid client certificate", w.h.K.Elapsed())
		}
		if cur.Leaf != seen {
			verifyClient(t, w, cur.Leaf)
			seen = cur.Leaf
		}
	}
	return w
}

// TestCertsRotationOverSixMonths: with 30-day certificates, over six
// virtual months the node always holds a valid client certificate and
// renews each one at a random point between 70 % and 90 % of its
// lifetime; an apiserver outage covering the whole first rotation window
// (days 20–27.5) delays that rotation until the apiserver is back (the old
// certificate kept meanwhile), still before it expires.
func TestCertsRotationOverSixMonths(t *testing.T) {
	day := 24 * time.Hour
	outages := []window{{From: 20 * day, To: 27*day + 12*time.Hour}, {From: 100 * day, To: 100*day + 6*time.Hour}}
	w := rotationRun(t, 145, 6, outages)
	hist := w.store.History()
	if len(hist) < 7 || len(hist) != len(w.installed) {
		t.Fatalf("%d certificates (%d installs) in six months, want at least 7 (one per 21–27 days)", len(hist), len(w.installed))
	}
	epoch := w.h.K.Now().Add(-w.h.K.Elapsed())
	var fracs []string
	distinct := map[string]bool{}
	for i := 1; i < len(hist); i++ {
		prev := hist[i-1]
		life := prev.NotAfter.Sub(prev.NotBefore)
		at := epoch.Add(w.installed[i])
		frac := float64(at.Sub(prev.NotBefore)) / float64(life)
		fracs = append(fracs, fmt.Sprintf("%.3f", frac))
		distinct[fmt.Sprintf("%.2f", frac)] = true
		earliest, latest := prev.NotBefore.Add(life*7/10), prev.NotBefore.Add(life*9/10)
		for _, o := range outages {
			if from, to := epoch.Add(o.From), epoch.Add(o.To); from.Before(latest) && to.After(earliest) && to.After(latest) {
				latest = to
			}
		}
		if at.Before(earliest) || at.After(latest.Add(2*time.Minute)) {
			t.Errorf("certificate %d installed at %.3f of its predecessor's lifetime, want 0.70–0.90 or just after an outage over that window", i, frac)
		}
		if !at.Before(prev.NotAfter) {
			t.Errorf("certificate %d installed after its predecessor expired", i)
		}
	}
	if first := epoch.Add(w.installed[1]); first.Before(epoch.Add(outages[0].To)) {
		t.Errorf("the first rotation happened at %v, during the outage", first.Sub(epoch))
	}
	creates := w.h.API.Requests()[apiserver.Request{Verb: apiserver.VerbCreate, Resource: "certificatesigningrequests"}]
	if creates <= len(w.h.API.User().CSRs()) {
		t.Errorf("%d creation attempts for %d requests: the outage caused no retry", creates, len(w.h.API.User().CSRs()))
	}
	if len(distinct) < 3 {
		t.Errorf("rotation points %v show no jitter", fracs)
	}
	t.Logf("%d certificates; rotated at %v of the lifetime; %d creation attempts", len(hist), fracs, creates)
}

// TestCertsRotationDeterministic: the same seed replays the same months
// (same trace hash); another seed rotates at other points.
func TestCertsRotationDeterministic(t *testing.T) {
	run := func(seed uint64) (string, []time.Duration) {
		w := rotationRun(t, seed, 3, nil)
		return w.h.K.Trace().Hash(), w.installed
	}
	h1, at1 := run(7)
	t.Logf("seed 7: trace %s, installs at %v", h1, at1)
	h2, at2 := run(7)
	if h1 != h2 || !cmp.Equal(at1, at2) {
		t.Errorf("seed 7 twice: hashes %s/%s, installs %v / %v", h1, h2, at1, at2)
	}
	_, at3 := run(8)
	if cmp.Equal(at1, at3) {
		t.Errorf("seeds 7 and 8 rotated at the same moments %v", at1)
	}
}

// TestCertsServingRequest: the serving certificate is requested from the
// kubelet-serving signer with the node's names and addresses, and serves
// them.
func TestCertsServingRequest(t *testing.T) {
	w := newCertWorld(t, 146)
	w.h.API.User().SignCSRs(&apiserver.CSRPolicy{Delay: time.Second})
	ips := []net.IP{net.ParseIP("10.0.0.7")}
	m := certs.New(w.core(), certs.Ports{CSR: w.h.API, Keys: harness.KeyGen{Rand: w.h.K.Rand()}, Store: w.store},
		certs.Config{Name: "serving certificate", Request: certs.ServingRequest(w.h.NodeName, []string{w.h.NodeName}, ips)})
	if err := w.runUntilBootstrapped(t, w.bootstrap(m), time.Minute); err != nil {
		t.Fatalf("serving certificate: %v", err)
	}
	c := w.h.API.User().CSRs()[0]
	if c.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		t.Errorf("signer %q", c.Spec.SignerName)
	}
	leaf := m.Current().Leaf
	roots := x509.NewCertPool()
	roots.AddCert(w.h.API.User().ClusterCA())
	for _, host := range []string{"sim-node", "10.0.0.7"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: w.h.K.Now()}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
}

// TestClientCertValidInvariant: with the agent renewing 5-minute client
// certificates, client-cert-valid holds over 20 minutes (four renewals or
// more); once the approver starts denying, the last certificate lapses and
// the invariant reports it.
func TestClientCertValidInvariant(t *testing.T) {
	h := harness.New(harness.Config{
		Seed: 147, ClientCertLifetime: 5 * time.Minute,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	c := NewChecker(h)
	check := func(d time.Duration) {
		t.Helper()
		for end := h.K.Elapsed() + d; h.K.Elapsed() < end; {
			if err := h.K.RunFor(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			c.Check()
		}
	}
	check(20 * time.Minute)
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations while certificates are renewed: %v", v)
	}
	if n := len(h.Certs.History()); n < 5 {
		t.Fatalf("%d certificates in 20 minutes of 5-minute certificates, want renewals", n)
	}
	h.API.User().SignCSRs(&apiserver.CSRPolicy{Delay: time.Second, Deny: true, DenyReason: "Revoked"})
	check(10 * time.Minute)
	v := c.Violations()
	if len(v) == 0 || v[0].Invariant != "client-cert-valid" {
		t.Fatalf("violations %v, want client-cert-valid once renewals are denied", v)
	}
	t.Logf("reported: %v", v[0])
}
