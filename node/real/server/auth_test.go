package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRequestAttributes(t *testing.T) {
	at := func(verb, sub string) Attributes { return Attributes{verb, "nodes", sub, "node-a"} }
	tests := []struct {
		method, path string
		want         []Attributes
	}{
		{"GET", "/stats/summary", []Attributes{at("get", "stats")}},
		{"GET", "/stats", []Attributes{at("get", "stats")}},
		{"HEAD", "/metrics", []Attributes{at("get", "metrics")}},
		{"GET", "/metrics/probes", []Attributes{at("get", "metrics")}},
		{"GET", "/metrics/resource", []Attributes{at("get", "metrics")}},
		{"GET", "/metrics/cadvisor", []Attributes{at("get", "metrics")}},
		{"GET", "/metricsfoo", []Attributes{at("get", "proxy")}},
		{"GET", "/logs/messages", []Attributes{at("get", "log")}},
		{"GET", "/containerLogs/default/web/app", []Attributes{at("get", "proxy")}},
		{"GET", "/pods", []Attributes{at("get", "pods"), at("get", "proxy")}},
		{"GET", "/healthz", []Attributes{at("get", "healthz"), at("get", "proxy")}},
		{"GET", "/healthz/syncloop", []Attributes{at("get", "healthz"), at("get", "proxy")}},
		{"GET", "/configz", []Attributes{at("get", "configz"), at("get", "proxy")}},
		{"GET", "/spec/", []Attributes{at("get", "spec")}},
		{"GET", "/debug/pprof/heap", []Attributes{at("get", "proxy")}},
		{"POST", "/checkpoint/ns/pod/c", []Attributes{at("create", "checkpoint")}},
		{"POST", "/exec/ns/pod/c", []Attributes{at("create", "proxy")}},
		{"GET", "/portForward/ns/pod", []Attributes{at("get", "proxy")}},
		{"PUT", "/x", []Attributes{at("update", "proxy")}},
		{"PATCH", "/x", []Attributes{at("patch", "proxy")}},
		{"DELETE", "/x", []Attributes{at("delete", "proxy")}},
		{"OPTIONS", "/x", []Attributes{at("", "proxy")}},
		// A path that walks out of /stats is judged by where it lands.
		{"GET", "/stats/../pods", []Attributes{at("get", "pods"), at("get", "proxy")}},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		if diff := cmp.Diff(tc.want, RequestAttributes(r, "node-a")); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.method, tc.path, diff)
		}
	}
}

func TestFineGrainedAttributesFallBackToProxy(t *testing.T) {
	p := newProvider(t)
	for _, tc := range []struct {
		name  string
		allow string // the one subresource the authorizer allows
		code  int
		asked []string
	}{
		{"configz allowed", "configz", 200, []string{"configz"}},
		{"proxy allowed", "proxy", 200, []string{"configz", "proxy"}},
		{"neither", "stats", 403, []string{"configz", "proxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authz := &recordingAuthz{decide: func(c sarCall) (bool, error) { return c.Subresource == tc.allow, nil }}
			s := newServer(t, p, authz, func(c *Config) { c.Configz = map[string]any{} })
			code, _ := get(t, s.SecureHandler(), "/configz", testToken)
			var asked []string
			for _, c := range authz.recorded() {
				asked = append(asked, c.Subresource)
			}
			if code != tc.code || !cmp.Equal(asked, tc.asked) {
				t.Errorf("GET /configz = %d after asking %v, want %d after %v", code, asked, tc.code, tc.asked)
			}
		})
	}
}

