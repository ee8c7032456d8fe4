package fakecri

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestVersion(t *testing.T) {
	f := newFixture(t)
	got, err := f.r.Version(f.ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fakecri", RuntimeVersion: "0.1.0", RuntimeApiVersion: "v1"}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("Version (-want +got):\n%s", diff)
	}
}

func TestStatus(t *testing.T) {
	f := newFixture(t)
	conds := func() []*runtimeapi.RuntimeCondition {
		resp, err := f.r.Status(f.ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status.Conditions
	}
	want := []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}
	if diff := cmp.Diff(want, conds(), protocmp.Transform()); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}

	f.r.SetRuntimeReady(false)
	f.r.SetNetworkReady(false)
	want = []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Reason: "FakeRuntimeNotReady", Message: "fakecri: runtime set not ready"},
		{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"},
	}
	if diff := cmp.Diff(want, conds(), protocmp.Transform()); diff != "" {
		t.Errorf("not ready (-want +got):\n%s", diff)
	}
	_, err := f.r.Version(f.ctx, "v1")
	wantCode(t, "Version while not ready", err, codes.Unavailable)

	resp, err := f.r.Status(f.ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Info["config"] == "" {
		t.Errorf("verbose Status has no config info: %v", resp.Info)
	}
}

func TestRunPodSandbox(t *testing.T) {
	f := newFixture(t)
	f.clock.Advance(time.Second)
	id := f.runPod("web")
	resp, err := f.r.PodSandboxStatus(f.ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := podConfig("web")
	want := &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{
			Id:          id,
			Metadata:    cfg.Metadata,
			State:       runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt:   ns(time.Second),
			Network:     &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.2"},
			Labels:      cfg.Labels,
			Annotations: cfg.Annotations,
		},
		Timestamp: ns(time.Second),
	}
	if diff := cmp.Diff(want, resp, protocmp.Transform()); diff != "" {
		t.Errorf("PodSandboxStatus (-want +got):\n%s", diff)
	}
	if len(id) != 64 {
		t.Errorf("sandbox ID %q: want 64 hex digits", id)
	}

	// A second pod gets the next IP; a host-network pod none.
	id2 := f.runPod("api")
	host := podConfig("host")
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	id3, err := f.r.RunPodSandbox(f.ctx, host, "runc")
	if err != nil {
		t.Fatal(err)
	}
	for id, ip := range map[string]string{id2: "10.88.0.3", id3: ""} {
		resp, err := f.r.PodSandboxStatus(f.ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Status.Network.Ip; got != ip {
			t.Errorf("sandbox %s IP %q, want %q", id, got, ip)
		}
	}
}

func TestRunPodSandboxErrors(t *testing.T) {
	f := newFixture(t)
	f.runPod("dup")
	for _, tc := range []struct {
		name    string
		cfg     *runtimeapi.PodSandboxConfig
		handler string
		code    codes.Code
		msg     string
	}{
		{"nil config", nil, "", codes.InvalidArgument, "metadata"},
		{"no name", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "x"}}, "", codes.InvalidArgument, "name"},
		{"bad handler", podConfig("h"), "kata", codes.InvalidArgument, `no runtime for "kata"`},
		{"duplicate", podConfig("dup"), "", codes.AlreadyExists, "dup_default_uid-dup_0"},
	} {
		_, err := f.r.RunPodSandbox(f.ctx, tc.cfg, tc.handler)
		wantCode(t, tc.name, err, tc.code)
		wantErrContains(t, tc.name, err, tc.msg)
	}
	f.r.SetNetworkReady(false)
	_, err := f.r.RunPodSandbox(f.ctx, podConfig("nonet"), "")
	wantErrContains(t, "network not ready", err, "cni plugin not initialized")
}

