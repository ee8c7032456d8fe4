package certs

import (
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// The groups and name prefix of a node's identity.
const (
	NodesGroup        = "system:nodes"
	NodeUserPrefix    = "system:node:"
	requestNamePrefix = "node-csr-"
)

// Errors a request ends with; the returned errors wrap one of them and
// name the request and the cause.
var (
	// ErrDenied: the request was denied (a Denied condition).
	ErrDenied = errors.New("certificate signing request denied")
	// ErrFailed: the signer could not issue the certificate (a Failed
	// condition).
	ErrFailed = errors.New("certificate signing request failed")
	// ErrTimedOut: no certificate was issued within the wait.
	ErrTimedOut = errors.New("timed out waiting for the certificate")
)

// Request is what a certificate is requested for: the signer, the subject,
// the subject alternative names and the key usages.
type Request struct {
	SignerName  string
	Subject     pkix.Name
	DNSNames    []string
	IPAddresses []net.IP
	Usages      []certificatesv1.KeyUsage
	// ExpirationSeconds, when positive, asks the signer for that lifetime
	// (spec.expirationSeconds; at least 600).
	ExpirationSeconds int32
}

// ClientRequest is the node's client certificate request, as the
// kubelet's: signer kubernetes.io/kube-apiserver-client-kubelet, CN
// system:node:<name>, O system:nodes, usages digital signature and client
// auth.
func ClientRequest(nodeName string) Request {
	return Request{
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Subject:    pkix.Name{CommonName: NodeUserPrefix + nodeName, Organization: []string{NodesGroup}},
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}
}

// ServingRequest is the node's serving certificate request, as the
// kubelet's: signer kubernetes.io/kubelet-serving, the same subject as the
// client certificate, the node's host names and addresses as SANs, usages
// digital signature and server auth.
func ServingRequest(nodeName string, hostnames []string, ips []net.IP) Request {
	return Request{
		SignerName:  certificatesv1.KubeletServingSignerName,
		Subject:     pkix.Name{CommonName: NodeUserPrefix + nodeName, Organization: []string{NodesGroup}},
		DNSNames:    slices.Clone(hostnames),
		IPAddresses: slices.Clone(ips),
		Usages:      []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
	}
}

// template is the x509 request the key signs.
func (r Request) template() *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: r.Subject, DNSNames: r.DNSNames, IPAddresses: r.IPAddresses}
}

// Satisfied reports whether leaf carries what r asks for: the subject's
// common name and organizations, and every SAN.
func (r Request) Satisfied(leaf *x509.Certificate) bool {
	if leaf == nil || leaf.Subject.CommonName != r.Subject.CommonName {
		return false
	}
	if !sameSet(leaf.Subject.Organization, r.Subject.Organization) || !sameSet(leaf.DNSNames, r.DNSNames) {
		return false
	}
	var got, want []string
	for _, ip := range leaf.IPAddresses {
		got = append(got, ip.String())
	}
	for _, ip := range r.IPAddresses {
		want = append(want, ip.String())
	}
	return sameSet(got, want)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Object is the CertificateSigningRequest for r with the PEM of csrDER,
// named after the request's public key, subject and usages so that
// creating it again (after a lost answer) finds the same object.
func (r Request) Object(csrDER []byte) (*certificatesv1.CertificateSigningRequest, error) {
	parsed, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return nil, fmt.Errorf("parse the certificate request for %s: %w", r.Subject.CommonName, err)
	}
	pub, err := x509.MarshalPKIXPublicKey(parsed.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encode the public key of the request for %s: %w", r.Subject.CommonName, err)
	}
	h := sha512.New512_256()
	for _, part := range [][]byte{pub, []byte(r.Subject.CommonName), []byte(strings.Join(r.Subject.Organization, ",")), []byte(r.SignerName)} {
		h.Write(part)
		h.Write([]byte{'|'})
	}
	for _, u := range r.Usages {
		h.Write([]byte(u))
		h.Write([]byte{'|'})
	}
	obj := &certificatesv1.CertificateSigningRequest{
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName: r.SignerName,
			Usages:     slices.Clone(r.Usages),
		},
	}
	obj.Name = requestNamePrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	if r.ExpirationSeconds > 0 {
		exp := r.ExpirationSeconds
		obj.Spec.ExpirationSeconds = &exp
	}
	return obj, nil
}

// sameRequester checks that the existing request was made for want's
// subject and signer with want's key: its signature verifies with want's
// public key. Signatures may differ byte for byte (ECDSA signs with fresh
// randomness), so the requests' bytes are not compared.
func sameRequester(existing, want *certificatesv1.CertificateSigningRequest) error {
	parse := func(which string, csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
		block, _ := pem.Decode(csr.Spec.Request)
		if block == nil || block.Type != "CERTIFICATE REQUEST" {
			return nil, fmt.Errorf("the %s request is not a PEM certificate request", which)
		}
		r, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse the %s request: %w", which, err)
		}
		return r, nil
	}
	got, err := parse("existing", existing)
	if err != nil {
		return err
	}
	ours, err := parse("new", want)
	if err != nil {
		return err
	}
	if got.Subject.String() != ours.Subject.String() {
		return fmt.Errorf("subject %q, want %q", got.Subject, ours.Subject)
	}
	if existing.Spec.SignerName != want.Spec.SignerName {
		return fmt.Errorf("signer %q, want %q", existing.Spec.SignerName, want.Spec.SignerName)
	}
	got.PublicKey = ours.PublicKey
	if err := got.CheckSignature(); err != nil {
		return fmt.Errorf("not signed with this node's key: %w", err)
	}
	return nil
}

// Outcome reads a request's status: the issued certificate (PEM), or an
// error wrapping ErrDenied or ErrFailed with the condition's reason and
// message; done is false while the request is pending (approved or not,
// without a certificate).
func Outcome(csr *certificatesv1.CertificateSigningRequest) (certPEM []byte, done bool, err error) {
	for _, c := range csr.Status.Conditions {
		var sentinel error
		switch c.Type {
		case certificatesv1.CertificateDenied:
			sentinel = ErrDenied
		case certificatesv1.CertificateFailed:
			sentinel = ErrFailed
		default:
			continue
		}
		return nil, true, fmt.Errorf("%w: %s: reason %q, message %q", sentinel, csr.Name, c.Reason, c.Message)
	}
	if len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}

// RotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: at a random point between 70 % and 90 % of its lifetime, as
// the kubelet does, so that nodes that joined together do not all renew at
// once.
func RotationDeadline(notBefore, notAfter time.Time, r deps.Rand) time.Time {
	total := notAfter.Sub(notBefore)
	if total <= 0 {
		return notBefore
	}
	// k ten-thousandths of the lifetime, k in [7000, 9000], in integers
	// (no overflow, no rounding).
	const parts = 10000
	k := time.Duration(7000 + r.IntN(2001))
	return notBefore.Add(total/parts*k + total%parts*k/parts)
}
