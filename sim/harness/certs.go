package harness

import (
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"

	"github.com/lockstep-dev/lockstep/node/certs"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// KeyGen makes the node's keys in the simulator: ed25519 keys whose seeds
// come from the run's randomness, so requests, their names and the
// certificates issued are the same on every replay of a seed.
type KeyGen struct {
	// Rand is the run's randomness.
	Rand deps.Rand
}

var _ certs.KeyGen = KeyGen{}

// NewRequest makes a key and a request signed with it.
func (g KeyGen) NewRequest(tmpl *x509.CertificateRequest) (keyPEM, csrDER []byte, err error) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(g.Rand.IntN(256))
	}
	key := ed25519.NewKeyFromSeed(seed)
	csrDER, err = x509.CreateCertificateRequest(nil, tmpl, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate request for %s: %w", tmpl.Subject.CommonName, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key for %s: %w", tmpl.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), csrDER, nil
}

// CertStore is an in-memory certs.Store that keeps every certificate
// stored, as the file store keeps every kubelet-client-<ts>.pem.
type CertStore struct {
	mu      sync.Mutex
	current *tls.Certificate
	history []*x509.Certificate
}

var _ certs.Store = (*CertStore)(nil)

// Current is the stored pair.
func (s *CertStore) Current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil, errors.New("no certificate stored")
	}
	c := *s.current
	return &c, nil
}

// Update stores a pair and makes it current.
func (s *CertStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("store certificate: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = &pair
	s.history = append(s.history, pair.Leaf)
	c := pair
	return &c, nil
}

// History lists every certificate stored, oldest first.
func (s *CertStore) History() []*x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*x509.Certificate(nil), s.history...)
}
