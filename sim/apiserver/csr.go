package apiserver

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// CertificateSigningRequests (certificates.k8s.io/v1) and a scripted
// approver and signer standing in for kube-controller-manager's
// csrapproving and csrsigning controllers, with a simulated cluster CA.
// Everything is deterministic: the CA key is ed25519 from a fixed seed
// (ed25519 signatures use no randomness), serial numbers count up.

var csrResource = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}

var _ deps.CSRAPI = (*Server)(nil)

// Defaults of the simulated signer, as kube-controller-manager's.
const (
	// DefaultSigningDuration is --cluster-signing-duration's default.
	DefaultSigningDuration = 365 * 24 * time.Hour
	// SigningBackdate is how far back a certificate's notBefore is set.
	SigningBackdate = 5 * time.Minute
	// MinCSRExpirationSeconds is the least spec.expirationSeconds allowed.
	MinCSRExpirationSeconds = 600
)

// CSRPolicy is the scripted approver and signer: what becomes of every
// request, Delay after it is created.
type CSRPolicy struct {
	// Delay is how long after its creation a request is decided.
	Delay time.Duration
	// Deny denies every request (reason DenyReason, message DenyMessage)
	// instead of approving and signing it.
	Deny                    bool
	DenyReason, DenyMessage string
	// Duration is the lifetime of the certificates signed (a shorter
	// spec.expirationSeconds wins); 0 means DefaultSigningDuration.
	Duration time.Duration
}

// csrState is the server's store of requests and its signer.
type csrState struct {
	items   map[string]*certificatesv1.CertificateSigningRequest
	waiters map[int]deps.Signal
	nextW   int
	policy  *CSRPolicy
	ca      *x509.Certificate
	caKey   ed25519.PrivateKey
	serial  int64
}

// what names a request in errors and request counts.
func csrWhat(name string) string { return "certificatesigningrequests " + name }

