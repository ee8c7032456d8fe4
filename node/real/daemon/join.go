package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"

	"github.com/lockstep-dev/lockstep/node/certs"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/kube"
)

// The file name prefixes of the issued certificates in the cert dir (the
// kubelet's): <prefix>-<timestamp>.pem, and <prefix>-current.pem linking
// to the one in use.
const (
	clientCertPrefix  = "kubelet-client"
	servingCertPrefix = "kubelet-server"
	// pendingKeyFile keeps the TLS bootstrap request's private key in the
	// cert dir until its certificate is issued (the kubelet's name).
	pendingKeyFile = "kubelet-client.key.tmp"
)

// joined is the apiserver client configuration after the TLS bootstrap,
// and the client certificate's manager when it is rotated (its Run is
// left to the caller).
type joined struct {
	config  *rest.Config
	rotator *certs.Manager
}

// join returns the client configuration of the node's identity. With
// --bootstrap-kubeconfig, a missing --kubeconfig or one whose client
// certificate expired is first replaced: a client certificate is requested
// with the bootstrap credentials (bounded wait; a denial is an error) and a
// kubeconfig pointing at <cert-dir>/kubelet-client-current.pem is written.
// With --rotate-certificates the client certificate is served from a
// manager that renews it, and connections are closed when it changes.
func join(ctx context.Context, core deps.Core, o Options, nodeName string, log *slog.Logger) (joined, error) {
	dir := o.CertDirectory()
	if o.BootstrapKubeconfig != "" {
		if ok, why := kube.KubeconfigCertValid(o.Kubeconfig, core.Clock.Now()); !ok {
			log.Info("TLS bootstrap: requesting a client certificate with the bootstrap credentials", "reason", why, "bootstrapKubeconfig", o.BootstrapKubeconfig)
			if err := bootstrap(ctx, core, o, nodeName, dir); err != nil {
				return joined{}, err
			}
		} else {
			log.Info("TLS bootstrap not needed: the kubeconfig's client certificate is valid", "kubeconfig", o.Kubeconfig)
		}
	}
	rc, err := kube.LoadKubeconfig(o.Kubeconfig)
	if err != nil {
		return joined{}, err
	}
	if !o.RotateCertificates {
		return joined{config: rc}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return joined{}, fmt.Errorf("create certificate directory %s: %w", dir, err)
	}
	// The stored certificate, else the kubeconfig's own files, start the
	// rotation (client-go's file store falls back to them).
	store, err := certificate.NewFileStore(clientCertPrefix, dir, dir, rc.CertFile, rc.KeyFile)
	if err != nil {
		return joined{}, fmt.Errorf("client certificate store in %s: %w", dir, err)
	}
	var m *certs.Manager
	dyn, closeConns, err := kube.RotatingClientCert(rc, func() *tls.Certificate { return m.Current() })
	if err != nil {
		return joined{}, err
	}
	cs, err := kubernetes.NewForConfig(dyn)
	if err != nil {
		return joined{}, fmt.Errorf("apiserver client from %s: %w", o.Kubeconfig, err)
	}
	m = certs.New(core, certs.Ports{CSR: kube.NewCSRClient(cs), Keys: kube.ECDSAKeys{}, Store: store}, certs.Config{
		Name: fmt.Sprintf("client certificate of node %q", nodeName), Request: certs.ClientRequest(nodeName),
		Wait: certs.DefaultRotationWait,
		OnChange: func(c *tls.Certificate) {
			log.Info("client certificate rotated; reconnecting with it", "notAfter", c.Leaf.NotAfter, "file", store.CurrentPath())
			closeConns()
		},
	})
	if err := m.Ensure(ctx); err != nil {
		return joined{}, fmt.Errorf("client certificate of node %q (--rotate-certificates): %w", nodeName, err)
	}
	return joined{config: dyn, rotator: m}, nil
}

// bootstrap requests the client certificate with the bootstrap
// credentials and writes the kubeconfig that uses it.
func bootstrap(ctx context.Context, core deps.Core, o Options, nodeName, dir string) error {
	brc, err := kube.LoadKubeconfig(o.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("TLS bootstrap: %w", err)
	}
	bcs, err := kubernetes.NewForConfig(brc)
	if err != nil {
		return fmt.Errorf("TLS bootstrap: client from %s: %w", o.BootstrapKubeconfig, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("TLS bootstrap: create certificate directory %s: %w", dir, err)
	}
	store, err := certificate.NewFileStore(clientCertPrefix, dir, dir, "", "")
	if err != nil {
		return fmt.Errorf("TLS bootstrap: certificate store in %s: %w", dir, err)
	}
	// The request's key outlives a restart while the request is pending,
	// so that the restarted node waits for the same request.
	pending := kube.KeyFile{Path: filepath.Join(dir, pendingKeyFile)}
	m := certs.New(core, certs.Ports{CSR: kube.NewCSRClient(bcs), Keys: kube.ECDSAKeys{}, Store: store, Pending: pending}, certs.Config{
		Name: fmt.Sprintf("client certificate of node %q", nodeName), Request: certs.ClientRequest(nodeName),
		Wait: certs.DefaultBootstrapWait,
	})
	if err := m.Ensure(ctx); err != nil {
		return fmt.Errorf("TLS bootstrap with %s: %w", o.BootstrapKubeconfig, err)
	}
	return kube.WriteCertKubeconfig(o.Kubeconfig, brc, store.CurrentPath())
}

// servingCerts is the serving certificate's manager with
// --rotate-server-certificates: requested from the kubelet-serving signer
// for the node name and addresses, kept in <cert-dir>/kubelet-server-*.pem.
func servingCerts(core deps.Core, o Options, cs kubernetes.Interface, nodeName string, ips []net.IP) (*certs.Manager, error) {
	dir := o.CertDirectory()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create certificate directory %s: %w", dir, err)
	}
	store, err := certificate.NewFileStore(servingCertPrefix, dir, dir, "", "")
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in %s: %w", dir, err)
	}
	return certs.New(core, certs.Ports{CSR: kube.NewCSRClient(cs), Keys: kube.ECDSAKeys{}, Store: store}, certs.Config{
		Name: fmt.Sprintf("serving certificate of node %q", nodeName), Request: certs.ServingRequest(nodeName, []string{nodeName}, ips),
		Wait: certs.DefaultRotationWait,
	}), nil
}

// LostCertificateExit is how long the node runs without a valid client
// certificate, while the apiserver answers, before the daemon exits so
// that its supervisor restarts it and the TLS bootstrap runs again (the
// kubelet's 5 minutes).
const LostCertificateExit = 5 * time.Minute

// watchClientCert ends the daemon through fail once the client
// certificate has been missing or expired for LostCertificateExit while the
// apiserver answers; while the apiserver does not, it only logs.
func watchClientCert(ctx context.Context, m *certs.Manager, log *slog.Logger, fail func(error)) {
	lastValid := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if m.Current() != nil {
			lastValid = time.Now()
			continue
		}
		if time.Since(lastValid) < LostCertificateExit {
			continue
		}
		if m.ServerHealthy() {
			fail(fmt.Errorf("no valid client certificate since %s and it could not be renewed although the apiserver answers: exiting so that a restart bootstraps again (--bootstrap-kubeconfig)",
				lastValid.Format(time.RFC3339)))
			return
		}
		log.Error("no valid client certificate, and the apiserver does not answer; a restart may be needed to bootstrap again", "since", lastValid)
	}
}
