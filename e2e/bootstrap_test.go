//go:build e2e

package e2e

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"

	"github.com/lockstep-dev/lockstep/node/real/mounter/mountertest"
)

// joinNode is the second node TestBootstrapJoinAndRotate starts: the
// in-process fake runtime (nothing touches containerd or the cgroups of
// the shared e2e node), its own root dir and port.
const joinNode = "e2e-join-node"

// clusterCA is the e2e cluster CA (hack/e2e/run.sh makes it; the
// apiserver trusts it with --client-ca-file): the test signs the node's
// CSRs with it, standing in for kube-controller-manager's csrsigning
// controller, which `make e2e` does not run.
type clusterCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func loadClusterCA(t *testing.T, dir string) clusterCA {
	t.Helper()
	certPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := keyutil.PrivateKeyFromFile(filepath.Join(dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	return clusterCA{cert: cert, key: key.(crypto.Signer)}
}

// sign issues the certificate of a CSR, valid from now for life.
func (ca clusterCA) sign(t *testing.T, csr *certificatesv1.CertificateSigningRequest, life time.Duration) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || req.CheckSignature() != nil {
		t.Fatalf("CSR %s: bad request (%v)", csr.Name, err)
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: req.Subject, NotBefore: now.Add(-time.Second), NotAfter: now.Add(life),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = req.DNSNames, req.IPAddresses
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("sign CSR %s: %v", csr.Name, err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// approveAndSign approves the CSR (approval subresource) and writes the
// certificate (status subresource), as the controllers would.
func (e *env) approveAndSign(t *testing.T, ca clusterCA, csr *certificatesv1.CertificateSigningRequest, life time.Duration) *x509.Certificate {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	api := e.admin.CertificatesV1().CertificateSigningRequests()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2EApproved", Message: "approved by the e2e test",
	})
	approved, err := api.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("approve CSR %s: %v", csr.Name, err)
	}
	cert := ca.sign(t, approved, life)
	approved.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if _, err := api.UpdateStatus(ctx, approved, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("issue the certificate of CSR %s: %v", csr.Name, err)
	}
	return cert
}

// waitCSR waits for a CSR of signer from user that is not in seen.
func (e *env) waitCSR(t *testing.T, user, signer string, seen map[string]bool, d time.Duration) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var got *certificatesv1.CertificateSigningRequest
	poll(t, d, "a "+signer+" CSR from "+user, func() (bool, error) {
		list, err := e.admin.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			c := &list.Items[i]
			if c.Spec.Username == user && !seen[c.Name] && c.Spec.SignerName == signer {
				got = c
				return true, nil
			}
		}
		return false, fmt.Errorf("%d CSRs, none new from %s", len(list.Items), user)
	})
	seen[got.Name] = true
	return got
}

// bootstrapToken creates a bootstrap token Secret in kube-system (group
// system:bootstrappers:lockstep-e2e, allowed to create CSRs through the
// system:node-bootstrapper role) and returns the token.
func (e *env) bootstrapToken(t *testing.T) string {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	id, secret := "e2ejn1", "0123456789abcdef"
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"auth-extra-groups": "system:bootstrappers:lockstep-e2e",
			"expiration":        time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lockstep-e2e-node-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:bootstrappers:lockstep-e2e"}},
	}
	_ = e.admin.CoreV1().Secrets("kube-system").Delete(ctx, sec.Name, metav1.DeleteOptions{})
	_ = e.admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{})
	if _, err := e.admin.CoreV1().Secrets("kube-system").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bootstrap token secret: %v", err)
	}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bootstrapper binding: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.admin.CoreV1().Secrets("kube-system").Delete(ctx, sec.Name, metav1.DeleteOptions{})
		_ = e.admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{})
	})
	return id + "." + secret
}

// freePort is a free loopback TCP port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// currentClientCert reads <cert-dir>/kubelet-client-current.pem.
func currentClientCert(t *testing.T, pki string) (*x509.Certificate, error) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(pki, "kubelet-client-current.pem"), filepath.Join(pki, "kubelet-client-current.pem"))
	if err != nil {
		return nil, err
	}
	return pair.Leaf, nil
}

