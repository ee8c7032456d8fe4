package kube

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/keyutil"

	"github.com/lockstep-dev/lockstep/node/certs"
	"github.com/lockstep-dev/lockstep/node/deps"
)

var csrResource = certificatesv1.Resource("certificatesigningrequests")

// CSRClient is deps.CSRAPI on client-go.
type CSRClient struct{ cs kubernetes.Interface }

var _ deps.CSRAPI = (*CSRClient)(nil)

// NewCSRClient returns the CSR port on cs (the bootstrap client or the
// node's own).
func NewCSRClient(cs kubernetes.Interface) *CSRClient { return &CSRClient{cs: cs} }

// CreateCSR creates a CertificateSigningRequest.
func (c *CSRClient) CreateCSR(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	return c.cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
}

// GetCSR reads a CertificateSigningRequest.
func (c *CSRClient) GetCSR(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	return c.cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
}

// WaitCSR lists the request by name and watches it from there until it
// has a certificate or is denied or failed. A watch that ends is an error:
// the caller retries.
func (c *CSRClient) WaitCSR(ctx context.Context, name string, uid types.UID) (*certificatesv1.CertificateSigningRequest, error) {
	api := c.cs.CertificatesV1().CertificateSigningRequests()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := api.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list certificate signing request %s: %w", name, err)
	}
	if len(list.Items) == 0 || list.Items[0].UID != uid {
		return nil, apierrors.NewNotFound(csrResource, name)
	}
	if csrDone(&list.Items[0]) {
		return &list.Items[0], nil
	}
	w, err := api.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, fmt.Errorf("watch certificate signing request %s: %w", name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("watch certificate signing request %s: %w", name, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch certificate signing request %s: the watch ended", name)
			}
			switch ev.Type {
			case watch.Error:
				return nil, fmt.Errorf("watch certificate signing request %s: %w", name, apierrors.FromObject(ev.Object))
			case watch.Deleted:
				return nil, apierrors.NewNotFound(csrResource, name)
			}
			got, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok || got.UID != uid {
				continue
			}
			if csrDone(got) {
				return got, nil
			}
		}
	}
}

// csrDone: the request has a certificate or a Denied or Failed condition.
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

// ECDSAKeys makes ECDSA P-256 keys, as the kubelet does (certs.KeyGen).
type ECDSAKeys struct{}

var _ certs.KeyGen = ECDSAKeys{}

// NewKey makes a key, PEM-encoded ("EC PRIVATE KEY").
func (ECDSAKeys) NewKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate an ECDSA P-256 key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the ECDSA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// NewRequest makes a certificate request for tmpl signed with keyPEM.
func (ECDSAKeys) NewRequest(keyPEM []byte, tmpl *x509.CertificateRequest) ([]byte, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate request for %s: %w", tmpl.Subject.CommonName, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("certificate request for %s: a %T cannot sign", tmpl.Subject.CommonName, key)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, tmpl, signer)
	if err != nil {
		return nil, fmt.Errorf("certificate request for %s: %w", tmpl.Subject.CommonName, err)
	}
	return csrDER, nil
}

// KeyFile keeps the key of a pending request in a file, mode 0600
// (certs.PendingKey; the TLS bootstrap's <cert-dir>/kubelet-client.key.tmp,
// the kubelet's name).
type KeyFile struct{ Path string }

var _ certs.PendingKey = KeyFile{}

// Load reads the kept key; nil when the file does not exist.
func (f KeyFile) Load() ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the pending request's key: %w", err)
	}
	return b, nil
}

// Save writes keyPEM (creating the directory).
func (f KeyFile) Save(keyPEM []byte) error {
	if err := keyutil.WriteKey(f.Path, keyPEM); err != nil {
		return fmt.Errorf("write the pending request's key %s: %w", f.Path, err)
	}
	return nil
}

// Remove deletes the file.
func (f KeyFile) Remove() error {
	if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the pending request's key: %w", err)
	}
	return nil
}

// RotatingClientCert returns a copy of cfg whose TLS client certificate
// is current() at each handshake (no certificate while it is nil), and a
// function closing every connection made so far: called when the
// certificate changes, it makes the clients reconnect with the new one
// without a restart. cfg's own certificate options are dropped; its CA,
// server name and bearer token are kept.
func RotatingClientCert(cfg *rest.Config, current func() *tls.Certificate) (*rest.Config, func(), error) {
	c := rest.CopyConfig(cfg)
	c.CertFile, c.KeyFile, c.CertData, c.KeyData = "", "", nil, nil
	tlsCfg, err := rest.TLSConfigFor(c)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS configuration for %s: %w", cfg.Host, err)
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tlsCfg.Certificates = nil
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert := current(); cert != nil {
			return cert, nil
		}
		return &tls.Certificate{}, nil
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	c.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConns:        25,
		DialContext:         dialer.DialContext,
		IdleConnTimeout:     90 * time.Second,
	})
	// A custom transport carries the TLS options itself.
	c.TLSClientConfig = rest.TLSClientConfig{}
	return c, dialer.CloseAll, nil
}

// WriteCertKubeconfig writes a kubeconfig for the apiserver of from (its
// host and CA) that authenticates with the certificate and key in pemPath,
// as the kubelet writes after a TLS bootstrap.
func WriteCertKubeconfig(path string, from *rest.Config, pemPath string) error {
	caData := from.CAData
	if from.CAFile != "" {
		caData = nil
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: from.Host, InsecureSkipTLSVerify: from.Insecure, TLSServerName: from.ServerName,
			CertificateAuthority: from.CAFile, CertificateAuthorityData: caData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default",
		}},
		CurrentContext: "default-context",
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// KubeconfigCertValid says whether the kubeconfig at path exists and
// authenticates with a client certificate that has not expired at now;
// why says what is wrong when it does not.
func KubeconfigCertValid(path string, now time.Time) (ok bool, why string) {
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		return false, err.Error()
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return false, fmt.Sprintf("kubeconfig %s: %v", path, err)
	}
	if err := loadTLSFiles(tc.TLS.CertFile, &tc.TLS.CertData); err != nil {
		return false, fmt.Sprintf("kubeconfig %s: %v", path, err)
	}
	if len(tc.TLS.CertData) == 0 {
		return false, fmt.Sprintf("kubeconfig %s has no client certificate", path)
	}
	block, _ := pem.Decode(tc.TLS.CertData)
	if block == nil {
		return false, fmt.Sprintf("kubeconfig %s: client certificate is not PEM", path)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false, fmt.Sprintf("kubeconfig %s: %v", path, err)
	}
	if now.After(leaf.NotAfter) {
		return false, fmt.Sprintf("kubeconfig %s: client certificate expired at %s", path, leaf.NotAfter.Format(time.RFC3339))
	}
	return true, ""
}

// loadTLSFiles reads file into *data when data is empty.
func loadTLSFiles(file string, data *[]byte) error {
	if len(*data) > 0 || file == "" {
		return nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	*data = b
	return nil
}
