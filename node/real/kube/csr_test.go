package kube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestCSRClientWaitsForIssuance(t *testing.T) {
	cs := fake.NewClientset()
	c := NewCSRClient(cs)
	ctx := context.Background()
	in := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "node-csr-a", UID: "u1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName}}
	if _, err := c.CreateCSR(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateCSR(ctx, in); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	if _, err := c.WaitCSR(ctx, "node-csr-a", "other-uid"); !apierrors.IsNotFound(err) {
		t.Fatalf("wait on another UID: %v, want NotFound", err)
	}
	type result struct {
		csr *certificatesv1.CertificateSigningRequest
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := c.WaitCSR(ctx, "node-csr-a", "u1")
		done <- result{got, err}
	}()
	// Approval alone does not end the wait; the certificate does.
	approved := in.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, approved, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			t.Fatalf("wait ended on approval alone: %+v", r)
		case <-time.After(50 * time.Millisecond):
		}
		issued := approved.DeepCopy()
		issued.Status.Certificate = []byte("PEM")
		if _, err := cs.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issued, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.err != nil || string(r.csr.Status.Certificate) != "PEM" {
				t.Fatalf("wait: %v, %+v", r.err, r.csr)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the wait did not see the certificate")
		}
	}
}

// testCert makes a certificate for cn signed by itself (parent nil) or
// by parent, valid until notAfter.
func testCert(t *testing.T, cn string, notAfter time.Time, parent *tls.Certificate, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true, IsCA: parent == nil && !server}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
	}
	signerCert, signerKey := tmpl, any(key)
	if parent != nil {
		signerCert, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	pair, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func certPEM(c tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}

// TestRotatingClientCertReconnectsWithTheNewCertificate: the client
// presents the current certificate; after a change and closing the
// connections, requests go out with the new one.
func TestRotatingClientCertReconnectsWithTheNewCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			io.WriteString(w, "anonymous")
			return
		}
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	ca := testCert(t, "ca", time.Now().Add(time.Hour), nil, false)
	one, two := testCert(t, "system:node:one", time.Now().Add(time.Hour), &ca, false), testCert(t, "system:node:two", time.Now().Add(time.Hour), &ca, false)
	current := &one
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM, CertData: []byte("ignored"), KeyData: []byte("ignored")}}
	dyn, closeAll, err := RotatingClientCert(cfg, func() *tls.Certificate { return current })
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(dyn)
	if err != nil {
		t.Fatal(err)
	}
	who := func() string {
		t.Helper()
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := who(); got != "system:node:one" {
		t.Fatalf("first identity %q", got)
	}
	current = &two
	if got := who(); got != "system:node:one" {
		t.Fatalf("a kept-alive connection changed identity without being closed: %q", got)
	}
	closeAll()
	if got := who(); got != "system:node:two" {
		t.Fatalf("after the rotation the client presents %q, want system:node:two", got)
	}
}

func TestKubeconfigCertValidAfterWrite(t *testing.T) {
	dir := t.TempDir()
	ca := testCert(t, "ca", time.Now().Add(time.Hour), nil, false)
	valid := testCert(t, "system:node:n", time.Now().Add(time.Hour), &ca, false)
	expired := testCert(t, "system:node:n", time.Now().Add(-time.Minute), &ca, false)
	from := &rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(ca)}, BearerToken: "abcdef.0123456789abcdef"}
	path := filepath.Join(dir, "kubelet.kubeconfig")
	if ok, why := KubeconfigCertValid(path, time.Now()); ok || why == "" {
		t.Errorf("missing kubeconfig: ok %v (%s)", ok, why)
	}
	write := func(c tls.Certificate) {
		keyDER, _ := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
		data := append(certPEM(c), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
		if err := os.WriteFile(filepath.Join(dir, "kubelet-client-current.pem"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteCertKubeconfig(path, from, filepath.Join(dir, "kubelet-client-current.pem")); err != nil {
		t.Fatal(err)
	}
	write(valid)
	if ok, why := KubeconfigCertValid(path, time.Now()); !ok {
		t.Errorf("valid certificate refused: %s", why)
	}
	got, err := LoadKubeconfig(path)
	if err != nil || got.Host != from.Host || got.BearerToken != "" || string(got.CAData) != string(from.CAData) {
		t.Errorf("written kubeconfig: %+v (%v); want the host and CA, no token", got, err)
	}
	write(expired)
	if ok, why := KubeconfigCertValid(path, time.Now()); ok || !strings.Contains(why, "expired") {
		t.Errorf("expired certificate: ok %v (%s)", ok, why)
	}
}

// TestKeyFileKeepsTheRequestKey: the pending request's key is written
// 0600, read back, signs requests with the same public key, and is gone
// after Remove (twice is fine).
func TestKeyFileKeepsTheRequestKey(t *testing.T) {
	f := KeyFile{Path: filepath.Join(t.TempDir(), "pki", "kubelet-client.key.tmp")}
	if b, err := f.Load(); b != nil || err != nil {
		t.Fatalf("Load before Save = %q, %v; want nil, nil", b, err)
	}
	keys := ECDSAKeys{}
	key, err := keys.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Save(key); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f.Path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v (%v), want mode 0600", st, err)
	}
	kept, err := f.Load()
	if err != nil || string(kept) != string(key) {
		t.Fatalf("Load = %v, want the saved key", err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1"}}
	pub := func(k []byte) string {
		der, err := keys.NewRequest(k, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		r, err := x509.ParseCertificateRequest(der)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := x509.MarshalPKIXPublicKey(r.PublicKey)
		return string(b)
	}
	if pub(key) != pub(kept) {
		t.Error("requests with the kept key carry another public key")
	}
	if _, err := keys.NewRequest([]byte("junk"), tmpl); err == nil {
		t.Error("a request signed with junk, want an error")
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if b, err := f.Load(); b != nil || err != nil {
		t.Errorf("Load after Remove = %q, %v", b, err)
	}
}
