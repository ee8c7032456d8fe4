// Package streamserver serves a fakecri.Runtime's Exec, Attach and
// PortForward streams over HTTP with the CRI streaming server that
// containerd-style runtimes use (k8s.io/cri-streaming/pkg/streaming), so
// that crictl, a kubelet or lockstep can exec into, attach to and
// port-forward into fake containers. It runs on the real clock, beside
// fakecri/criserver.
//
// What the fake streams do:
//   - exec runs the command as ExecSync would (FAKECRI_EXEC exit codes,
//     `echo` prints its arguments) and writes its output; the exit code
//     reaches the client;
//   - attach relays the container's log lines (FAKECRI_LOG) written while
//     attached, until the container stops or the client leaves; stdin is
//     read and discarded;
//   - a port-forward connection speaks HTTP/1.1: each request is answered
//     with the status the container's FAKECRI_HTTP script gives for that
//     port and path (200 when unscripted), or the connection is closed
//     when the port is scripted down.
package streamserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// pollInterval is how often an attach looks for new log lines and checks
// that the container still runs.
const pollInterval = 100 * time.Millisecond

// Server is a running streaming server bound to one Runtime.
type Server struct {
	srv  streaming.Server
	http *http.Server
	ln   net.Listener
}

// Start listens on addr (host:port; port 0 picks one), serves rt's streams
// there and makes rt hand out this server's URLs. Stop ends it.
func Start(rt *fakecri.Runtime, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakecri streaming server: listen on %s: %w", addr, err)
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = ln.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	srv, err := streaming.NewServer(cfg, &runtime{rt: rt})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("fakecri streaming server: %w", err)
	}
	s := &Server{srv: srv, ln: ln, http: &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}}
	go func() { _ = s.http.Serve(ln) }()
	rt.SetStreamer(srv)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stop closes the listener and every open stream.
func (s *Server) Stop() error { return s.http.Close() }

// runtime adapts a fakecri.Runtime to streaming.Runtime.
type runtime struct {
	rt *fakecri.Runtime
}

// Exec runs cmd as ExecSync does and writes its output; a non-zero exit is
// returned as an exit error (the client gets the code).
func (r *runtime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	if in != nil {
		go func() { _, _ = io.Copy(io.Discard, in) }()
	}
	resp, err := r.rt.ExecSyncResponse(ctx, containerID, cmd, 0)
	if err != nil {
		return fmt.Errorf("exec %q in container %q: %w", strings.Join(cmd, " "), containerID, err)
	}
	if out != nil {
		_, _ = out.Write(resp.Stdout)
	}
	switch {
	case errOut != nil:
		_, _ = errOut.Write(resp.Stderr)
	case tty && out != nil:
		_, _ = out.Write(resp.Stderr)
	}
	if resp.ExitCode != 0 {
		return &fakecri.ExitError{Cmd: cmd, Code: int(resp.ExitCode), Stderr: resp.Stderr}
	}
	return nil
}

// Attach relays the log lines the container writes while attached.
func (r *runtime) Attach(ctx context.Context, containerID string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	if in != nil {
		go func() { _, _ = io.Copy(io.Discard, in) }()
	}
	st, err := r.rt.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return fmt.Errorf("attach to container %q: %w", containerID, err)
	}
	logPath := st.GetStatus().GetLogPath()
	offset := fileSize(logPath)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		running := r.rt.Running(containerID) // also writes the lines due
		offset = relayLog(logPath, offset, out, errOut, tty)
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// fileSize is the size of path, 0 when it cannot be read.
func fileSize(path string) int64 {
	if path == "" {
		return 0
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// relayLog writes the messages of the complete CRI log lines of path past
// offset to out (stdout lines) and errOut (stderr lines; to out with a
// TTY) and returns the new offset.
func relayLog(path string, offset int64, out, errOut io.Writer, tty bool) int64 {
	if path == "" {
		return offset
	}
	f, err := os.Open(path)
	if err != nil {
		return offset
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return offset
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return offset
	}
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		// <RFC3339Nano> <stream> <P|F> <message>
		parts := bytes.SplitN(line, []byte(" "), 4)
		if len(parts) != 4 {
			continue
		}
		msg := append(parts[3], '\n')
		w := out
		if string(parts[1]) == "stderr" && !tty {
			w = errOut
		}
		if w != nil {
			_, _ = w.Write(msg)
		}
	}
	return offset + int64(end) + 1
}

// PortForward answers HTTP requests on the stream as the sandbox's port
// answers them (fakecri.Runtime.AnswerHTTP, by sandbox): a port nothing
// listens on fails the forward, a request answered "down" ends the stream
// and one answered "hang" holds it until ctx ends.
func (r *runtime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	ep := fakecri.Endpoint{Sandbox: podSandboxID, Port: int(port)}
	conn := r.rt.AnswerTCP(ep)
	if conn.Outcome != fakecri.Answered {
		return fmt.Errorf("port forward to port %d of sandbox %q: connect: %s", port, podSandboxID, conn.Outcome)
	}
	containerID := conn.ContainerID
	br := bufio.NewReader(stream)
	for {
		req, err := http.ReadRequest(br)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("port forward to port %d of container %q: read request: %w", port, containerID, err)
		}
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
		a := r.rt.AnswerHTTP(ep, strings.TrimPrefix(req.URL.Path, "/"))
		switch a.Outcome {
		case fakecri.Answered:
		case fakecri.Unanswered:
			<-ctx.Done()
			return nil
		default:
			return fmt.Errorf("port forward to port %d of container %q: %s %s: %s", port, containerID, req.Method, req.URL.Path, a.Outcome)
		}
		code := a.Status
		body := fmt.Sprintf("fakecri: container %s port %d %s: %d %s\n", shortID(a.ContainerID), port, req.URL.Path, code, http.StatusText(code))
		resp := &http.Response{
			StatusCode:    code,
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			ContentLength: int64(len(body)),
			Body:          io.NopCloser(strings.NewReader(body)),
			Close:         req.Close,
		}
		if a.Location != "" {
			resp.Header.Set("Location", a.Location)
		}
		if err := resp.Write(stream); err != nil {
			return fmt.Errorf("port forward to port %d of container %q: write response: %w", port, containerID, err)
		}
		if req.Close {
			return nil
		}
	}
}

// shortID is the first 13 characters of an ID, as crictl prints them.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
