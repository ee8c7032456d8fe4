package fakecri

import (
	"context"
	"fmt"
	"slices"
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
	rec := len(c.execs) - 1
	rl, scripted := findExecRule(c.script.exec, cmd)
	ans := answer{}
	if scripted {
		ans = rl.tl.at(time.Duration(now - c.startedAt))
	}
	r.unlock()

	if ans.kind == answerHang {
		if timeout > 0 {
			r.clock.Sleep(timeout)
			r.execEnded(c, rec, false)
			return nil, status.Errorf(codes.DeadlineExceeded, "exec in container %q: command %q timed out after %s", containerID, strings.Join(cmd, " "), timeout)
		}
		err := r.newSignal("fakecri/exec-hang/" + containerID).Wait(ctx)
		r.execEnded(c, rec, true)
		return nil, err
	}
	r.execEnded(c, rec, false)
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

// execEnded records that exec i of container c returned now (cut: by its
// caller's context, unanswered), for TrueExecs. It reads the container as
// it is, without bringing the runtime up to now, so that recording
// changes nothing the simulation sees.
func (r *Runtime) execEnded(c *container, i int, cut bool) {
	r.mu.Lock()
	defer r.unlock()
	e := &c.execs[i]
	e.Ended, e.Cut, e.ContainerRan = r.now(), cut, c.state == runningState
}

// ProbeFailure says why ProbeExec got no exit code.
type ProbeFailure int

const (
	// ProbeRefused: the container is not running.
	ProbeRefused ProbeFailure = iota + 1
	// ProbeTimeout: the exec never ends (scripted "hang"); the caller
	// decides how long the probe waited.
	ProbeTimeout
	// ProbeNoContainer: no such container.
	ProbeNoContainer
)

// ProbeError is the error of a ProbeExec that got no exit code.
type ProbeError struct {
	Failure     ProbeFailure
	ContainerID string
}

// Error describes the failure.
func (e *ProbeError) Error() string {
	switch e.Failure {
	case ProbeRefused:
		return fmt.Sprintf("container %q is not running", e.ContainerID)
	case ProbeTimeout:
		return fmt.Sprintf("exec in container %q never ends", e.ContainerID)
	default:
		return fmt.Sprintf("container %q not found", e.ContainerID)
	}
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
// judge a probe after the fact), by the rule of endpoints.go: a port the
// container does not listen on refuses; unscripted requests on one it
// listens on are healthy.
type Endpoints struct {
	s     *script
	d     time.Duration
	ports []int // the pod's declared TCP ports
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
	return Endpoints{s: c.script, d: time.Duration(at.UnixNano() - c.startedAt), ports: c.sb.ports}, true
}

// accepts reports whether a connection to port is accepted.
func (e Endpoints) accepts(port int) bool {
	_, declared := slices.BinarySearch(e.ports, port)
	return (declared || e.s.namesPort(port)) && e.s.connectAt(port, e.d) == connAccepted
}

// HTTPHealthy: an HTTP GET of port and path (without its leading "/")
// answers 200–399.
func (e Endpoints) HTTPHealthy(port int, path string) bool {
	a := e.s.httpAt(port, path, e.d)
	return e.accepts(port) && a.kind == answerValue && a.value >= 200 && a.value < 400
}

// TCPHealthy: a TCP connect to port succeeds.
func (e Endpoints) TCPHealthy(port int) bool {
	return e.accepts(port)
}

// GRPCHealthy: a gRPC health check of service on port answers SERVING.
func (e Endpoints) GRPCHealthy(port int, service string) bool {
	a := e.s.grpcAt(port, service, e.d)
	return e.accepts(port) && a.kind == answerValue && a.value == grpcServing
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
