package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// fixedRand answers IntN with a fixed fraction of n.
type fixedRand struct{ num, den int }

func (r fixedRand) IntN(n int) int { return (n - 1) * r.num / r.den }

func TestRotationDeadlineSpansSeventyToNinetyPercent(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(100 * time.Hour)
	for _, c := range []struct {
		r    fixedRand
		want time.Duration
	}{
		{fixedRand{0, 1}, 70 * time.Hour},
		{fixedRand{1, 2}, 80 * time.Hour},
		{fixedRand{1, 1}, 90 * time.Hour},
	} {
		if got := RotationDeadline(nb, na, c.r).Sub(nb); got != c.want {
			t.Errorf("rand %v: deadline %v after notBefore, want %v", c.r, got, c.want)
		}
	}
	if got := RotationDeadline(na, nb, fixedRand{1, 2}); !got.Equal(na) {
		t.Errorf("inverted validity: %v, want notBefore", got)
	}
}

func TestOutcome(t *testing.T) {
	cond := func(typ certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: corev1.ConditionTrue, Reason: "R", Message: "M"}
	}
	for _, c := range []struct {
		name     string
		status   certificatesv1.CertificateSigningRequestStatus
		done     bool
		cert     string
		sentinel error
	}{
		{"pending", certificatesv1.CertificateSigningRequestStatus{}, false, "", nil},
		{"approved, not signed", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}}, false, "", nil},
		{"issued", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}, Certificate: []byte("PEM")}, true, "PEM", nil},
		{"denied", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied)}}, true, "", ErrDenied},
		{"failed", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateFailed)}, Certificate: nil}, true, "", ErrFailed},
	} {
		csr := &certificatesv1.CertificateSigningRequest{Status: c.status}
		csr.Name = "node-csr-x"
		cert, done, err := Outcome(csr)
		if done != c.done || string(cert) != c.cert || !errors.Is(err, c.sentinel) || (c.sentinel == nil) != (err == nil) {
			t.Errorf("%s: cert %q done %v err %v", c.name, cert, done, err)
		}
		if err != nil && !strings.Contains(err.Error(), `node-csr-x: reason "R", message "M"`) {
			t.Errorf("%s: error %q does not name the request, reason and message", c.name, err)
		}
	}
}

func TestObjectNameFollowsKeyAndRequest(t *testing.T) {
	mk := func(req Request) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, req.template(), key)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	req := ClientRequest("n1")
	der := mk(req)
	a, err := req.Object(der)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := req.Object(der)
	other, _ := req.Object(mk(req))
	if a.Name != b.Name || a.Name == other.Name || !strings.HasPrefix(a.Name, "node-csr-") {
		t.Errorf("names %q %q %q: want the same for one key, another for another key", a.Name, b.Name, other.Name)
	}
	want := certificatesv1.CertificateSigningRequestSpec{
		SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
		Usages:     []certificatesv1.KeyUsage{"digital signature", "client auth"},
	}
	got := a.Spec
	got.Request = nil
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
	parsed, err := x509.ParseCertificateRequest(der)
	if err != nil || parsed.Subject.CommonName != "system:node:n1" || !cmp.Equal(parsed.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("request subject %v (%v)", parsed.Subject, err)
	}
}

func TestSatisfied(t *testing.T) {
	req := ServingRequest("n1", []string{"n1"}, []net.IP{net.ParseIP("10.0.0.1")})
	leaf := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: req.Subject, DNSNames: []string{"n1"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1").To4()}}
	if !req.Satisfied(leaf) {
		t.Error("matching certificate not satisfied")
	}
	moved := ServingRequest("n1", []string{"n1"}, []net.IP{net.ParseIP("10.0.0.2")})
	if moved.Satisfied(leaf) {
		t.Error("a certificate for another address satisfies the request")
	}
	if ClientRequest("n2").Satisfied(leaf) || req.Satisfied(nil) {
		t.Error("another node's or no certificate satisfies the request")
	}
}

func TestSameRequesterChecksTheKeyNotTheBytes(t *testing.T) {
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	obj := func(req Request, key *ecdsa.PrivateKey) *certificatesv1.CertificateSigningRequest {
		der, err := x509.CreateCertificateRequest(rand.Reader, req.template(), key)
		if err != nil {
			t.Fatal(err)
		}
		o, err := req.Object(der)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	req := ClientRequest("n1")
	key := newKey()
	existing := obj(req, key)
	again := obj(req, key)
	if string(existing.Spec.Request) == string(again.Spec.Request) {
		t.Fatal("two ECDSA requests with one key are byte for byte equal; the test needs them to differ")
	}
	if err := sameRequester(existing, again); err != nil {
		t.Errorf("the same key's request after a restart: %v, want compatible", err)
	}
	for name, other := range map[string]*certificatesv1.CertificateSigningRequest{
		"another key":    obj(req, newKey()),
		"another node":   obj(ClientRequest("n2"), key),
		"another signer": obj(ServingRequest("n1", nil, nil), key),
		"not a request":  {Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("junk"), SignerName: req.SignerName}},
	} {
		if err := sameRequester(existing, other); err == nil {
			t.Errorf("%s: compatible, want an error", name)
		}
	}
}
