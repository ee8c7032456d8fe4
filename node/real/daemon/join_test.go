package daemon

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/kube"
	"github.com/lockstep-dev/lockstep/node/real/world"
)

// csrServer is the CSR part of an apiserver that approves and signs every
// request at once with its CA and records who asked.
type csrServer struct {
	t      *testing.T
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey

	mu    sync.Mutex
	csrs  map[string]*certificatesv1.CertificateSigningRequest
	auths []string // Authorization header of each create
}

func newCSRServer(t *testing.T) *csrServer {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &csrServer{t: t, caCert: ca, caKey: key, csrs: map[string]*certificatesv1.CertificateSigningRequest{}}
}

func (s *csrServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == base:
		var in certificatesv1.CertificateSigningRequest
		body, _ := io.ReadAll(r.Body)
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &in); err != nil {
			s.t.Errorf("decode CSR (%s): %v", r.Header.Get("Content-Type"), err)
			http.Error(w, err.Error(), 400)
			return
		}
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		in.TypeMeta = metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest"}
		in.UID, in.ResourceVersion = types.UID("uid-"+in.Name), "1"
		in.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		in.Status.Certificate = s.sign(&in)
		s.csrs[in.Name] = &in
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(&in)
	case r.Method == http.MethodGet && r.URL.Path == base:
		name := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
		list := certificatesv1.CertificateSigningRequestList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
			TypeMeta: metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequestList"}}
		if c := s.csrs[name]; c != nil {
			list.Items = append(list.Items, *c)
		}
		json.NewEncoder(w).Encode(&list)
	default:
		http.NotFound(w, r)
	}
}

func (s *csrServer) sign(c *certificatesv1.CertificateSigningRequest) []byte {
	block, _ := pem.Decode(c.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		s.t.Errorf("bad request: %v", err)
		return nil
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: req.Subject, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.caCert, req.PublicKey, s.caKey)
	if err != nil {
		s.t.Errorf("sign: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestJoinBootstrapsThenReuses: with a bootstrap kubeconfig and no
// kubeconfig, join requests a client certificate with the bootstrap
// token, stores kubelet-client-current.pem and writes a kubeconfig using
// it; a second join finds it valid and requests nothing.
func TestJoinBootstrapsThenReuses(t *testing.T) {
	api := newCSRServer(t)
	ts := httptest.NewTLSServer(api)
	defer ts.Close()
	dir := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: ts.URL, CertificateAuthorityData: caPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "abcdef.0123456789abcdef"}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}, boot); err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.RootDir, o.BootstrapKubeconfig, o.Kubeconfig, o.RotateCertificates = dir, boot, filepath.Join(dir, "kubelet.kubeconfig"), true
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	core := deps.Core{Clock: clock.New(), Rand: world.NewRand(), Tasks: world.Tasks{}, Log: log}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	j, err := join(ctx, core, o, "n1", log)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if len(api.auths) != 1 || api.auths[0] != "Bearer abcdef.0123456789abcdef" {
		t.Fatalf("CSR creations %q: want one, with the bootstrap token", api.auths)
	}
	pemPath := filepath.Join(dir, "pki", "kubelet-client-current.pem")
	pair, err := tls.LoadX509KeyPair(pemPath, pemPath)
	if err != nil {
		t.Fatalf("stored certificate: %v", err)
	}
	if got := pair.Leaf.Subject; got.CommonName != "system:node:n1" || strings.Join(got.Organization, ",") != "system:nodes" {
		t.Errorf("certificate subject %v", got)
	}
	kc, err := clientcmd.LoadFromFile(o.Kubeconfig)
	if err != nil {
		t.Fatalf("written kubeconfig: %v", err)
	}
	for _, u := range kc.AuthInfos {
		if u.ClientCertificate != pemPath || u.ClientKey != pemPath || u.Token != "" {
			t.Errorf("kubeconfig user %+v, want the current certificate and no token", u)
		}
	}
	if j.rotator == nil || j.rotator.Current() == nil || j.config.Transport == nil {
		t.Fatalf("rotation: manager %v, transport %v", j.rotator, j.config.Transport)
	}
	if got := j.rotator.Current().Leaf.SerialNumber; got.Cmp(pair.Leaf.SerialNumber) != 0 {
		t.Errorf("rotating client starts from certificate %v, want the stored one %v", got, pair.Leaf.SerialNumber)
	}

	if _, err := join(ctx, core, o, "n1", log); err != nil {
		t.Fatalf("second join: %v", err)
	}
	if len(api.auths) != 1 {
		t.Errorf("the second join created a CSR: %d creations", len(api.auths))
	}
	// A lost kubeconfig is written again from the stored, still valid
	// certificate.
	os.Remove(o.Kubeconfig)
	if _, err := join(ctx, core, o, "n1", log); err != nil || len(api.auths) != 1 {
		t.Errorf("a missing kubeconfig: err %v, %d creations; want it rewritten from the stored certificate", err, len(api.auths))
	}
	if ok, why := kube.KubeconfigCertValid(o.Kubeconfig, time.Now()); !ok {
		t.Errorf("kubeconfig not rewritten: %s", why)
	}
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
