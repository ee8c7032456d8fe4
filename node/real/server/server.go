// Package server is the node agent's HTTP server, shaped like the
// kubelet's: a secure port (TLS, 10250) whose every request is
// authenticated (client certificate or bearer token through TokenReview;
// anonymous requests are refused) and authorized (SubjectAccessReview on
// nodes/<subresource>), and an optional read-only port (10255 by
// convention, off by default) that serves the harmless endpoints without
// authentication.
//
// Endpoints, on both ports: /healthz (and /healthz/ping, /healthz/log,
// /healthz/syncloop), /pods, /stats/summary, /metrics, /metrics/probes,
// /metrics/resource and /metrics/cadvisor (the latest stats sample, see
// node/real/statsmetrics).
// On the secure port only: /containerLogs/{namespace}/{pod}/{container};
// the streams /exec, /attach and /portForward (the runtime's streaming URL
// from CRI Exec/Attach/PortForward, proxied with apimachinery's
// upgrade-aware proxy for SPDY clients and apiserver's stream translator
// for v5.channel.k8s.io WebSocket clients) and /run (ExecSync); /configz,
// /logs/ (node log files, authorized as nodes/log), /checkpoint/ (not
// supported: 501) and /debug/pprof/.
//
// A third listener, the healthz port (plain HTTP, 127.0.0.1:10248 by
// default as the kubelet's --healthz-port and --healthz-bind-address),
// serves /healthz and /healthz/<check> and nothing else: no metrics,
// configuration or profiles reach it unauthenticated (CVE-2019-11248).
//
// This is real-world code (node/real): it runs net/http goroutines on the
// wall clock and is not part of the simulated agent.
package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/real/statsmetrics"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// DefaultPort is the kubelet's secure port.
const DefaultPort = 10250

// Provider is what the server reports on: the agent's pods, health,
// runtime and machine.
type Provider interface {
	// Pods returns the managed pods with their latest statuses, sorted.
	Pods() []*corev1.Pod
	// Healthy returns nil when the SyncLoop ran recently and the PLEG is
	// healthy, else an error saying which is not.
	Healthy() error
	// Runtime is the CRI runtime service (streams, /run).
	Runtime() cri.RuntimeService
	// Stats returns the agent's latest stats sample (node/stats), taking
	// one when there is none yet: /stats/summary, /metrics/resource and
	// /metrics/cadvisor report it.
	Stats(ctx context.Context) (stats.Sample, error)
	// NodeName is the node's name (the SubjectAccessReview object name).
	NodeName() string
	// PodLogsRoot is the parent of the pod log directories (empty means
	// /var/log/pods): <root>/<ns>_<name>_<uid>/<container>/<restartCount>.log
	// in the CRI log format.
	PodLogsRoot() string
}

// Config configures a Server.
type Config struct {
	// Address is the IP to listen on; empty means all interfaces.
	Address string
	// Port is the secure port; 0 means DefaultPort.
	Port int
	// ReadOnlyPort is the unauthenticated port; 0 turns it off (the
	// kubelet config file's default).
	ReadOnlyPort int
	// HealthzAddress and HealthzPort are where the healthz port listens
	// (plain HTTP, /healthz only); HealthzPort 0 turns it off.
	HealthzAddress string
	HealthzPort    int

	// TLSCertFile and TLSKeyFile are the serving certificate and key.
	// When both are empty, a self-signed certificate for the node name
	// and NodeIPs is generated into CertDir (kubelet.crt, kubelet.key),
	// or reused from there when it is present, valid and names the node.
	TLSCertFile, TLSKeyFile string
	// CertDir is where a self-signed certificate is kept.
	CertDir string
	// ServingCertificate, when set, is asked for the serving certificate
	// at each handshake (a certificate issued through a CSR and rotated,
	// --rotate-server-certificates); TLSCertFile, TLSKeyFile and CertDir
	// are then unused. While it returns nil, handshakes fail.
	ServingCertificate func() *tls.Certificate
	// NodeIPs are added to a generated certificate's IP SANs.
	NodeIPs []net.IP

	// ClientCAFile is a PEM bundle of CAs that sign client certificates
	// (user = CN, groups = O); empty turns client certificates off.
	ClientCAFile string
	// Authenticator checks bearer tokens; nil turns tokens off.
	Authenticator Authenticator
	// Authorizer decides authenticated requests; nil forbids them all
	// (use AlwaysAllow{} to allow everything).
	Authorizer Authorizer

	// Metrics is served at /metrics; nil answers 404.
	Metrics http.Handler
	// ProbeMetrics is served at /metrics/probes; nil answers 404.
	ProbeMetrics http.Handler

	// Configz is the effective configuration, served at /configz as
	// {"kubeletconfig": Configz}; nil answers 404.
	Configz any
	// SystemLogs serves the node's log files (SystemLogsDir) at /logs/
	// (enableSystemLogHandler); off answers 405.
	SystemLogs bool
	// SystemLogsDir is the directory /logs/ serves (default /var/log).
	SystemLogsDir string
	// Profiling serves net/http/pprof at /debug/pprof/
	// (enableProfilingHandler); off answers 405.
	Profiling bool

	// LogPollInterval is how often a followed log is checked for new
	// lines (default 250 ms).
	LogPollInterval time.Duration
	// ShutdownTimeout bounds the graceful shutdown before connections
	// are closed (default 10 s).
	ShutdownTimeout time.Duration
}

