package fakecri

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Streamer hands out the streaming URLs of Exec, Attach and PortForward,
// as a CRI streaming server does (k8s.io/cri-streaming's streaming.Server
// is one). fakecri/streamserver serves the streams.
type Streamer interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// streamerSlot holds a Runtime's Streamer under its own lock (it is set
// once, after New, by the process that serves the streams).
type streamerSlot struct {
	mu sync.Mutex
	s  Streamer
}

// SetStreamer makes Exec, Attach and PortForward answer with s's URLs;
// without one they answer Unimplemented (the in-process runtime has no
// streaming server).
func (r *Runtime) SetStreamer(s Streamer) {
	r.streamer.mu.Lock()
	defer r.streamer.mu.Unlock()
	r.streamer.s = s
}

func (r *Runtime) currentStreamer() Streamer {
	r.streamer.mu.Lock()
	defer r.streamer.mu.Unlock()
	return r.streamer.s
}

// Exec checks that the container runs and returns the streaming URL of the
// command (the stream runs ExecSyncResponse).
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := r.enter(ctx, "Exec", callTarget{containerID: req.GetContainerId()}); err != nil {
		return nil, err
	}
	st := r.currentStreamer()
	if st == nil {
		return nil, unimplemented("Exec")
	}
	if len(req.GetCmd()) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "exec in container %q: command must not be empty", req.GetContainerId())
	}
	if err := r.checkRunning(req.GetContainerId(), "exec in"); err != nil {
		return nil, err
	}
	return st.GetExec(req)
}

// Attach checks that the container runs and returns the streaming URL of
// its output.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.enter(ctx, "Attach", callTarget{containerID: req.GetContainerId()}); err != nil {
		return nil, err
	}
	st := r.currentStreamer()
	if st == nil {
		return nil, unimplemented("Attach")
	}
	if err := r.checkRunning(req.GetContainerId(), "attach to"); err != nil {
		return nil, err
	}
	return st.GetAttach(req)
}

// PortForward checks that the sandbox is ready and returns the streaming
// URL of its ports.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := r.enter(ctx, "PortForward", callTarget{sandboxID: req.GetPodSandboxId()}); err != nil {
		return nil, err
	}
	st := r.currentStreamer()
	if st == nil {
		return nil, unimplemented("PortForward")
	}
	r.mu.Lock()
	sb, ok := r.sandboxes[req.GetPodSandboxId()]
	ready := ok && sb.state == readyState
	r.unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", req.GetPodSandboxId())
	}
	if !ready {
		return nil, status.Errorf(codes.FailedPrecondition, "port forward into sandbox %q: sandbox is not running", req.GetPodSandboxId())
	}
	return st.GetPortForward(req)
}

// checkRunning answers an error unless the container exists and runs.
func (r *Runtime) checkRunning(containerID, op string) error {
	r.mu.Lock()
	defer r.unlock()
	r.advance(r.now())
	c, err := r.getContainer(containerID)
	if err != nil {
		return err
	}
	if c.state != runningState {
		return status.Errorf(codes.FailedPrecondition, "%s container %q: container is in %s state", op, c.id, c.state)
	}
	return nil
}

// Running reports whether the container exists and runs (for streams that
// end when it stops).
func (r *Runtime) Running(containerID string) bool {
	return r.checkRunning(containerID, "check") == nil
}
