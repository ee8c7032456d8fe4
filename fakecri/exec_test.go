package fakecri

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExecSync(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c", "FAKECRI_EXEC=cat /tmp/healthy=0,10s:1;ls=hang;2"))
	plain := f.run(sb, ctrConfig("plain"))

	resp := func(id string, cmd ...string) *runtimeapi.ExecSyncResponse {
		t.Helper()
		r, err := f.r.ExecSyncResponse(f.ctx, id, cmd, time.Second)
		if err != nil {
			t.Fatalf("exec %v: %v", cmd, err)
		}
		return r
	}
	if diff := cmp.Diff(&runtimeapi.ExecSyncResponse{Stdout: []byte("hello world\n")}, resp(plain, "echo", "hello", "world"), protocmp.Transform()); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}
	if got := resp(plain, "false").ExitCode; got != 1 {
		t.Errorf("false exited %d, want 1", got)
	}
	if got := resp(plain, "anything").ExitCode; got != 0 {
		t.Errorf("unscripted command exited %d, want 0", got)
	}
	if got := resp(id, "cat", "/tmp/healthy").ExitCode; got != 0 {
		t.Errorf("scripted command at 0s exited %d, want 0", got)
	}
	if got := resp(id, "other").ExitCode; got != 2 {
		t.Errorf("default rule exited %d, want 2", got)
	}
	f.clock.Advance(10 * time.Second)
	_, _, err := f.r.ExecSync(f.ctx, id, []string{"cat", "/tmp/healthy"}, time.Second)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 1 || !ee.Exited() {
		t.Errorf("scripted command at 10s: err %v, want an ExitError with status 1", err)
	}

	before := f.clock.Elapsed()
	_, err = f.r.ExecSyncResponse(f.ctx, id, []string{"ls"}, 3*time.Second)
	wantCode(t, "hanging exec", err, codes.DeadlineExceeded)
	if got := f.clock.Elapsed() - before; got != 3*time.Second {
		t.Errorf("hanging exec took %v, want its 3s timeout", got)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if _, err := f.r.ExecSyncResponse(ctx, id, []string{"ls"}, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("hanging exec without timeout: %v, want context.Canceled", err)
	}

	_, err = f.r.ExecSyncResponse(f.ctx, "nope", []string{"true"}, time.Second)
	wantCode(t, "exec in unknown container", err, codes.NotFound)
	_, err = f.r.ExecSyncResponse(f.ctx, id, nil, time.Second)
	wantCode(t, "empty command", err, codes.InvalidArgument)
	if err := f.r.StopContainer(f.ctx, plain, 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.r.ExecSyncResponse(f.ctx, plain, []string{"true"}, time.Second)
	wantCode(t, "exec in exited container", err, codes.FailedPrecondition)
}
