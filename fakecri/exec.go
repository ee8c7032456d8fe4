package fakecri

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExitError is the error of an ExecSync whose command exited non-zero. It
// has the method set of k8s.io/utils/exec.ExitError, as the CRI remote
// client's error has.
type ExitError struct {
	Cmd    []string
	Code   int
	Stderr []byte
}

// Error says which command exited with which code.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.Cmd, " "), e.Code, e.Stderr)
}

// String is Error.
func (e *ExitError) String() string { return e.Error() }

// Exited is always true: the command ran and exited.
func (e *ExitError) Exited() bool { return true }

// ExitStatus is the command's exit code.
func (e *ExitError) ExitStatus() int { return e.Code }

// ExecSync runs a command in a running container, the CRI client way: a
// non-zero exit is an *ExitError carrying the code.
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error) {
	resp, err := r.ExecSyncResponse(ctx, containerID, cmd, timeout)
	if err != nil {
		return nil, nil, err
	}
	if resp.ExitCode != 0 {
		return resp.Stdout, resp.Stderr, &ExitError{Cmd: cmd, Code: int(resp.ExitCode), Stderr: resp.Stderr}
	}
	return resp.Stdout, resp.Stderr, nil
}

// ExecSyncResponse runs a command in a running container and returns the
// CRI response (what the gRPC server sends). The exit code comes from
// FAKECRI_EXEC at the time since the container started; without a rule,
// `echo ARGS` prints its arguments, `false` exits 1 and anything else exits
// 0. A "hang" answer waits out the timeout (through Clock.Sleep) and fails
// with DeadlineExceeded; with no timeout it waits for ctx to end.
func (r *Runtime) ExecSyncResponse(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	if err := r.enter(ctx, "ExecSync", callTarget{containerID: containerID}); err != nil {
		return nil, err
	}
	if len(cmd) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "exec in container %q: command must not be empty", containerID)
	}
	r.mu.Lock()
	now := r.now()
	r.advance(now)
	c, err := r.getContainer(containerID)
	if err != nil {
		r.unlock()
		return nil, err
	}
	if c.state != runningState {
		r.unlock()
		return nil, status.Errorf(codes.FailedPrecondition, "exec in container %q: container is in %s state", c.id, c.state)
	}
	c.execs = append(c.execs, ExecRecord{Cmd: strings.Join(cmd, " "), At: now})
	rl, scripted := findExecRule(c.script.exec, cmd)
	ans := answer{}
	if scripted {
		ans = rl.tl.at(time.Duration(now - c.startedAt))
	}
	r.unlock()

	if ans.kind == answerHang {
		if timeout > 0 {
			r.clock.Sleep(timeout)
			return nil, status.Errorf(codes.DeadlineExceeded, "exec in container %q: command %q timed out after %s", containerID, strings.Join(cmd, " "), timeout)
		}
		return nil, r.newSignal("fakecri/exec-hang/" + containerID).Wait(ctx)
	}
	resp := &runtimeapi.ExecSyncResponse{ExitCode: int32(ans.value)}
	if !scripted {
		switch cmd[0] {
		case "echo":
			resp.Stdout = []byte(strings.Join(cmd[1:], " ") + "\n")
		case "false":
			resp.ExitCode = 1
		}
	}
	return resp, nil
}

// ProbeFailure says why a probe got no answer.
type ProbeFailure int

const (
	// ProbeRefused: nothing listens (container not running, or scripted
	// "down").
	ProbeRefused ProbeFailure = iota + 1
	// ProbeTimeout: the endpoint never answers (scripted "hang"); the
	// caller decides how long the probe waited.
	ProbeTimeout
	// ProbeNoContainer: no such container.
	ProbeNoContainer
)

// ProbeError is the error of a probe that got no answer.
type ProbeError struct {
	Failure     ProbeFailure
	ContainerID string
	Port        int
}

// Error describes the failure like a dialer would.
func (e *ProbeError) Error() string {
	switch e.Failure {
	case ProbeRefused:
		return fmt.Sprintf("container %q port %d: connection refused", e.ContainerID, e.Port)
	case ProbeTimeout:
		return fmt.Sprintf("container %q port %d: i/o timeout", e.ContainerID, e.Port)
	default:
		return fmt.Sprintf("container %q not found", e.ContainerID)
	}
}

// ProbeHTTP answers an HTTP GET on a container's port and path at the
// clock's now, from FAKECRI_HTTP. Unscripted ports answer 200.
func (r *Runtime) ProbeHTTP(containerID string, port int, path string) (int, error) {
	code, _, err := r.ProbeHTTPRedirect(containerID, port, path)
	return code, err
}

// ProbeHTTPRedirect is ProbeHTTP with the Location of a scripted redirect
// ("302>http://elsewhere/").
func (r *Runtime) ProbeHTTPRedirect(containerID string, port int, path string) (code int, location string, err error) {
	ans, scripted, err := r.probe(containerID, port, func(s *script) []rule { return s.http }, path)
	if err != nil {
		return 0, "", err
	}
	if !scripted {
		return 200, "", nil
	}
	return ans.value, ans.location, nil
}

// ProbeTCP answers a TCP connect to a container's port at the clock's now,
// from FAKECRI_TCP. Unscripted ports accept.
func (r *Runtime) ProbeTCP(containerID string, port int) error {
	_, _, err := r.probe(containerID, port, func(s *script) []rule { return s.tcp }, "")
	return err
}

