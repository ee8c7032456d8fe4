package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// servedCert is the leaf certificate s serves.
func servedCert(t *testing.T, s *Server) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(s.TLSConfig().Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSelfSignedCertificateGeneratedAndReused(t *testing.T) {
	p := newProvider(t)
	dir := filepath.Join(t.TempDir(), "pki") // created by New
	cfg := Config{CertDir: dir, NodeIPs: []net.IP{net.ParseIP("10.0.0.5")}}
	s1, err := New(p, cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	leaf := servedCert(t, s1)
	for _, host := range []string{"node-a", "10.0.0.5"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("generated certificate does not cover %s: %v", host, err)
		}
	}
	if err := leaf.VerifyHostname("other"); err == nil {
		t.Errorf("generated certificate covers an unrelated name")
	}
	if leaf.NotAfter.Before(time.Now().Add(300 * 24 * time.Hour)) {
		t.Errorf("generated certificate expires too soon: %v", leaf.NotAfter)
	}
	keyInfo, err := os.Stat(filepath.Join(dir, SelfSignedKeyFile))
	if err != nil {
		t.Fatalf("key file: %v", err)
	}
	if keyInfo.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", keyInfo.Mode().Perm())
	}
	certBytes, err := os.ReadFile(filepath.Join(dir, SelfSignedCertFile))
	if err != nil {
		t.Fatalf("cert file: %v", err)
	}

	// A second start reuses it.
	s2, err := New(p, cfg, nil)
	if err != nil {
		t.Fatalf("second New: %v", err)
	}
	if !servedCert(t, s2).Equal(leaf) {
		t.Errorf("second New generated a new certificate instead of reusing it")
	}
	again, _ := os.ReadFile(filepath.Join(dir, SelfSignedCertFile))
	if !bytes.Equal(again, certBytes) {
		t.Errorf("certificate file rewritten")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{SelfSignedCertFile, SelfSignedKeyFile}; !slices.Equal(names, want) {
		t.Errorf("CertDir holds %v, want %v (no temporary files left)", names, want)
	}
}

func TestSelfSignedCertificateRegenerated(t *testing.T) {
	p := newProvider(t)
	tests := []struct {
		name string
		host string
		at   time.Time
	}{
		{"expired", "node-a", time.Now().Add(-2 * 365 * 24 * time.Hour)},
		{"for another node", "node-b", time.Now()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certPEM, keyPEM, err := GenerateSelfSignedCert(tc.host, nil, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, SelfSignedCertFile), certPEM, 0o644)
			os.WriteFile(filepath.Join(dir, SelfSignedKeyFile), keyPEM, 0o600)
			s, err := New(p, Config{CertDir: dir}, nil)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			leaf := servedCert(t, s)
			if time.Now().After(leaf.NotAfter) || leaf.VerifyHostname("node-a") != nil {
				t.Errorf("served certificate not regenerated: %v, valid until %v", leaf.DNSNames, leaf.NotAfter)
			}
			onDisk, _ := os.ReadFile(filepath.Join(dir, SelfSignedCertFile))
			if bytes.Equal(onDisk, certPEM) {
				t.Errorf("certificate file not replaced")
			}
		})
	}
}