// Server is the HTTP server. Its handlers may be used without Start (e.g.
// with httptest).
type Server struct {
	p        Provider
	cfg      Config
	log      *slog.Logger
	tls      *tls.Config
	clientCA *clientCAFile

	secure   http.Handler
	readOnly http.Handler
	health   http.Handler

	// resourceMetrics and cadvisorMetrics serve the stats sample as
	// /metrics/resource and /metrics/cadvisor (node/real/statsmetrics).
	resourceMetrics, cadvisorMetrics http.Handler

	// listen opens listeners (net.Listen; tests replace it).
	listen func(network, address string) (net.Listener, error)
	// healthzRetry is how long the healthz port waits between attempts to
	// listen (defaultHealthzRetry), on clock (the wall clock; tests drive
	// a mock); healthzUp is closed once the healthz port listens.
	healthzRetry time.Duration
	clock        clock.Clock
	healthzUp    chan struct{}

	// stopping is closed when shutdown starts: followed logs end.
	stopping chan struct{}
	done     chan struct{}

	mu           sync.Mutex
	started      bool
	secureAddr   net.Addr
	readOnlyAddr net.Addr
	healthzAddr  net.Addr
}

// defaultHealthzRetry is how long the healthz port waits before it tries
// to listen again after a failure (the kubelet's 5 s).
const defaultHealthzRetry = 5 * time.Second

// New validates cfg, loads or generates the serving certificate and the
// client CA, and builds the handlers. It does not listen.
func New(p Provider, cfg Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("secure port %d: must be between 1 and 65535", cfg.Port)
	}
	if cfg.ReadOnlyPort < 0 || cfg.ReadOnlyPort > 65535 {
		return nil, fmt.Errorf("read-only port %d: must be 0 (off) or between 1 and 65535", cfg.ReadOnlyPort)
	}
	if cfg.ReadOnlyPort == cfg.Port {
		return nil, fmt.Errorf("read-only port %d: must differ from the secure port", cfg.ReadOnlyPort)
	}
	if cfg.HealthzPort < 0 || cfg.HealthzPort > 65535 {
		return nil, fmt.Errorf("healthz port %d: must be 0 (off) or between 1 and 65535", cfg.HealthzPort)
	}
	if cfg.HealthzPort != 0 && net.ParseIP(cfg.HealthzAddress) == nil {
		return nil, fmt.Errorf("healthz address %q: must be an IP address", cfg.HealthzAddress)
	}
	if cfg.LogPollInterval <= 0 {
		cfg.LogPollInterval = 250 * time.Millisecond
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.SystemLogsDir == "" {
		cfg.SystemLogsDir = DefaultSystemLogsDir
	}
	s := &Server{
		p: p, cfg: cfg, log: log,
		listen:       net.Listen,
		healthzRetry: defaultHealthzRetry, clock: clock.New(), healthzUp: make(chan struct{}),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
	}
	if cfg.ServingCertificate != nil {
		s.tls = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: dynamicCert(cfg.ServingCertificate)}
	} else {
		cert, err := servingCert(cfg, p.NodeName(), time.Now(), log)
		if err != nil {
			return nil, fmt.Errorf("serving certificate of node %q: %w", p.NodeName(), err)
		}
		s.tls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	var err error
	if cfg.ClientCAFile != "" {
		if s.clientCA, err = newClientCAFile(cfg.ClientCAFile, log); err != nil {
			return nil, err
		}
		s.tls.ClientAuth = tls.RequestClientCert
	}
	authz := cfg.Authorizer
	if authz == nil {
		log.Warn("no authorizer configured: the secure port forbids every request")
		authz = denyAll{}
	}
	if cfg.Authenticator == nil && s.clientCA == nil {
		log.Warn("no authenticator and no client CA configured: the secure port refuses every request")
	}

	s.resourceMetrics = statsmetrics.Handler(statsmetrics.NewResource(p, log))
	s.cadvisorMetrics = statsmetrics.Handler(statsmetrics.NewCadvisor(p, log))
	secureMux := http.NewServeMux()
	s.installCommon(secureMux)
	secureMux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	s.installStreaming(secureMux)
	s.installDebug(secureMux)
	s.installProfiling(secureMux)
	s.secure = s.logged("secure", &secureFilter{
		next:     secureMux,
		nodeName: p.NodeName,
		authn:    cfg.Authenticator,
		clientCA: s.clientCA,
		authz:    authz,
		log:      log,
	})

	roMux := http.NewServeMux()
	s.installCommon(roMux)
	s.readOnly = s.logged("read-only", roMux)

	healthMux := http.NewServeMux()
	healthMux.HandleFunc("GET /healthz", s.healthz)
	healthMux.HandleFunc("GET /healthz/{check}", s.healthzCheck)
	s.health = s.logged("healthz", healthMux)
	return s, nil
}

