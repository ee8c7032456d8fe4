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
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The file names of a generated serving certificate inside CertDir (the
// kubelet's names).
const (
	SelfSignedCertFile = "kubelet.crt"
	SelfSignedKeyFile  = "kubelet.key"
)

// selfSignedValidity is how long a generated serving certificate is valid.
const selfSignedValidity = 365 * 24 * time.Hour

// servingCert loads the configured serving certificate, or the self-signed
// one in cfg.CertDir, generating it when it is missing, expired or does not
// name the node.
func servingCert(cfg Config, nodeName string, now time.Time, log *slog.Logger) (tls.Certificate, error) {
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" {
		if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
			return tls.Certificate{}, errors.New("TLSCertFile and TLSKeyFile must be given together")
		}
		c, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("load serving certificate %s / key %s: %w", cfg.TLSCertFile, cfg.TLSKeyFile, err)
		}
		return c, nil
	}
	if cfg.CertDir == "" {
		return tls.Certificate{}, errors.New("no TLSCertFile/TLSKeyFile and no CertDir to keep a self-signed certificate in")
	}
	certPath := filepath.Join(cfg.CertDir, SelfSignedCertFile)
	keyPath := filepath.Join(cfg.CertDir, SelfSignedKeyFile)
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	switch {
	case err == nil:
		if why := unusable(c.Leaf, nodeName, now); why != "" {
			log.Warn("regenerating the self-signed serving certificate", "cert", certPath, "reason", why)
			break
		}
		log.Info("using the self-signed serving certificate", "cert", certPath)
		return c, nil
	case errors.Is(err, fs.ErrNotExist):
	default:
		return tls.Certificate{}, fmt.Errorf("load self-signed serving certificate %s / key %s: %w", certPath, keyPath, err)
	}
	certPEM, keyPEM, err := GenerateSelfSignedCert(nodeName, cfg.NodeIPs, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(cfg.CertDir, 0o755); err != nil {
		return tls.Certificate{}, fmt.Errorf("create certificate directory %s: %w", cfg.CertDir, err)
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	log.Info("generated a self-signed serving certificate", "cert", certPath, "node", nodeName)
	return tls.X509KeyPair(certPEM, keyPEM)
}

// dynamicCert answers a handshake with current(), or an error while
// there is none (a serving certificate not issued yet).
func dynamicCert(current func() *tls.Certificate) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if c := current(); c != nil {
			return c, nil
		}
		return nil, errors.New("no serving certificate available for the kubelet")
	}
}

// unusable says why a stored self-signed certificate cannot serve nodeName
// at now, or "".
func unusable(leaf *x509.Certificate, nodeName string, now time.Time) string {
	switch {
	case leaf == nil:
		return "no certificate"
	case now.After(leaf.NotAfter):
		return "expired " + leaf.NotAfter.Format(time.RFC3339)
	case leaf.VerifyHostname(nodeName) != nil:
		return fmt.Sprintf("does not name node %q", nodeName)
	}
	return ""
}

// GenerateSelfSignedCert makes a self-signed ECDSA P-256 serving
// certificate for host (a DNS name or an IP) and ips, valid for a year
// from now (backdated an hour for clock skew). It returns the certificate
// and key in PEM.
func GenerateSelfSignedCert(host string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate serving key for %q: %w", host, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial number for %q: %w", host, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if host != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	for _, ip := range ips {
		if !slicesContainsIP(tmpl.IPAddresses, ip) {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create self-signed certificate for %q: %w", host, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode serving key for %q: %w", host, err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// slicesContainsIP reports whether ips holds ip.
func slicesContainsIP(ips []net.IP, ip net.IP) bool {
	for _, x := range ips {
		if x.Equal(ip) {
			return true
		}
	}
	return false
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so that a reader never sees half a file.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// loadClientCA reads a PEM bundle of client CA certificates.
func loadClientCA(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read client CA file %s: %w", file, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("client CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}

// clientCAFile is the client CA bundle, read again whenever the file
// changes (as the kubelet's dynamic CA content), so that a CA rotation
// needs no restart. A change that cannot be read keeps the previous
// bundle.
type clientCAFile struct {
	path string
	log  *slog.Logger

	mu   sync.Mutex
	pool *x509.CertPool
	mod  time.Time
	size int64
}

// newClientCAFile reads the bundle at path; an unreadable one is an error.
func newClientCAFile(path string, log *slog.Logger) (*clientCAFile, error) {
	c := &clientCAFile{path: path, log: log}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read client CA file %s: %w", path, err)
	}
	if c.pool, err = loadClientCA(path); err != nil {
		return nil, err
	}
	c.mod, c.size = fi.ModTime(), fi.Size()
	return c, nil
}

// Pool is the current bundle.
func (c *clientCAFile) Pool() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.path)
	if err != nil || (fi.ModTime().Equal(c.mod) && fi.Size() == c.size) {
		return c.pool
	}
	pool, err := loadClientCA(c.path)
	if err != nil {
		c.log.Warn("client CA file changed but cannot be used; keeping the previous bundle", "file", c.path, "err", err)
		return c.pool
	}
	c.pool, c.mod, c.size = pool, fi.ModTime(), fi.Size()
	c.log.Info("client CA file reloaded", "file", c.path)
	return c.pool
}
