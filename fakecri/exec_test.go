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

func TestProbes(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c",
		"FAKECRI_HTTP=8080/healthz=200,30s:500;8080=404;*=down",
		"FAKECRI_TCP=5432=down,3s:up,1m:hang",
		"FAKECRI_GRPC=9090=not_serving,2s:serving;9090/other=service_unknown",
	))
	plain := f.run(sb, ctrConfig("plain"))

	type probes struct {
		Healthz, Root, Other   int
		OtherErr, TCP, GRPCErr string
		GRPC, GRPCOther        bool
	}
	measure := func() probes {
		var p probes
		var err error
		p.Healthz, _ = f.r.ProbeHTTP(id, 8080, "healthz")
		p.Root, _ = f.r.ProbeHTTP(id, 8080, "")
		p.Other, err = f.r.ProbeHTTP(id, 81, "x")
		p.OtherErr = probeErr(err)
		p.TCP = probeErr(f.r.ProbeTCP(id, 5432))
		p.GRPC, err = f.r.ProbeGRPC(id, 9090, "")
		p.GRPCErr = probeErr(err)
		p.GRPCOther, _ = f.r.ProbeGRPC(id, 9090, "other")
		return p
	}
	if diff := cmp.Diff(probes{Healthz: 200, Root: 404, OtherErr: "refused", TCP: "refused", GRPCErr: "ok"}, measure()); diff != "" {
		t.Errorf("at 0s (-want +got):\n%s", diff)
	}
	f.clock.Advance(5 * time.Second)
	if diff := cmp.Diff(probes{Healthz: 200, Root: 404, OtherErr: "refused", TCP: "ok", GRPC: true, GRPCErr: "ok"}, measure()); diff != "" {
		t.Errorf("at 5s (-want +got):\n%s", diff)
	}
	f.clock.Advance(time.Minute)
	if diff := cmp.Diff(probes{Healthz: 500, Root: 404, OtherErr: "refused", TCP: "timeout", GRPC: true, GRPCErr: "ok"}, measure()); diff != "" {
		t.Errorf("at 65s (-want +got):\n%s", diff)
	}

	// Unscripted endpoints are healthy; stopped containers refuse.
	if st, err := f.r.ProbeHTTP(plain, 80, "/"); st != 200 || err != nil {
		t.Errorf("unscripted HTTP: %d %v, want 200", st, err)
	}
	if ok, err := f.r.ProbeGRPC(plain, 80, ""); !ok || err != nil {
		t.Errorf("unscripted gRPC: %v %v, want serving", ok, err)
	}
	if err := f.r.StopContainer(f.ctx, plain, 0); err != nil {
		t.Fatal(err)
	}
	if got := probeErr(f.r.ProbeTCP(plain, 80)); got != "refused" {
		t.Errorf("TCP to stopped container: %s, want refused", got)
	}
	if got := probeErr(f.r.ProbeTCP("nope", 80)); got != "nocontainer" {
		t.Errorf("TCP to unknown container: %s, want nocontainer", got)
	}

	// The simulator's network finds the container from the pod IP.
	if got, ok := f.r.ContainerAt("10.88.0.2", 5432); !ok || got != id {
		t.Errorf("ContainerAt(10.88.0.2, 5432) = %q %v, want %q", got, ok, id)
	}
	if _, ok := f.r.ContainerAt("10.88.9.9", 80); ok {
		t.Errorf("ContainerAt of an unknown IP found something")
	}
}

// probeErr names a probe error's failure.
func probeErr(err error) string {
	var pe *ProbeError
	switch {
	case err == nil:
		return "ok"
	case !errors.As(err, &pe):
		return err.Error()
	case pe.Failure == ProbeRefused:
		return "refused"
	case pe.Failure == ProbeTimeout:
		return "timeout"
	default:
		return "nocontainer"
	}
}