func TestServingCertificateFiles(t *testing.T) {
	p := newProvider(t)
	dir := t.TempDir()
	certPEM, keyPEM, err := GenerateSelfSignedCert("node-a.example", []net.IP{net.ParseIP("192.0.2.1")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	os.WriteFile(certFile, certPEM, 0o644)
	os.WriteFile(keyFile, keyPEM, 0o600)
	s, err := New(p, Config{TLSCertFile: certFile, TLSKeyFile: keyFile}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := servedCert(t, s).VerifyHostname("node-a.example"); err != nil {
		t.Errorf("configured certificate not served: %v", err)
	}

	// A corrupt self-signed pair is an error naming the file, not
	// silently replaced.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, SelfSignedCertFile), []byte("garbage"), 0o644)
	os.WriteFile(filepath.Join(bad, SelfSignedKeyFile), keyPEM, 0o600)
	_, err = New(p, Config{CertDir: bad}, nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(bad, SelfSignedCertFile)) {
		t.Errorf("corrupt certificate: %v, want an error naming the file", err)
	}
}

// localListen listens on an ephemeral loopback port whatever address is
// asked, and records the asked addresses.
type localListen struct {
	mu    sync.Mutex
	asked []string
	fail  string // an address to refuse
}

func (l *localListen) listen(network, address string) (net.Listener, error) {
	l.mu.Lock()
	l.asked = append(l.asked, address)
	l.mu.Unlock()
	if address == l.fail {
		return nil, errors.New("address already in use")
	}
	return net.Listen(network, "127.0.0.1:0")
}

func TestStartServesBothPortsAndShutsDown(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	writeLog(t, logPath(p, "app", 0), "2025-01-01T00:00:01Z stdout F streaming")
	s, err := New(p, Config{
		CertDir:         t.TempDir(),
		ReadOnlyPort:    10255,
		Authenticator:   staticAuth{testToken: {"alice"}},
		Authorizer:      AlwaysAllow{},
		LogPollInterval: 5 * time.Millisecond,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ll := &localListen{}
	s.listen = ll.listen
	if s.SecureAddr() != nil || s.ReadOnlyAddr() != nil {
		t.Errorf("addresses known before Start")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if want := []string{":10250", ":10255"}; !slices.Equal(ll.asked, want) {
		t.Errorf("listened on %v, want %v", ll.asked, want)
	}
	if err := s.Start(ctx); err == nil {
		t.Errorf("second Start succeeded")
	}

	roots := x509.NewCertPool()
	roots.AddCert(servedCert(t, s))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "node-a"}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	secure := "https://" + s.SecureAddr().String()
	readOnly := "http://" + s.ReadOnlyAddr().String()

	fetch := func(url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := fetch(secure+"/healthz", ""); code != 401 || body != "Unauthorized\n" {
		t.Errorf("secure /healthz without a token: %d %q", code, body)
	}
	if code, body := fetch(secure+"/healthz", testToken); code != 200 || body != "ok" {
		t.Errorf("secure /healthz: %d %q", code, body)
	}
	if code, body := fetch(readOnly+"/healthz", ""); code != 200 || body != "ok" {
		t.Errorf("read-only /healthz: %d %q", code, body)
	}
	if code, _ := fetch(readOnly+"/pods", ""); code != 200 {
		t.Errorf("read-only /pods: %d", code)
	}

	// A followed log is open when the server stops: it ends, and so does
	// the server.
	deadline, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	req, _ := http.NewRequestWithContext(deadline, "GET", secure+"/containerLogs/default/web/app?follow=true", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("streaming\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "streaming\n" {
		t.Fatalf("stream: %q %v", buf, err)
	}
	cancel()
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Errorf("stream after shutdown: %q %v, want a clean end", rest, err)
	}
	select {
	case <-s.Done():
	case <-deadline.Done():
		t.Fatal("server did not shut down")
	}
	if _, err := net.DialTimeout("tcp", s.ReadOnlyAddr().String(), time.Second); err == nil {
		t.Errorf("read-only port still accepts connections after shutdown")
	}
}

func TestStartListenFailure(t *testing.T) {
	p := newProvider(t)
	s, err := New(p, Config{CertDir: t.TempDir(), Address: "127.0.0.1", ReadOnlyPort: 10255}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ll := &localListen{fail: "127.0.0.1:10255"}
	s.listen = ll.listen
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "read-only port 10255") {
		t.Errorf("Start: %v, want the read-only port's listen error", err)
	}
}

// TestServingCertificateFromRotation: with ServingCertificate set (a
// certificate issued through a CSR), each handshake is answered with its
// current value, so a rotation needs no restart; while there is none the
// handshake fails with a clear error, and no self-signed one is made.
func TestServingCertificateFromRotation(t *testing.T) {
	p := newProvider(t)
	dir := filepath.Join(t.TempDir(), "pki")
	var current *tls.Certificate
	s, err := New(p, Config{CertDir: dir, ServingCertificate: func() *tls.Certificate { return current }}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	get := s.TLSConfig().GetCertificate
	if _, err := get(&tls.ClientHelloInfo{}); err == nil || !strings.Contains(err.Error(), "no serving certificate available") {
		t.Errorf("handshake before issuance: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a self-signed certificate was made in %s (%v)", dir, err)
	}
	for _, host := range []string{"first.example", "second.example"} {
		certPEM, keyPEM, err := GenerateSelfSignedCert(host, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		current = &pair
		got, err := get(&tls.ClientHelloInfo{})
		if err != nil || got.Leaf.VerifyHostname(host) != nil {
			t.Errorf("after rotating to %s the handshake gets %v (%v)", host, got, err)
		}
	}
}