// CreateCSR creates a request; the policy, if any, decides it later.
func (s *Server) CreateCSR(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	if err := s.request(ctx, VerbCreate, csrWhat(csr.Name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.csr.items == nil {
		s.csr.items = map[string]*certificatesv1.CertificateSigningRequest{}
	}
	if csr.Name == "" {
		return nil, apierrors.NewBadRequest("metadata.name: Required value")
	}
	if s.csr.items[csr.Name] != nil {
		return nil, apierrors.NewAlreadyExists(csrResource, csr.Name)
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < MinCSRExpirationSeconds {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.expirationSeconds: Invalid value: %d: may not specify a duration less than %d seconds", *e, MinCSRExpirationSeconds))
	}
	out := csr.DeepCopy()
	out.UID = types.UID(s.nextUID())
	out.ResourceVersion = fmt.Sprint(s.nextRV())
	out.CreationTimestamp = metav1.NewTime(s.now())
	out.Status = certificatesv1.CertificateSigningRequestStatus{}
	if s.node != "" {
		out.Spec.Username = "system:node:" + s.node
		out.Spec.Groups = []string{"system:nodes", "system:authenticated"}
	}
	s.csr.items[out.Name] = out
	s.log.Info("apiserver: certificate signing request created", "csr", out.Name, "signer", out.Spec.SignerName)
	if p := s.csr.policy; p != nil {
		name := out.Name
		s.tasks.AfterFunc("csr controller "+name, p.Delay, func() { s.decide(name) })
	}
	s.notifyCSRLocked()
	return out.DeepCopy(), nil
}

// GetCSR reads a request.
func (s *Server) GetCSR(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	if err := s.request(ctx, VerbGet, csrWhat(name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.csr.items[name]
	if c == nil {
		return nil, apierrors.NewNotFound(csrResource, name)
	}
	return c.DeepCopy(), nil
}

// WaitCSR blocks until the request has a certificate or is denied or
// failed. Going down breaks it with the connection error.
func (s *Server) WaitCSR(ctx context.Context, name string, uid types.UID) (*certificatesv1.CertificateSigningRequest, error) {
	what := csrWhat(name)
	if err := s.request(ctx, VerbWatch, what); err != nil {
		return nil, err
	}
	sig := s.tasks.NewSignal("apiserver watch " + what)
	s.mu.Lock()
	id := s.csr.nextW
	s.csr.nextW++
	if s.csr.waiters == nil {
		s.csr.waiters = map[int]deps.Signal{}
	}
	s.csr.waiters[id] = sig
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.csr.waiters, id)
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		if s.faults.down {
			s.mu.Unlock()
			return nil, s.refused(VerbWatch, what)
		}
		c := s.csr.items[name]
		if c == nil || c.UID != uid {
			s.mu.Unlock()
			return nil, apierrors.NewNotFound(csrResource, name)
		}
		if csrDone(c) {
			out := c.DeepCopy()
			s.mu.Unlock()
			s.response()
			return out, nil
		}
		s.mu.Unlock()
		if err := sig.Wait(ctx); err != nil {
			return nil, fmt.Errorf("%s %s: %w", VerbWatch, what, err)
		}
	}
}

// csrDone: the request has a certificate, or is denied or failed.
func csrDone(c *certificatesv1.CertificateSigningRequest) bool {
	if len(c.Status.Certificate) > 0 {
		return true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed {
			return true
		}
	}
	return false
}

// notifyCSRLocked wakes every request watch. Caller holds mu.
func (s *Server) notifyCSRLocked() {
	ids := make([]int, 0, len(s.csr.waiters))
	for id := range s.csr.waiters {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		s.csr.waiters[id].Notify()
	}
}

// decide is the policy's verdict on a request, as a controller writes it.
func (s *Server) decide(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, c := s.csr.policy, s.csr.items[name]
	if p == nil || c == nil || csrDone(c) {
		return
	}
	if p.Deny {
		s.conditionLocked(c, certificatesv1.CertificateDenied, p.DenyReason, p.DenyMessage)
		return
	}
	s.conditionLocked(c, certificatesv1.CertificateApproved, "AutoApproved", "Auto approving kubelet certificate after SubjectAccessReview.")
	s.signLocked(c, p.Duration)
}

// conditionLocked adds a condition. Caller holds mu.
func (s *Server) conditionLocked(c *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType, reason, message string) {
	now := metav1.NewTime(s.now())
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastUpdateTime: now, LastTransitionTime: now,
	})
	c.ResourceVersion = fmt.Sprint(s.nextRV())
	s.log.Info("apiserver: certificate signing request "+strings.ToLower(string(typ)), "csr", c.Name, "reason", reason)
	s.notifyCSRLocked()
}

// signLocked issues the certificate of an approved request with the
// simulated CA, or marks it Failed when the signer's rules refuse it.
// Caller holds mu.
func (s *Server) signLocked(c *certificatesv1.CertificateSigningRequest, duration time.Duration) {
	block, _ := pem.Decode(c.Spec.Request)
	if block == nil {
		s.conditionLocked(c, certificatesv1.CertificateFailed, "SignerValidationFailure", "spec.request holds no PEM block")
		return
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err == nil {
		err = req.CheckSignature()
	}
	if err == nil {
		err = signerRules(c, req)
	}
	if err != nil {
		s.conditionLocked(c, certificatesv1.CertificateFailed, "SignerValidationFailure", err.Error())
		return
	}
	if duration <= 0 {
		duration = DefaultSigningDuration
	}
	if e := c.Spec.ExpirationSeconds; e != nil {
		duration = min(duration, time.Duration(*e)*time.Second)
	}
	s.ensureCALocked()
	now := s.now()
	s.csr.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(s.csr.serial),
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    now.Add(-SigningBackdate),
		NotAfter:     now.Add(duration),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	for _, u := range c.Spec.Usages {
		switch u {
		case certificatesv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		case certificatesv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		}
	}
	der, err := x509.CreateCertificate(zeroReader{}, tmpl, s.csr.ca, req.PublicKey, s.csr.caKey)
	if err != nil {
		s.conditionLocked(c, certificatesv1.CertificateFailed, "SignerFailure", err.Error())
		return
	}
	c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	c.ResourceVersion = fmt.Sprint(s.nextRV())
	s.log.Info("apiserver: certificate issued", "csr", c.Name, "serial", s.csr.serial, "notAfter", tmpl.NotAfter)
	s.notifyCSRLocked()
}

// signerRules are the kubelet signers' checks of a request.
func signerRules(c *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	allowed := map[certificatesv1.KeyUsage]bool{certificatesv1.UsageDigitalSignature: true, certificatesv1.UsageKeyEncipherment: true}
	switch c.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		allowed[certificatesv1.UsageClientAuth] = true
		if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
			return fmt.Errorf("%s certificates may not carry subject alternative names", c.Spec.SignerName)
		}
	case certificatesv1.KubeletServingSignerName:
		allowed[certificatesv1.UsageServerAuth] = true
		if len(req.DNSNames)+len(req.IPAddresses) == 0 {
			return fmt.Errorf("%s certificates need a DNS name or an IP address", c.Spec.SignerName)
		}
	default:
		return fmt.Errorf("unknown signer %q", c.Spec.SignerName)
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Errorf("subject %q: want CN system:node:<name> and O system:nodes", req.Subject)
	}
	for _, u := range c.Spec.Usages {
		if !allowed[u] {
			return fmt.Errorf("usage %q not allowed for %s", u, c.Spec.SignerName)
		}
	}
	return nil
}