func TestSecurePortAuthentication(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	writeLog(t, logPath(p, "app", 0), "2025-01-01T00:00:00Z stdout F hello")
	authz := &recordingAuthz{}
	s := newServer(t, p, authz)
	tests := []struct {
		name       string
		token      string
		header     string
		wantStatus int
		wantBody   string
	}{
		{name: "no token", wantStatus: 401, wantBody: "Unauthorized\n"},
		{name: "bad token", token: "nope", wantStatus: 401, wantBody: "Unauthorized\n"},
		{name: "TokenReview fails", token: "explode", wantStatus: 401, wantBody: "Unauthorized\n"},
		{name: "not a bearer header", header: "Basic " + testToken, wantStatus: 401, wantBody: "Unauthorized\n"},
		{name: "empty bearer", header: "Bearer ", wantStatus: 401, wantBody: "Unauthorized\n"},
		{name: "good token", token: testToken, wantStatus: 200, wantBody: "hello\n"},
		{name: "lower-case scheme", header: "bearer " + testToken, wantStatus: 200, wantBody: "hello\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(authz.recorded())
			req := httptest.NewRequest("GET", "/containerLogs/default/web/app", nil)
			switch {
			case tc.header != "":
				req.Header.Set("Authorization", tc.header)
			case tc.token != "":
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			s.SecureHandler().ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus || rec.Body.String() != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantStatus, tc.wantBody)
			}
			if asked := len(authz.recorded()) > before; asked != (tc.wantStatus == 200) {
				t.Errorf("authorizer asked = %v for status %d", asked, rec.Code)
			}
		})
	}
}

