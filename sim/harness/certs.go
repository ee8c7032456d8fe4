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

// NewKey makes a key from the run's randomness (PKCS #8 PEM).
func (g KeyGen) NewKey() ([]byte, error) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(g.Rand.IntN(256))
	}
	der, err := x509.MarshalPKCS8PrivateKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		return nil, fmt.Errorf("encode an ed25519 key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// NewRequest makes a request for tmpl signed with keyPEM (ed25519
// signatures are deterministic: the same key and template give the same
// request).
func (g KeyGen) NewRequest(keyPEM []byte, tmpl *x509.CertificateRequest) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("certificate request for %s: the key is not PEM", tmpl.Subject.CommonName)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate request for %s: %w", tmpl.Subject.CommonName, err)
	}
	csrDER, err := x509.CreateCertificateRequest(nil, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("certificate request for %s: %w", tmpl.Subject.CommonName, err)
	}
	return csrDER, nil
}

// KeyFile is an in-memory certs.PendingKey: it outlives the managers a
// test makes, as the daemon's file outlives a restart.
type KeyFile struct {
	mu    sync.Mutex
	key   []byte
	saves int
}

var _ certs.PendingKey = (*KeyFile)(nil)

// Load returns the kept key, nil when none.
func (f *KeyFile) Load() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.key...), nil
}

// Save keeps keyPEM.
func (f *KeyFile) Save(keyPEM []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key = append([]byte(nil), keyPEM...)
	f.saves++
	return nil
}

// Saves counts the keys saved so far.
func (f *KeyFile) Saves() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saves
}

// Remove forgets the kept key.
func (f *KeyFile) Remove() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key = nil
	return nil
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
