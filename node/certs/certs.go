// Package certs keeps the node's certificates issued by the cluster: the
// client certificate it talks to the apiserver with (TLS bootstrap with
// the bootstrap credentials, then rotation) and its serving certificate.
// A Manager requests a certificate through a CertificateSigningRequest
// (deps.CSRAPI), waits for its approval and issuance with a bound,
// retrying API failures with back-off, installs it in a Store and renews
// it at a jittered 70–90 % of its lifetime, keeping the old one until the
// new one is issued. All timing is the injected clock's, so the simulator
// drives rotations over virtual months.
package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// Defaults, as the kubelet's.
const (
	// DefaultBootstrapWait bounds the wait for the bootstrap certificate.
	DefaultBootstrapWait = time.Hour
	// DefaultRotationWait bounds the wait for a renewed certificate.
	DefaultRotationWait = 15 * time.Minute
)

// KeyGen makes private keys and the certificate requests they sign.
type KeyGen interface {
	// NewKey makes a fresh private key, in PEM.
	NewKey() (keyPEM []byte, err error)
	// NewRequest makes a certificate request for tmpl signed with keyPEM,
	// in DER; an error when keyPEM is not a key it signs with.
	NewRequest(keyPEM []byte, tmpl *x509.CertificateRequest) (csrDER []byte, err error)
}

// PendingKey keeps the private key of a request that is not issued yet
// across restarts, as the kubelet keeps kubelet-client.key.tmp in its
// certificate directory during the TLS bootstrap: a node restarted while
// its request is pending asks again with the same key, which names the
// same request (see Request.Object), and so waits for that request
// instead of creating another one for an approver to approve.
type PendingKey interface {
	// Load returns the kept key (PEM), nil when none is kept.
	Load() ([]byte, error)
	// Save keeps keyPEM.
	Save(keyPEM []byte) error
	// Remove forgets the kept key; none kept is not an error.
	Remove() error
}

// Store keeps the current certificate and its key (client-go's
// util/certificate.Store; the daemon uses its file store, which writes
// <prefix>-<timestamp>.pem and the <prefix>-current.pem link).
type Store interface {
	// Current is the stored pair; an error when there is none.
	Current() (*tls.Certificate, error)
	// Update stores a new pair and makes it current.
	Update(certPEM, keyPEM []byte) (*tls.Certificate, error)
}

// Ports are what a Manager talks to.
type Ports struct {
	CSR   deps.CSRAPI
	Keys  KeyGen
	Store Store
	// Pending, when set, keeps the key of the request in flight across
	// restarts (the TLS bootstrap's); nil: every request has a new key.
	Pending PendingKey
}

// Config configures a Manager.
type Config struct {
	// Name says which certificate this is in logs and errors ("client
	// certificate of node n").
	Name string
	// Request is what is requested.
	Request Request
	// Wait bounds the wait for one request to be issued (creation
	// retries included).
	Wait time.Duration
	// OnChange is called with each newly installed certificate (the
	// daemon closes the connections that used the old one).
	OnChange func(*tls.Certificate)
}

// Manager keeps one certificate. Current may be called from any task.
type Manager struct {
	core  deps.Core
	ports Ports
	cfg   Config
	log   *slog.Logger

	mu   sync.Mutex
	cert *tls.Certificate
	// unhealthy: the last request to the apiserver got no answer (a
	// network error), as opposed to an answer, even an error status.
	unhealthy bool
}

// New returns a Manager starting from the stored certificate, if any.
func New(core deps.Core, ports Ports, cfg Config) *Manager {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultRotationWait
	}
	m := &Manager{core: core, ports: ports, cfg: cfg, log: core.Log.With("component", "certificates", "certificate", cfg.Name)}
	if c, err := ports.Store.Current(); err == nil && c.Leaf != nil {
		m.cert = c
	} else if err != nil {
		m.log.Info("no stored certificate", "reason", err.Error())
	}
	return m
}

// Current is the certificate in use, or nil when there is none or it has
// expired.
func (m *Manager) Current() *tls.Certificate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cert == nil || m.cert.Leaf == nil || m.core.Clock.Now().After(m.cert.Leaf.NotAfter) {
		return nil
	}
	return m.cert
}

// ServerHealthy reports whether the apiserver answered the manager's last
// request (even with an error status): a certificate that cannot be
// renewed although the server answers calls for a new bootstrap.
func (m *Manager) ServerHealthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.unhealthy
}