func TestSecurePortAuthorization(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	writeLog(t, logPath(p, "app", 0), "2025-01-01T00:00:00Z stdout F secret log line")
	authz := &recordingAuthz{decide: func(sarCall) (bool, error) { return false, nil }}
	s := newServer(t, p, authz, func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret metrics") })
	})
	call := func(sub string) sarCall {
		return sarCall{"alice", []string{"devs", AuthenticatedGroup}, "get", "nodes", sub, "node-a"}
	}
	tests := []struct {
		path string
		want []sarCall
	}{
		{"/stats/summary", []sarCall{call("stats")}},
		{"/metrics", []sarCall{call("metrics")}},
		{"/containerLogs/default/web/app", []sarCall{call("proxy")}},
		{"/pods", []sarCall{call("pods"), call("proxy")}},
		{"/healthz", []sarCall{call("healthz"), call("proxy")}},
		{"/no/such/path", []sarCall{call("proxy")}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			before := len(authz.recorded())
			code, body := get(t, s.SecureHandler(), tc.path, testToken)
			if code != http.StatusForbidden || body != "Forbidden\n" {
				t.Errorf("got %d %q, want 403 \"Forbidden\\n\" and nothing else", code, body)
			}
			calls := authz.recorded()[before:]
			if diff := cmp.Diff(tc.want, calls); diff != "" {
				t.Errorf("authorization questions (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("authorizer error is a 500 without detail", func(t *testing.T) {
		authz.decide = func(sarCall) (bool, error) { return false, errors.New("apiserver down: secret detail") }
		code, body := get(t, s.SecureHandler(), "/pods", testToken)
		if code != http.StatusInternalServerError || body != "Internal Server Error\n" {
			t.Errorf("got %d %q", code, body)
		}
	})
	t.Run("no authorizer forbids", func(t *testing.T) {
		s := newServer(t, p, nil)
		if code, _ := get(t, s.SecureHandler(), "/healthz", testToken); code != http.StatusForbidden {
			t.Errorf("got %d, want 403", code)
		}
	})
	t.Run("AlwaysAllow allows", func(t *testing.T) {
		s := newServer(t, p, AlwaysAllow{})
		if code, body := get(t, s.SecureHandler(), "/healthz", testToken); code != 200 || body != "ok" {
			t.Errorf("got %d %q", code, body)
		}
	})
}

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// clientCert issues a client certificate for cn in orgs.
func (ca *testCA) clientCert(t *testing.T, cn string, orgs ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestClientCertificateAuthentication(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	other := newTestCA(t, "other-ca")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t)
	authz := &recordingAuthz{}
	s := newServer(t, p, authz, func(c *Config) { c.ClientCAFile = caFile })
	ts := httptest.NewUnstartedServer(s.SecureHandler())
	ts.TLS = s.TLSConfig()
	ts.StartTLS()
	defer ts.Close()

	serverCert, err := x509.ParseCertificate(s.TLSConfig().Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(serverCert)

	tests := []struct {
		name       string
		cert       *tls.Certificate
		token      string
		wantStatus int
		wantCall   *sarCall
	}{
		{name: "CA-signed certificate", cert: ptr(ca.clientCert(t, "bob", "ops", "admins")), wantStatus: 200,
			wantCall: &sarCall{"bob", []string{"ops", "admins", AuthenticatedGroup}, "get", "nodes", "healthz", "node-a"}},
		{name: "certificate of another CA", cert: ptr(other.clientCert(t, "mallory", "system:masters")), wantStatus: 401},
		{name: "another CA's certificate falls back to the token", cert: ptr(other.clientCert(t, "mallory")), token: testToken, wantStatus: 200,
			wantCall: &sarCall{"alice", []string{"devs", AuthenticatedGroup}, "get", "nodes", "healthz", "node-a"}},
		{name: "no certificate", wantStatus: 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tlsCfg := &tls.Config{RootCAs: roots, ServerName: "node-a"}
			if tc.cert != nil {
				tlsCfg.Certificates = []tls.Certificate{*tc.cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequest("GET", ts.URL+"/healthz", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			before := len(authz.recorded())
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("GET /healthz: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			calls := authz.recorded()[before:]
			var want []sarCall
			if tc.wantCall != nil {
				want = []sarCall{*tc.wantCall}
			}
			if diff := cmp.Diff(want, calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("authorization questions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientCAFileErrors(t *testing.T) {
	p := newProvider(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.crt")
	os.WriteFile(garbage, []byte("not pem"), 0o644)
	for _, file := range []string{filepath.Join(dir, "missing.crt"), garbage} {
		_, err := New(p, Config{CertDir: t.TempDir(), ClientCAFile: file}, nil)
		if err == nil {
			t.Errorf("client CA %s: New succeeded", file)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestClientCAFileReloaded: the client CA file is read again when it
// changes, as the kubelet's dynamic CA content: a certificate of the new
// CA is accepted without a restart, the old CA's no longer; a change that
// cannot be read keeps the previous bundle.
func TestClientCAFileReloaded(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, oldCA.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, newProvider(t), &recordingAuthz{}, func(c *Config) { c.ClientCAFile = caFile })
	ts := httptest.NewUnstartedServer(s.SecureHandler())
	ts.TLS = s.TLSConfig()
	ts.StartTLS()
	defer ts.Close()
	serverCert, _ := x509.ParseCertificate(s.TLSConfig().Certificates[0].Certificate[0])
	roots := x509.NewCertPool()
	roots.AddCert(serverCert)
	status := func(ca *testCA) int {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "node-a",
			Certificates: []tls.Certificate{ca.clientCert(t, "bob", "ops")}}}}
		defer client.CloseIdleConnections()
		resp, err := client.Get(ts.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := status(oldCA), status(newCA); a != 200 || b != 401 {
		t.Fatalf("before the change: old CA %d, new CA %d; want 200, 401", a, b)
	}
	later := time.Now().Add(time.Minute)
	if err := os.WriteFile(caFile, newCA.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(caFile, later, later)
	if a, b := status(oldCA), status(newCA); a != 401 || b != 200 {
		t.Fatalf("after the change: old CA %d, new CA %d; want 401, 200", a, b)
	}
	os.WriteFile(caFile, []byte("half-written"), 0o644)
	os.Chtimes(caFile, later.Add(time.Minute), later.Add(time.Minute))
	if b := status(newCA); b != 200 {
		t.Fatalf("an unreadable change dropped the bundle: new CA %d", b)
	}
}