// ProbeGRPC answers a gRPC health check of service on a container's port
// at the clock's now, from FAKECRI_GRPC. Unscripted ports answer SERVING.
func (r *Runtime) ProbeGRPC(containerID string, port int, service string) (bool, error) {
	ans, scripted, err := r.probe(containerID, port, func(s *script) []rule { return s.grpc }, service)
	if err != nil {
		return false, err
	}
	return !scripted || ans.value == grpcServing, nil
}

// probe evaluates a container's endpoint rules at now; scripted is false
// when no rule covers the endpoint (each protocol then answers healthy).
func (r *Runtime) probe(containerID string, port int, rules func(*script) []rule, sub string) (ans answer, scripted bool, err error) {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	c, ok := r.containers[containerID]
	if !ok {
		return answer{}, false, &ProbeError{Failure: ProbeNoContainer, ContainerID: containerID, Port: port}
	}
	if c.state != runningState {
		return answer{}, false, &ProbeError{Failure: ProbeRefused, ContainerID: containerID, Port: port}
	}
	rl, ok := findRule(rules(c.script), port, sub)
	if !ok {
		return answer{}, false, nil
	}
	ans = rl.tl.at(time.Duration(now - c.startedAt))
	switch ans.kind {
	case answerDown:
		return answer{}, true, &ProbeError{Failure: ProbeRefused, ContainerID: containerID, Port: port}
	case answerHang:
		return answer{}, true, &ProbeError{Failure: ProbeTimeout, ContainerID: containerID, Port: port}
	}
	return ans, true, nil
}

// ContainerAt returns the running container that answers on ip:port: the
// first container of the READY sandbox with that IP whose script names the
// port, else its first running container. Host-network sandboxes have no
// IP here.
func (r *Runtime) ContainerAt(ip string, port int) (string, bool) {
	r.mu.Lock()
	defer r.unlock()
	r.advance(r.now())
	for _, sb := range r.sandboxOrder {
		if sb.removed || sb.state != readyState || sb.ip != ip {
			continue
		}
		return firstAnswering(sb, port)
	}
	return "", false
}

// firstAnswering returns the first running container of sb whose script
// names port, else its first running container.
func firstAnswering(sb *sandbox, port int) (string, bool) {
	var first string
	for _, c := range sb.containers {
		if c.state != runningState {
			continue
		}
		if first == "" {
			first = c.id
		}
		for _, rules := range [][]rule{c.script.http, c.script.tcp, c.script.grpc} {
			for _, rl := range rules {
				if rl.port == port {
					return c.id, true
				}
			}
		}
	}
	return first, first != ""
}

// ProbeExec is the exit code an exec of cmd in a running container would
// give at the clock's now, from FAKECRI_EXEC, without running it (for
// checkers): a "hang" answer is a ProbeTimeout error, a container not
// running a ProbeRefused one.
func (r *Runtime) ProbeExec(containerID string, cmd []string) (int, error) {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	c, ok := r.containers[containerID]
	if !ok {
		return 0, &ProbeError{Failure: ProbeNoContainer, ContainerID: containerID}
	}
	if c.state != runningState {
		return 0, &ProbeError{Failure: ProbeRefused, ContainerID: containerID}
	}
	rl, scripted := findExecRule(c.script.exec, cmd)
	if !scripted {
		if len(cmd) > 0 && cmd[0] == "false" {
			return 1, nil
		}
		return 0, nil
	}
	ans := rl.tl.at(time.Duration(now - c.startedAt))
	if ans.kind == answerHang {
		return 0, &ProbeError{Failure: ProbeTimeout, ContainerID: containerID}
	}
	return ans.value, nil
}

// Endpoints is how a container's scripted endpoints and execs answer at
// one instant of its life, whatever its state then (for checkers that
// judge a probe after the fact). Unscripted endpoints are healthy.
type Endpoints struct {
	s *script
	d time.Duration
}

// EndpointsAt returns the container's endpoints as they answer at time at
// (false: no such container, or it never started).
func (r *Runtime) EndpointsAt(containerID string, at time.Time) (Endpoints, bool) {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[containerID]
	if !ok || c.startedAt == 0 {
		return Endpoints{}, false
	}
	return Endpoints{s: c.script, d: time.Duration(at.UnixNano() - c.startedAt)}, true
}

func (e Endpoints) answer(rules []rule, port int, sub string) (answer, bool) {
	rl, ok := findRule(rules, port, sub)
	if !ok {
		return answer{}, false
	}
	return rl.tl.at(e.d), true
}

// HTTPHealthy: an HTTP GET of port and path (without its leading "/")
// answers 200–399.
func (e Endpoints) HTTPHealthy(port int, path string) bool {
	a, ok := e.answer(e.s.http, port, path)
	return !ok || a.kind == answerValue && a.value >= 200 && a.value < 400
}

// TCPHealthy: a TCP connect to port succeeds.
func (e Endpoints) TCPHealthy(port int) bool {
	a, ok := e.answer(e.s.tcp, port, "")
	return !ok || a.kind == answerValue
}

// GRPCHealthy: a gRPC health check of service on port answers SERVING.
func (e Endpoints) GRPCHealthy(port int, service string) bool {
	a, ok := e.answer(e.s.grpc, port, service)
	return !ok || a.kind == answerValue && a.value == grpcServing
}

// ExecHealthy: an exec of cmd exits 0 without hanging.
func (e Endpoints) ExecHealthy(cmd []string) bool {
	rl, ok := findExecRule(e.s.exec, cmd)
	if !ok {
		return len(cmd) == 0 || cmd[0] != "false"
	}
	a := rl.tl.at(e.d)
	return a.kind == answerValue && a.value == 0
}