// observe records whether a request got an answer from the apiserver.
func (m *Manager) observe(err error) {
	var status apierrors.APIStatus
	answered := err == nil || errors.As(err, &status)
	m.mu.Lock()
	m.unhealthy = !answered
	m.mu.Unlock()
}

// usable reports whether c is valid now and carries what is requested.
func (m *Manager) usable(c *tls.Certificate) bool {
	return c != nil && m.cfg.Request.Satisfied(c.Leaf)
}

// Ensure makes sure a valid certificate is current: it keeps the stored
// one, or requests one and waits for it (at most Config.Wait). A denied or
// failed request, or none issued in time, is an error naming the request.
func (m *Manager) Ensure(ctx context.Context) error {
	if c := m.Current(); m.usable(c) {
		m.log.Info("using the stored certificate", "expires", c.Leaf.NotAfter)
		return nil
	}
	return m.obtain(ctx)
}

// Run renews the certificate until ctx ends: at a random point between
// 70 % and 90 % of its lifetime, or at once when there is none or it does
// not carry what is requested. A failed renewal is retried with back-off
// (2 s doubling to 32 s, as the kubelet's), the old certificate kept
// meanwhile.
func (m *Manager) Run(ctx context.Context) {
	retry := backoff.Curve{Initial: 2 * time.Second, Factor: 2, Max: 32 * time.Second, Jitter: 0.1, Rand: m.core.Rand}
	for ctx.Err() == nil {
		var wait time.Duration
		if c := m.Current(); m.usable(c) {
			deadline := RotationDeadline(c.Leaf.NotBefore, c.Leaf.NotAfter, m.core.Rand)
			wait = m.core.Clock.Until(deadline)
			m.log.Info("waiting for the next certificate rotation", "expires", c.Leaf.NotAfter, "rotateAt", deadline, "in", wait.Round(time.Second))
		}
		if err := m.core.Tasks.Sleep(ctx, wait); err != nil {
			return
		}
		if err := m.obtain(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := retry.Next()
			m.log.Warn("certificate rotation failed; the current certificate is kept", "err", err.Error(), "retryIn", d)
			if m.core.Tasks.Sleep(ctx, d) != nil {
				return
			}
			continue
		}
		retry.Reset()
	}
}

// obtain requests a new certificate and installs it. Failures to reach the
// API are retried with back-off within Config.Wait; the request is
// created again if it disappears.
func (m *Manager) obtain(ctx context.Context) error {
	r := m.cfg.Request
	keyPEM, csrDER, err := m.request()
	if err != nil {
		return fmt.Errorf("%s: %w", m.cfg.Name, err)
	}
	obj, err := r.Object(csrDER)
	if err != nil {
		return fmt.Errorf("%s: %w", m.cfg.Name, err)
	}
	wctx, cancel := m.core.Clock.WithTimeout(ctx, m.cfg.Wait)
	defer cancel()
	retry := backoff.Curve{Initial: time.Second, Factor: 2, Max: 30 * time.Second, Jitter: 0.1, Rand: m.core.Rand}
	var (
		uid     types.UID
		lastErr error
	)
	for {
		if uid == "" {
			uid, lastErr = m.create(wctx, obj)
		}
		if uid != "" {
			var got *certificatesv1.CertificateSigningRequest
			got, lastErr = m.ports.CSR.WaitCSR(wctx, obj.Name, uid)
			if wctx.Err() == nil {
				m.observe(lastErr)
			}
			if lastErr == nil {
				certPEM, done, err := Outcome(got)
				if err != nil {
					// Denied or failed: the next attempt asks anew, with
					// a new key and so a new request.
					m.forgetKey()
					return fmt.Errorf("%s: %w", m.cfg.Name, err)
				}
				if done {
					// Installed or not (e.g. issued while the node was
					// down and expired since), this request is settled.
					err := m.install(obj.Name, certPEM, keyPEM)
					m.forgetKey()
					return err
				}
			} else if apierrors.IsNotFound(lastErr) {
				m.log.Warn("certificate signing request disappeared; creating it again", "csr", obj.Name)
				uid = ""
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: certificate signing request %s: %w", m.cfg.Name, obj.Name, err)
		}
		if wctx.Err() != nil {
			return m.timedOut(obj, lastErr)
		}
		d := retry.Next()
		m.log.Info("certificate signing request: retrying", "csr", obj.Name, "err", fmt.Sprint(lastErr), "retryIn", d)
		if m.core.Tasks.Sleep(wctx, d) != nil {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: certificate signing request %s: %w", m.cfg.Name, obj.Name, err)
			}
			return m.timedOut(obj, lastErr)
		}
	}
}