// installCommon adds the endpoints both ports serve.
func (s *Server) installCommon(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /healthz/{check}", s.healthzCheck)
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /stats/summary", s.statsSummary)
	mux.Handle("GET /metrics", orNotFound(s.cfg.Metrics))
	mux.Handle("GET /metrics/probes", orNotFound(s.cfg.ProbeMetrics))
	mux.Handle("GET /metrics/resource", s.resourceMetrics)
	mux.Handle("GET /metrics/cadvisor", s.cadvisorMetrics)
}

// orNotFound returns h, or a 404 handler when h is nil.
func orNotFound(h http.Handler) http.Handler {
	if h == nil {
		return http.NotFoundHandler()
	}
	return h
}

// SecureHandler is the secure port's handler: authentication,
// authorization, then the endpoints.
func (s *Server) SecureHandler() http.Handler { return s.secure }

// ReadOnlyHandler is the read-only port's handler (no authentication).
func (s *Server) ReadOnlyHandler() http.Handler { return s.readOnly }

// HealthzHandler is the healthz port's handler: /healthz and its checks
// only, no authentication.
func (s *Server) HealthzHandler() http.Handler { return s.health }

// TLSConfig is a copy of the secure port's TLS configuration (serving
// certificate; client certificates requested when a client CA is set).
func (s *Server) TLSConfig() *tls.Config { return s.tls.Clone() }

// Start listens on the secure port and, when configured, the read-only
// port, and returns once both listen. It serves until ctx ends, then shuts
// down gracefully (followed logs end at once, other requests get
// ShutdownTimeout) and closes Done. The healthz port, when configured, is
// tried at once and, while it cannot listen (the address is taken), again
// every 5 s with an error logged, as the kubelet does: it never stops
// the node from starting.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server already started")
	}
	secureLn, err := s.listen("tcp", net.JoinHostPort(s.cfg.Address, strconv.Itoa(s.cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen on secure port %d: %w", s.cfg.Port, err)
	}
	var roLn net.Listener
	if s.cfg.ReadOnlyPort != 0 {
		if roLn, err = s.listen("tcp", net.JoinHostPort(s.cfg.Address, strconv.Itoa(s.cfg.ReadOnlyPort))); err != nil {
			secureLn.Close()
			return fmt.Errorf("listen on read-only port %d: %w", s.cfg.ReadOnlyPort, err)
		}
	}
	s.started = true
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	secureSrv := &http.Server{Handler: s.secure, TLSConfig: s.tls.Clone(), ErrorLog: errLog, ReadHeaderTimeout: 30 * time.Second}
	servers := []*http.Server{secureSrv}
	s.secureAddr = secureLn.Addr()
	s.log.Info("serving the secure port", "addr", s.secureAddr.String())
	go s.serve("secure", func() error { return secureSrv.ServeTLS(secureLn, "", "") })
	if roLn != nil {
		roSrv := &http.Server{Handler: s.readOnly, ErrorLog: errLog, ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, roSrv)
		s.readOnlyAddr = roLn.Addr()
		s.log.Info("serving the read-only port", "addr", s.readOnlyAddr.String())
		go s.serve("read-only", func() error { return roSrv.Serve(roLn) })
	}
	var healthSrv *http.Server
	if s.cfg.HealthzPort != 0 {
		healthSrv = &http.Server{Handler: s.health, ErrorLog: errLog, ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, healthSrv)
		s.startHealthz(ctx, healthSrv)
	}
	go func() {
		<-ctx.Done()
		close(s.stopping)
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for _, srv := range servers {
			wg.Go(func() {
				if err := srv.Shutdown(sctx); err != nil {
					s.log.Warn("graceful shutdown timed out; closing connections", "err", err)
					srv.Close()
				}
			})
		}
		wg.Wait()
		s.log.Info("HTTP server stopped")
		close(s.done)
	}()
	return nil
}

// startHealthz serves the healthz port with srv: it listens now if it
// can, else keeps trying every healthzRetry until it can or ctx ends.
func (s *Server) startHealthz(ctx context.Context, srv *http.Server) {
	addr := net.JoinHostPort(s.cfg.HealthzAddress, strconv.Itoa(s.cfg.HealthzPort))
	try := func() bool {
		ln, err := s.listen("tcp", addr)
		if err != nil {
			s.log.Error("cannot listen on the healthz port; trying again", "addr", addr, "retry", s.healthzRetry, "err", err)
			return false
		}
		s.healthzAddr = ln.Addr()
		close(s.healthzUp)
		s.log.Info("serving the healthz port", "addr", s.healthzAddr.String())
		go s.serve("healthz", func() error { return srv.Serve(ln) })
		return true
	}
	if try() {
		return
	}
	go func() {
		t := s.clock.Ticker(s.healthzRetry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s.mu.Lock()
			ok := try()
			s.mu.Unlock()
			if ok {
				return
			}
		}
	}()
}

// serve runs one server's serve loop and logs how it ended.
func (s *Server) serve(port string, fn func() error) {
	if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("HTTP server failed", "port", port, "err", err)
	}
}

