package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	translator "k8s.io/apiserver/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// installStreaming adds /exec, /attach, /portForward and /run, with and
// without the pod UID in the path, for GET and POST as the kubelet does.
func (s *Server) installStreaming(mux *http.ServeMux) {
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", s.exec)
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", s.attach)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", s.attach)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}", s.portForward)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.run)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{uid}/{container}", s.run)
}

// streamTarget is the running container a stream request names.
type streamTarget struct {
	containerID string // the runtime's ID, without the "<runtime>://" prefix
	desc        string // "container \"c\" of pod ns/name"
}

// findRunningContainer resolves {namespace}/{pod}[/{uid}]/{container} to a
// running container, or writes the kubelet's error and returns false.
func (s *Server) findRunningContainer(w http.ResponseWriter, r *http.Request) (streamTarget, bool) {
	ns, name, uid, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container")
	pod := findPod(s.p.Pods(), ns, name)
	if pod == nil || (uid != "" && string(pod.UID) != uid) {
		http.Error(w, fmt.Sprintf("pod %s/%s does not exist", ns, name), http.StatusNotFound)
		return streamTarget{}, false
	}
	t := streamTarget{desc: fmt.Sprintf("container %q of pod %s/%s", container, ns, name)}
	st, ok := findStatus(pod, container)
	if !ok || st.State.Running == nil || st.ContainerID == "" {
		http.Error(w, fmt.Sprintf("container not found (%q)", container), http.StatusNotFound)
		return streamTarget{}, false
	}
	_, id, found := strings.Cut(st.ContainerID, "://")
	if !found {
		id = st.ContainerID
	}
	t.containerID = id
	return t, true
}

// exec asks the runtime for the streaming URL of a command and proxies
// the client's upgraded connection there. A WebSocket client speaking
// v5.channel.k8s.io (kubectl's default) is translated to SPDY, which every
// runtime's streaming server speaks.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t, ok := s.findRunningContainer(w, r)
	if !ok {
		return
	}
	cmd := r.URL.Query()[corev1.ExecCommandParam]
	resp, err := s.p.Runtime().Exec(r.Context(), &runtimeapi.ExecRequest{
		ContainerId: t.containerID, Cmd: cmd,
		Tty: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	})
	if err != nil {
		s.streamError(w, fmt.Errorf("exec %q in %s: %w", strings.Join(cmd, " "), t.desc, err))
		return
	}
	s.proxyStream(w, r, resp.GetUrl(), opts)
}

// attach asks the runtime for the streaming URL of a container's
// standard streams and proxies the client there, like exec.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	t, ok := s.findRunningContainer(w, r)
	if !ok {
		return
	}
	resp, err := s.p.Runtime().Attach(r.Context(), &runtimeapi.AttachRequest{
		ContainerId: t.containerID,
		Tty:         opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	})
	if err != nil {
		s.streamError(w, fmt.Errorf("attach to %s: %w", t.desc, err))
		return
	}
	s.proxyStream(w, r, resp.GetUrl(), opts)
}

// proxyStream proxies an exec or attach connection to the runtime's
// streaming URL: SPDY clients through the upgrade-aware proxy, v5
// WebSocket clients through the stream translator.
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, rawURL string, opts *remotecommand.Options) {
	u, err := url.Parse(rawURL)
	if err != nil {
		s.streamError(w, fmt.Errorf("runtime streaming URL %q: %w", rawURL, err))
		return
	}
	var h http.Handler = proxy.NewUpgradeAwareHandler(u, nil, false, true, s.responder())
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		h = translator.NewStreamTranslatorHandler(u, nil, 0, translator.Options{
			Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.TTY,
		})
	}
	h.ServeHTTP(w, r)
}

// portForward asks the runtime for the streaming URL of the pod's
// sandbox and proxies the client there: SPDY directly, a WebSocket
// client (portforward.k8s.io over the tunneling protocol, kubectl's
// default) through the tunneling handler.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	tunnel := wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
	var ports []int32
	if !tunnel {
		opts, err := portforward.NewV4Options(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ports = opts.Ports
	}
	ns, name, uid := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid")
	pod := findPod(s.p.Pods(), ns, name)
	if pod == nil || (uid != "" && string(pod.UID) != uid) {
		http.Error(w, fmt.Sprintf("pod %s/%s does not exist", ns, name), http.StatusNotFound)
		return
	}
	sandboxID, err := s.readySandbox(r.Context(), pod)
	if err != nil {
		s.streamError(w, fmt.Errorf("port forward to pod %s/%s: %w", ns, name, err))
		return
	}
	resp, err := s.p.Runtime().PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: ports})
	if err != nil {
		s.streamError(w, fmt.Errorf("port forward to pod %s/%s: %w", ns, name, err))
		return
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		s.streamError(w, fmt.Errorf("runtime streaming URL %q: %w", resp.GetUrl(), err))
		return
	}
	var h http.Handler = proxy.NewUpgradeAwareHandler(u, nil, false, true, s.responder())
	if tunnel {
		h = translator.NewTunnelingHandler(h)
	}
	h.ServeHTTP(w, r)
}

// readySandbox returns the ID of the pod's ready sandbox.
func (s *Server) readySandbox(ctx context.Context, pod *corev1.Pod) (string, error) {
	sandboxes, err := s.p.Runtime().ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{podstate.LabelPodUID: string(pod.UID)},
	})
	if err != nil {
		return "", fmt.Errorf("list sandboxes: %w", err)
	}
	newest := (*runtimeapi.PodSandbox)(nil)
	for _, sb := range sandboxes {
		if newest == nil || sb.GetCreatedAt() > newest.GetCreatedAt() {
			newest = sb
		}
	}
	if newest == nil {
		return "", status.Errorf(codes.NotFound, "pod %s/%s (%s) has no ready sandbox", pod.Namespace, pod.Name, pod.UID)
	}
	return newest.GetId(), nil
}

// run runs ?cmd= (space-separated) in the container through ExecSync and
// answers its standard output followed by its standard error (the
// kubelet's legacy /run endpoint).
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	t, ok := s.findRunningContainer(w, r)
	if !ok {
		return
	}
	cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
	stdout, stderr, err := s.p.Runtime().ExecSync(r.Context(), t.containerID, cmd, 0)
	if err != nil {
		s.log.Info("run in container failed", "container", t.desc, "cmd", cmd, "err", err)
		http.Error(w, fmt.Sprintf("run %q in %s: %v", strings.Join(cmd, " "), t.desc, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(stdout, stderr...))
}

// streamError answers a runtime error the way the kubelet does (gRPC
// codes become HTTP statuses) and logs it.
func (s *Server) streamError(w http.ResponseWriter, err error) {
	s.log.Info("stream request failed", "err", err)
	_ = streaming.WriteError(err, w)
}

// responder logs and answers errors of the upgrade-aware proxy.
func (s *Server) responder() proxy.ErrorResponder { return proxyResponder{s} }

type proxyResponder struct{ s *Server }

// Error answers 500 with the proxy's error.
func (p proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	p.s.log.Error("proxying a stream to the runtime failed", "path", r.URL.Path, "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