// request is the key and the certificate request (DER) of a new attempt:
// with the key kept from a previous run when there is one (Ports.Pending),
// else with a new key, kept before it is used.
func (m *Manager) request() (keyPEM, csrDER []byte, err error) {
	tmpl := m.cfg.Request.template()
	if p := m.ports.Pending; p != nil {
		kept, err := p.Load()
		switch {
		case err != nil:
			m.log.Warn("the kept key of a pending request cannot be read; making a new key", "err", err.Error())
		case kept != nil:
			csrDER, err := m.ports.Keys.NewRequest(kept, tmpl)
			if err == nil {
				m.log.Info("requesting with the key kept from a previous attempt (its request may still be pending)")
				return kept, csrDER, nil
			}
			m.log.Warn("the kept key of a pending request is unusable; making a new key", "err", err.Error())
		}
	}
	keyPEM, err = m.ports.Keys.NewKey()
	if err != nil {
		return nil, nil, fmt.Errorf("make a private key: %w", err)
	}
	if p := m.ports.Pending; p != nil {
		if err := p.Save(keyPEM); err != nil {
			return nil, nil, fmt.Errorf("keep the private key of the request: %w", err)
		}
	}
	csrDER, err = m.ports.Keys.NewRequest(keyPEM, tmpl)
	if err != nil {
		return nil, nil, fmt.Errorf("make a certificate request: %w", err)
	}
	return keyPEM, csrDER, nil
}

// forgetKey drops the kept key once its request is settled (issued,
// denied or failed).
func (m *Manager) forgetKey() {
	if p := m.ports.Pending; p != nil {
		if err := p.Remove(); err != nil {
			m.log.Warn("cannot remove the kept key of a settled request", "err", err.Error())
		}
	}
}

// timedOut is the error of a request not issued within Config.Wait.
func (m *Manager) timedOut(obj *certificatesv1.CertificateSigningRequest, lastErr error) error {
	why := "is it approved?"
	if lastErr != nil && !errors.Is(lastErr, context.DeadlineExceeded) {
		why = "last error: " + lastErr.Error()
	}
	return fmt.Errorf("%s: %w after %v: certificate signing request %s (signer %s) was not issued; %s",
		m.cfg.Name, ErrTimedOut, m.cfg.Wait, obj.Name, obj.Spec.SignerName, why)
}

// create creates the request, or finds the one a previous try created.
func (m *Manager) create(ctx context.Context, obj *certificatesv1.CertificateSigningRequest) (types.UID, error) {
	got, err := m.ports.CSR.CreateCSR(ctx, obj.DeepCopy())
	m.observe(err)
	if apierrors.IsAlreadyExists(err) {
		got, err = m.ports.CSR.GetCSR(ctx, obj.Name)
		m.observe(err)
		if err == nil {
			if err := sameRequester(got, obj); err != nil {
				return "", fmt.Errorf("certificate signing request %s exists with another request: %w", obj.Name, err)
			}
			m.log.Info("certificate signing request exists (made by a previous attempt with the same key); waiting for it", "csr", obj.Name)
		}
	}
	if err != nil {
		return "", fmt.Errorf("create certificate signing request %s: %w", obj.Name, err)
	}
	m.log.Info("certificate signing request created; waiting for approval and issuance", "csr", obj.Name, "signer", obj.Spec.SignerName)
	return got.UID, nil
}

// install checks the issued certificate against the key and the request,
// stores it and makes it current.
func (m *Manager) install(name string, certPEM, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%s: certificate issued for %s does not match its key: %w", m.cfg.Name, name, err)
	}
	if !m.cfg.Request.Satisfied(pair.Leaf) {
		return fmt.Errorf("%s: certificate issued for %s has subject %q, want %q", m.cfg.Name, name, pair.Leaf.Subject, m.cfg.Request.Subject)
	}
	if now := m.core.Clock.Now(); now.After(pair.Leaf.NotAfter) {
		return fmt.Errorf("%s: certificate issued for %s expired at %v", m.cfg.Name, name, pair.Leaf.NotAfter)
	}
	stored, err := m.ports.Store.Update(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%s: store the certificate issued for %s: %w", m.cfg.Name, name, err)
	}
	if stored.Leaf == nil {
		stored.Leaf = pair.Leaf
	}
	m.mu.Lock()
	m.cert = stored
	m.mu.Unlock()
	m.log.Info("certificate installed", "csr", name, "notBefore", stored.Leaf.NotBefore, "notAfter", stored.Leaf.NotAfter)
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(stored)
	}
	return nil
}