// ensureCALocked makes the simulated cluster CA on first use. Caller
// holds mu.
func (s *Server) ensureCALocked() {
	if s.csr.ca != nil {
		return
	}
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, "lockstep simulated cluster CA")
	s.csr.caKey = ed25519.NewKeyFromSeed(seed)
	now := s.now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sim-cluster-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(zeroReader{}, tmpl, tmpl, s.csr.caKey.Public(), s.csr.caKey)
	if err != nil {
		panic(fmt.Sprintf("apiserver: make the simulated cluster CA: %v", err))
	}
	s.csr.ca, _ = x509.ParseCertificate(der)
}

// zeroReader is the randomness handed to x509 for ed25519 signatures,
// which use none: it keeps the simulated CA deterministic.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// SignCSRs installs the scripted approver and signer; nil removes it
// (requests then stay pending until ApproveCSR or DenyCSR).
func (u *User) SignCSRs(p *CSRPolicy) {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p != nil {
		c := *p
		p = &c
	}
	s.csr.policy = p
}

// ApproveCSR approves and signs a pending request, with duration as the
// certificate's lifetime (0: DefaultSigningDuration).
func (u *User) ApproveCSR(name string, duration time.Duration) error {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.csr.items[name]
	if c == nil {
		return apierrors.NewNotFound(csrResource, name)
	}
	s.conditionLocked(c, certificatesv1.CertificateApproved, "ApprovedByTest", "approved by the scenario")
	s.signLocked(c, duration)
	return nil
}

// DenyCSR denies a request.
func (u *User) DenyCSR(name, reason, message string) error {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.csr.items[name]
	if c == nil {
		return apierrors.NewNotFound(csrResource, name)
	}
	s.conditionLocked(c, certificatesv1.CertificateDenied, reason, message)
	return nil
}

// CSRs lists the requests by creation order (name order within a second).
func (u *User) CSRs() []*certificatesv1.CertificateSigningRequest {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*certificatesv1.CertificateSigningRequest, 0, len(s.csr.items))
	for _, c := range s.csr.items {
		out = append(out, c.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return out
}

// ClusterCA is the simulated cluster CA's certificate (made on first use).
func (u *User) ClusterCA() *x509.Certificate {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureCALocked()
	return s.csr.ca
}