func TestStopPodSandbox(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	c1 := f.run(sb, ctrConfig("a"))
	c2 := f.create(sb, ctrConfig("b"))
	f.clock.Advance(time.Second)
	for i := range 2 { // idempotent
		if err := f.r.StopPodSandbox(f.ctx, sb); err != nil {
			t.Fatalf("StopPodSandbox #%d: %v", i, err)
		}
	}
	if diff := cmp.Diff(exitSummary{State: "CONTAINER_EXITED", ExitCode: 137, Reason: "Error", Finished: time.Second}, summarize(f.status(c1))); diff != "" {
		t.Errorf("running container after stop (-want +got):\n%s", diff)
	}
	if got := f.status(c2).State; got != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container after stop: %v, want CREATED", got)
	}
	resp, err := f.r.PodSandboxStatus(f.ctx, sb, false)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox state %v, want NOTREADY", resp.Status.State)
	}
	_, err = f.r.CreateContainer(f.ctx, sb, ctrConfig("c"), nil)
	wantCode(t, "create in stopped sandbox", err, codes.FailedPrecondition)
	wantCode(t, "start in stopped sandbox", f.r.StartContainer(f.ctx, c2), codes.FailedPrecondition)
	wantCode(t, "stop unknown sandbox", f.r.StopPodSandbox(f.ctx, "nope"), codes.NotFound)
}

func TestRemovePodSandbox(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	c1 := f.run(sb, ctrConfig("a"))
	other := f.runPod("q")
	c2 := f.run(other, ctrConfig("a"))
	if err := f.r.RemovePodSandbox(f.ctx, sb); err != nil { // READY: stopped first
		t.Fatal(err)
	}
	_, err := f.r.PodSandboxStatus(f.ctx, sb, false)
	wantCode(t, "status of removed sandbox", err, codes.NotFound)
	wantErrContains(t, "status of removed sandbox", err, "pod sandbox", "not found")
	_, err = f.r.ContainerStatus(f.ctx, c1, false)
	wantCode(t, "status of container of removed sandbox", err, codes.NotFound)
	if got := f.status(c2).State; got != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("other pod's container: %v, want RUNNING", got)
	}
	if err := f.r.RemovePodSandbox(f.ctx, sb); err != nil {
		t.Errorf("removing a removed sandbox: %v, want nil", err)
	}
	// The name is free again.
	if _, err := f.r.RunPodSandbox(f.ctx, podConfig("p"), ""); err != nil {
		t.Errorf("re-running a removed pod: %v", err)
	}
}

func TestPodSandboxStatusErrorsAndVerbose(t *testing.T) {
	f := newFixture(t)
	_, err := f.r.PodSandboxStatus(f.ctx, "missing", false)
	wantCode(t, "unknown sandbox", err, codes.NotFound)
	_, err = f.r.PodSandboxStatus(f.ctx, "", false)
	wantCode(t, "empty ID", err, codes.InvalidArgument)
	sb := f.runPod("p")
	c := f.run(sb, ctrConfig("a"))
	resp, err := f.r.PodSandboxStatus(f.ctx, sb[:12], true) // unique prefix
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status.Id != sb || resp.Info["info"] == "" {
		t.Errorf("verbose status by prefix: id %q info %v", resp.Status.Id, resp.Info)
	}
	if len(resp.ContainersStatuses) != 1 || resp.ContainersStatuses[0].Id != c {
		t.Errorf("ContainersStatuses = %v, want the one container", resp.ContainersStatuses)
	}
}

func TestListPodSandbox(t *testing.T) {
	f := newFixture(t)
	a := f.runPod("a")
	b := f.runPod("b")
	c := f.runPod("c")
	if err := f.r.StopPodSandbox(f.ctx, b); err != nil {
		t.Fatal(err)
	}
	ids := func(filter *runtimeapi.PodSandboxFilter) []string {
		items, err := f.r.ListPodSandbox(f.ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Id)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"all", nil, []string{a, b, c}},
		{"by id", &runtimeapi.PodSandboxFilter{Id: b}, []string{b}},
		{"by prefix", &runtimeapi.PodSandboxFilter{Id: c[:8]}, []string{c}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "zzz"}, nil},
		{"ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}, []string{a, c}},
		{"notready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}, []string{b}},
		{"labels", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "c"}}, []string{c}},
		{"labels no match", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "c", "x": "y"}}, nil},
	} {
		if diff := cmp.Diff(tc.want, ids(tc.filter)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	items, err := f.r.ListPodSandbox(f.ctx, &runtimeapi.PodSandboxFilter{Id: a})
	if err != nil {
		t.Fatal(err)
	}
	cfg := podConfig("a")
	want := []*runtimeapi.PodSandbox{{
		Id: a, Metadata: cfg.Metadata, State: runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: ns(0), Labels: cfg.Labels, Annotations: cfg.Annotations,
	}}
	if diff := cmp.Diff(want, items, protocmp.Transform()); diff != "" {
		t.Errorf("ListPodSandbox item (-want +got):\n%s", diff)
	}
}