// TestBootstrapJoinAndRotate: a second lockstep node started with only a
// bootstrap kubeconfig (a bootstrap token) requests its client
// certificate; restarted while that CSR is pending, it asks again with the
// key it kept in kubelet-client.key.tmp and waits for the same CSR (no
// second one); it gets the certificate once the test approves and signs
// the CSR, removes the kept key, writes
// kubelet-client-current.pem (CN system:node:<name>, O system:nodes) and
// the kubeconfig, registers and becomes Ready; it serves the certificate
// of its kubelet-serving CSR once the test issues it; given a 60 s client
// certificate it requests a new one at 70–90 % of its lifetime and, once
// that is issued, keeps renewing its lease after the first one has
// expired, without a restart; restarted, it reuses what it has (no CSR).
func TestBootstrapJoinAndRotate(t *testing.T) {
	e := setup(t)
	ca := loadClusterCA(t, e.dir)
	token := e.bootstrapToken(t)

	work := mountertest.TempDir(t)
	admin, err := clientcmd.LoadFromFile(filepath.Join(e.dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range admin.AuthInfos {
		u.Token = token
	}
	boot := filepath.Join(work, "bootstrap.kubeconfig")
	if err := clientcmd.WriteToFile(*admin, boot); err != nil {
		t.Fatal(err)
	}
	kubeconfig, root := filepath.Join(work, "kubelet.kubeconfig"), filepath.Join(work, "root")
	pki := filepath.Join(root, "pki")
	logFile, err := os.Create(filepath.Join(e.dir, "logs", "lockstep-join.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	port := freePort(t)
	seen := map[string]bool{}
	var cmd *exec.Cmd
	startNode := func() {
		cmd = exec.Command(filepath.Join(e.dir, "bin", "lockstep"), "node",
			"--bootstrap-kubeconfig="+boot, "--kubeconfig="+kubeconfig, "--rotate-certificates", "--rotate-server-certificates",
			"--hostname-override="+joinNode, "--node-ip=127.0.0.1", "--container-runtime-endpoint=fake",
			"--root-dir="+root, "--pod-logs-dir="+filepath.Join(work, "pods"), "--container-logs-dir="+filepath.Join(work, "containers"),
			"--address=127.0.0.1", fmt.Sprintf("--port=%d", port), "--read-only-port=0", "--healthz-port=0", "--v=2")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	stopNode := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	startNode()
	start := time.Now()
	t.Cleanup(func() {
		stopNode()
		ctx := context.Background()
		_ = e.admin.CoreV1().Nodes().Delete(ctx, joinNode, metav1.DeleteOptions{})
		_ = e.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, joinNode, metav1.DeleteOptions{})
		for name := range seen {
			_ = e.admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
		}
	})

	first := e.waitCSR(t, "system:bootstrap:e2ejn1", certificatesv1.KubeAPIServerClientKubeletSignerName, seen, 30*time.Second)
	t.Logf("bootstrap CSR %s after %v", first.Name, time.Since(start).Round(time.Millisecond))

	// Restarted while its CSR is pending, the node asks again with the
	// key it kept in kubelet-client.key.tmp, finds its own CSR and waits
	// for it: no second CSR for the approver.
	pendingKey := filepath.Join(pki, "kubelet-client.key.tmp")
	if _, err := os.Stat(pendingKey); err != nil {
		t.Errorf("the pending CSR's key is not kept: %v", err)
	}
	stopNode()
	st, err := logFile.Stat()
	if err != nil {
		t.Fatal(err)
	}
	logStart := st.Size()
	startNode()
	const reused = "certificate signing request exists (made by a previous attempt with the same key); waiting for it"
	poll(t, 30*time.Second, "the restarted node to wait for its pending CSR", func() (bool, error) {
		b, err := os.ReadFile(logFile.Name())
		if err != nil || int64(len(b)) < logStart {
			return false, err
		}
		return strings.Contains(string(b[logStart:]), reused), fmt.Errorf("no %q in its log since the restart", reused)
	})
	pending, err := e.admin.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var boots []string
	for _, c := range pending.Items {
		if c.Spec.Username == "system:bootstrap:e2ejn1" {
			boots = append(boots, c.Name)
		}
	}
	if len(boots) != 1 || boots[0] != first.Name {
		t.Errorf("bootstrap CSRs after the restart %v, want only %s", boots, first.Name)
	}
	const firstLife = 60 * time.Second
	issued1 := e.approveAndSign(t, ca, first, firstLife)

	var cert *x509.Certificate
	poll(t, 30*time.Second, "kubelet-client-current.pem", func() (bool, error) {
		cert, err = currentClientCert(t, pki)
		return err == nil && cert.SerialNumber.Cmp(issued1.SerialNumber) == 0, err
	})
	poll(t, 10*time.Second, "the pending CSR's key removed once the certificate is issued", func() (bool, error) {
		_, err := os.Stat(pendingKey)
		return os.IsNotExist(err), fmt.Errorf("%s: %v", pendingKey, err)
	})
	if cert.Subject.CommonName != "system:node:"+joinNode || strings.Join(cert.Subject.Organization, ",") != "system:nodes" {
		t.Errorf("client certificate subject %q, want CN=system:node:%s, O=system:nodes", cert.Subject, joinNode)
	}
	written, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("the kubeconfig the bootstrap writes: %v", err)
	}
	for _, u := range written.AuthInfos {
		if u.ClientCertificate != filepath.Join(pki, "kubelet-client-current.pem") || u.Token != "" {
			t.Errorf("written kubeconfig user %+v: want the current client certificate, no token", u)
		}
	}
	saved := e.node
	e.node = joinNode
	e.waitNodeReady(t, 40*time.Second)
	e.node = saved
	t.Logf("node %s Ready %v after start", joinNode, time.Since(start).Round(time.Millisecond))

	// The serving certificate comes from a kubelet-serving CSR (SANs: the
	// node name and IP) and is served without a restart once issued.
	servingCSR := e.waitCSR(t, "system:node:"+joinNode, certificatesv1.KubeletServingSignerName, seen, 20*time.Second)
	issuedServing := e.approveAndSign(t, ca, servingCSR, time.Hour)
	if got := issuedServing.DNSNames; len(got) != 1 || got[0] != joinNode || len(issuedServing.IPAddresses) != 1 || !issuedServing.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("serving CSR SANs %v %v, want [%s] [127.0.0.1]", got, issuedServing.IPAddresses, joinNode)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	poll(t, 20*time.Second, "the secure port serving the issued certificate", func() (bool, error) {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: roots, ServerName: joinNode})
		if err != nil {
			return false, err
		}
		defer conn.Close()
		served := conn.ConnectionState().PeerCertificates[0]
		return served.SerialNumber.Cmp(issuedServing.SerialNumber) == 0, fmt.Errorf("serves serial %v", served.SerialNumber)
	})

	// Rotation: a new CSR from the node's own identity at 70–90 % of the
	// first certificate's lifetime.
	second := e.waitCSR(t, "system:node:"+joinNode, certificatesv1.KubeAPIServerClientKubeletSignerName, seen, firstLife)
	at := time.Since(issued1.NotBefore)
	frac := float64(at) / float64(issued1.NotAfter.Sub(issued1.NotBefore))
	t.Logf("rotation CSR %s at %.2f of the first certificate's lifetime", second.Name, frac)
	if frac < 0.65 || frac > 0.95 {
		t.Errorf("rotation requested at %.2f of the lifetime, want 0.70–0.90", frac)
	}
	issued2 := e.approveAndSign(t, ca, second, time.Hour)
	poll(t, 20*time.Second, "the rotated kubelet-client-current.pem", func() (bool, error) {
		cert, err = currentClientCert(t, pki)
		return err == nil && cert.SerialNumber.Cmp(issued2.SerialNumber) == 0, err
	})
	// The process keeps talking to the apiserver with the new
	// certificate once the old one has expired: its lease is renewed.
	expired := issued1.NotAfter.Add(2 * time.Second)
	poll(t, time.Until(expired)+30*time.Second, "a lease renewal after the first certificate expired", func() (bool, error) {
		l, err := e.admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), joinNode, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(expired), fmt.Errorf("renewed at %v", l.Spec.RenewTime)
	})

	// A restart reuses the kubeconfig and the rotated certificate: no new
	// CSR, and the lease is renewed again.
	stopNode()
	restarted := time.Now()
	startNode()
	renewedSince := func(since time.Time) func() (bool, error) {
		return func() (bool, error) {
			l, err := e.admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), joinNode, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since), fmt.Errorf("renewed at %v", l.Spec.RenewTime)
		}
	}
	poll(t, 30*time.Second, "a lease renewal after the restart", renewedSince(restarted))
	list, err := e.admin.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if strings.HasSuffix(c.Spec.Username, joinNode) || c.Spec.Username == "system:bootstrap:e2ejn1" {
			if !seen[c.Name] {
				t.Errorf("the restart created CSR %s: want the stored certificate reused", c.Name)
			}
		}
	}
	t.Logf("FIGURE join: bootstrap to Ready and one rotation in %v", time.Since(start).Round(time.Second))
}