// Done is closed once a started server has shut down.
func (s *Server) Done() <-chan struct{} { return s.done }

// SecureAddr is the secure listener's address (nil before Start).
func (s *Server) SecureAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secureAddr
}

// ReadOnlyAddr is the read-only listener's address (nil before Start or
// when the port is off).
func (s *Server) ReadOnlyAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnlyAddr
}

// HealthzAddr is the healthz listener's address (nil before Start, when
// the port is off, or while it cannot listen).
func (s *Server) HealthzAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthzAddr
}

// pods answers the managed pods as a v1 PodList.
func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	pods := s.p.Pods()
	list := corev1.PodList{Items: make([]corev1.Pod, 0, len(pods))}
	list.Kind, list.APIVersion = "PodList", "v1"
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	s.writeJSON(w, r, list)
}

// statsSummary answers the stats Summary; only_cpu_and_memory=true keeps
// only CPU and memory, like the kubelet.
func (s *Server) statsSummary(w http.ResponseWriter, r *http.Request) {
	onlyCPUMem, err := boolParam(r.URL.Query(), "only_cpu_and_memory")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sum, err := s.summary(r.Context())
	if err != nil {
		s.log.Error("stats summary failed", "err", err)
		http.Error(w, "Internal Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if onlyCPUMem {
		sum = cpuAndMemoryOnly(sum)
	}
	s.writeJSON(w, r, sum)
}

// summary builds the Summary of the agent's latest stats sample.
func (s *Server) summary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	sample, err := s.p.Stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats sample: %w", err)
	}
	return sample.Summary(s.p.NodeName(), s.p.Pods()), nil
}

// cpuAndMemoryOnly strips a Summary down to CPU and memory.
func cpuAndMemoryOnly(in *statsv1alpha1.Summary) *statsv1alpha1.Summary {
	out := &statsv1alpha1.Summary{
		Node: statsv1alpha1.NodeStats{NodeName: in.Node.NodeName, StartTime: in.Node.StartTime, CPU: in.Node.CPU, Memory: in.Node.Memory},
		Pods: make([]statsv1alpha1.PodStats, 0, len(in.Pods)),
	}
	for _, p := range in.Pods {
		op := statsv1alpha1.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, CPU: p.CPU, Memory: p.Memory, Containers: make([]statsv1alpha1.ContainerStats, 0, len(p.Containers))}
		for _, c := range p.Containers {
			op.Containers = append(op.Containers, statsv1alpha1.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory})
		}
		out.Pods = append(out.Pods, op)
	}
	return out
}

// writeJSON answers v as JSON.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encode response", "path", r.URL.Path, "err", err)
		http.Error(w, "Internal Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

// logged logs every request at debug level.
func (s *Server) logged(port string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.log.Debug("HTTP request", "port", port, "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start), "remote", r.RemoteAddr)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the original writer (Flush).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush flushes the original writer (the stream proxies type-assert it).
func (r *statusRecorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// Hijack hands the connection over (exec, attach and port-forward
// upgrades) and records 101 Switching Protocols.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil {
		r.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}
