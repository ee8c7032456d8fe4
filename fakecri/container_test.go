package fakecri

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCreateContainerStatus(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	f.clock.Advance(time.Second)
	cfg := withLimit(ctrConfig("app"), 64<<20)
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp/data"}}
	id := f.create(sb, cfg)
	resp, err := f.r.ContainerStatus(f.ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	img := "docker.io/library/busybox:latest"
	imgID := digestOf("config", img)
	want := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id:          id,
		Metadata:    &runtimeapi.ContainerMetadata{Name: "app"},
		State:       runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt:   ns(time.Second),
		Image:       &runtimeapi.ImageSpec{Image: img},
		ImageRef:    "docker.io/library/busybox@" + digestOf("manifest", img),
		ImageId:     imgID,
		Labels:      cfg.Labels,
		Annotations: cfg.Annotations,
		Mounts:      cfg.Mounts,
		LogPath:     "/var/log/pods/default_p/app/0.log",
		Resources:   &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20}},
	}}
	if diff := cmp.Diff(want, resp, protocmp.Transform()); diff != "" {
		t.Errorf("ContainerStatus after create (-want +got):\n%s", diff)
	}

	f.clock.Advance(time.Second)
	if err := f.r.StartContainer(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	want.Status.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	want.Status.StartedAt = ns(2 * time.Second)
	if diff := cmp.Diff(want.Status, f.status(id), protocmp.Transform()); diff != "" {
		t.Errorf("ContainerStatus after start (-want +got):\n%s", diff)
	}
	if _, ok := f.files.get("/var/log/pods/default_p/app/0.log"); !ok {
		t.Errorf("log file not created at start")
	}

	verbose, err := f.r.ContainerStatus(f.ctx, id[:10], true)
	if err != nil {
		t.Fatal(err)
	}
	if verbose.Info["info"] == "" {
		t.Errorf("verbose ContainerStatus has no info")
	}
	_, err = f.r.ContainerStatus(f.ctx, "nope", false)
	wantCode(t, "status of unknown container", err, codes.NotFound)
	wantErrContains(t, "status of unknown container", err, `container "nope" not found`)
}

func TestCreateContainerErrors(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	f.create(sb, ctrConfig("dup"))
	noImage := ctrConfig("x")
	noImage.Image = nil
	missing := ctrConfig("y")
	missing.Image = &runtimeapi.ImageSpec{Image: "example.com/nothere:1"}
	for _, tc := range []struct {
		name string
		sb   string
		cfg  *runtimeapi.ContainerConfig
		code codes.Code
		msg  []string
	}{
		{"nil config", sb, nil, codes.InvalidArgument, []string{"metadata"}},
		{"no image", sb, noImage, codes.InvalidArgument, []string{`container "x"`, "image"}},
		{"image not present", sb, missing, codes.NotFound, []string{`image "example.com/nothere:1" not found`}},
		{"unknown sandbox", "nosuch", ctrConfig("z"), codes.NotFound, []string{`pod sandbox "nosuch" not found`}},
		{"duplicate name", sb, ctrConfig("dup"), codes.AlreadyExists, []string{"dup_p_default_uid-p_0"}},
		{"bad duration", sb, ctrConfig("b", "FAKECRI_EXIT_AFTER=soon"), codes.InvalidArgument, []string{"FAKECRI_EXIT_AFTER", `"soon"`}},
		{"bad code", sb, ctrConfig("b", "FAKECRI_EXIT_CODE=300"), codes.InvalidArgument, []string{"FAKECRI_EXIT_CODE", `"300"`}},
		{"unknown var", sb, ctrConfig("b", "FAKECRI_EXIT=1"), codes.InvalidArgument, []string{"FAKECRI_EXIT", "unknown"}},
		{"bad memory", sb, ctrConfig("b", "FAKECRI_MEMORY=lots"), codes.InvalidArgument, []string{"FAKECRI_MEMORY", `"lots"`}},
		{"bad http", sb, ctrConfig("b", "FAKECRI_HTTP=8080=ok"), codes.InvalidArgument, []string{"FAKECRI_HTTP", `"8080=ok"`}},
	} {
		_, err := f.r.CreateContainer(f.ctx, tc.sb, tc.cfg, nil)
		wantCode(t, tc.name, err, tc.code)
		wantErrContains(t, tc.name, err, tc.msg...)
	}
}

func TestStartContainer(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.create(sb, ctrConfig("slow", "FAKECRI_STARTUP_DELAY=1500ms"))
	if err := f.r.StartContainer(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, want := f.clock.Elapsed(), 1500*time.Millisecond; got != want {
		t.Errorf("StartContainer took %v of virtual time, want %v", got, want)
	}
	st := f.status(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt != ns(1500*time.Millisecond) {
		t.Errorf("after slow start: state %v startedAt %d, want RUNNING at %d", st.State, st.StartedAt, ns(1500*time.Millisecond))
	}
	err := f.r.StartContainer(f.ctx, id)
	wantCode(t, "start a running container", err, codes.FailedPrecondition)
	wantErrContains(t, "start a running container", err, "CONTAINER_RUNNING")
	wantCode(t, "start unknown", f.r.StartContainer(f.ctx, "nope"), codes.NotFound)

	// A log file that cannot be created: StartError, like containerd.
	bad := f.create(sb, ctrConfig("badlog"))
	f.files.fail["/var/log/pods/default_p/badlog/0.log"] = errors.New("no such file or directory")
	err = f.r.StartContainer(f.ctx, bad)
	wantErrContains(t, "start with bad log path", err, "failed to create and open log file")
	if diff := cmp.Diff(exitSummary{State: "CONTAINER_EXITED", ExitCode: 128, Reason: "StartError", Finished: 1500 * time.Millisecond}, summarize(f.status(bad))); diff != "" {
		t.Errorf("start error (-want +got):\n%s", diff)
	}
}

func TestContainerExits(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	ok := f.run(sb, ctrConfig("ok", "FAKECRI_EXIT_AFTER=2s"))
	fail := f.run(sb, ctrConfig("fail", "FAKECRI_EXIT_AFTER=3s", "FAKECRI_EXIT_CODE=2"))
	now := f.run(sb, ctrConfig("now", "FAKECRI_EXIT_CODE=1"))
	sh := ctrConfig("sh")
	sh.Command, sh.Args = []string{"/bin/sh"}, []string{"-c", "sleep 4; exit 3"}
	shell := f.run(sb, sh)
	forever := f.run(sb, ctrConfig("forever"))
	f.clock.Advance(10 * time.Second)
	for _, tc := range []struct {
		id   string
		want exitSummary
	}{
		{ok, exitSummary{"CONTAINER_EXITED", 0, "Completed", 2 * time.Second}},
		{fail, exitSummary{"CONTAINER_EXITED", 2, "Error", 3 * time.Second}},
		{now, exitSummary{"CONTAINER_EXITED", 1, "Error", 0}},
		{shell, exitSummary{"CONTAINER_EXITED", 3, "Error", 4 * time.Second}},
		{forever, exitSummary{State: "CONTAINER_RUNNING"}},
	} {
		if diff := cmp.Diff(tc.want, summarize(f.status(tc.id))); diff != "" {
			t.Errorf("container %s (-want +got):\n%s", tc.id[:8], diff)
		}
	}
}

func TestOOMKill(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	// 10Mi + 1Mi/s against a 20Mi limit: exceeds it just after 10s.
	id := f.run(sb, withLimit(ctrConfig("leak", "FAKECRI_MEMORY=10Mi", "FAKECRI_MEMORY_GROWTH=1Mi/s"), 20<<20))
	f.clock.Advance(10 * time.Second)
	if got := f.status(id).State; got != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("at 10s (exactly at the limit): %v, want RUNNING", got)
	}
	stats, err := f.r.ContainerStats(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.Memory.WorkingSetBytes.Value; got != 20<<20 {
		t.Errorf("working set at 10s = %d, want %d", got, 20<<20)
	}
	f.clock.Advance(time.Second)
	// First ns with usage > limit: ceil((limit-base+1)*1s / 1Mi) = 10s + 954ns.
	want := exitSummary{"CONTAINER_EXITED", 137, "OOMKilled", 10*time.Second + 954*time.Nanosecond}
	if diff := cmp.Diff(want, summarize(f.status(id))); diff != "" {
		t.Errorf("OOM (-want +got):\n%s", diff)
	}

	// Starting above the limit: killed at start. Lowering the limit below
	// usage: killed at once.
	big := f.run(sb, withLimit(ctrConfig("big", "FAKECRI_MEMORY=30Mi"), 20<<20))
	if diff := cmp.Diff(exitSummary{"CONTAINER_EXITED", 137, "OOMKilled", 11 * time.Second}, summarize(f.status(big))); diff != "" {
		t.Errorf("start above limit (-want +got):\n%s", diff)
	}
	shrink := f.run(sb, ctrConfig("shrink", "FAKECRI_MEMORY=30Mi"))
	f.clock.Advance(time.Second)
	if err := f.r.UpdateContainerResources(f.ctx, shrink, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 16 << 20}}); err != nil {
		t.Fatal(err)
	}
	st := f.status(shrink)
	if diff := cmp.Diff(exitSummary{"CONTAINER_EXITED", 137, "OOMKilled", 12 * time.Second}, summarize(st)); diff != "" {
		t.Errorf("limit lowered below usage (-want +got):\n%s", diff)
	}
	if got := st.Resources.GetLinux().GetMemoryLimitInBytes(); got != 16<<20 {
		t.Errorf("status limit %d, want %d", got, 16<<20)
	}
	wantCode(t, "update exited container", f.r.UpdateContainerResources(f.ctx, shrink, &runtimeapi.ContainerResources{}), codes.FailedPrecondition)
	wantCode(t, "update unknown container", f.r.UpdateContainerResources(f.ctx, "nope", &runtimeapi.ContainerResources{}), codes.NotFound)
}

func TestStopContainer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		cmd     []string
		timeout int64
		want    exitSummary // Finished is also how long the call took
	}{
		{"default SIGTERM", nil, nil, 30, exitSummary{"CONTAINER_EXITED", 143, "Error", 0}},
		{"timeout 0 kills", nil, nil, 0, exitSummary{"CONTAINER_EXITED", 137, "Error", 0}},
		{"graceful stop delay", []string{"FAKECRI_STOP_DELAY=3s"}, nil, 30, exitSummary{"CONTAINER_EXITED", 0, "Completed", 3 * time.Second}},
		{"stop delay longer than timeout", []string{"FAKECRI_STOP_DELAY=1m"}, nil, 10, exitSummary{"CONTAINER_EXITED", 137, "Error", 10 * time.Second}},
		{"ignores SIGTERM", []string{"FAKECRI_IGNORE_SIGTERM=true"}, nil, 30, exitSummary{"CONTAINER_EXITED", 137, "Error", 30 * time.Second}},
		{"sleep as PID 1 ignores SIGTERM", nil, []string{"sleep", "3600"}, 5, exitSummary{"CONTAINER_EXITED", 137, "Error", 5 * time.Second}},
		{"exits by script before the kill", []string{"FAKECRI_IGNORE_SIGTERM=true", "FAKECRI_EXIT_AFTER=4s", "FAKECRI_EXIT_CODE=7"}, nil, 30, exitSummary{"CONTAINER_EXITED", 7, "Error", 4 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sb := f.runPod("p")
			cfg := ctrConfig("c", tc.env...)
			cfg.Command = tc.cmd
			id := f.run(sb, cfg)
			if err := f.r.StopContainer(f.ctx, id, tc.timeout); err != nil {
				t.Fatal(err)
			}
			if got := f.clock.Elapsed(); got != tc.want.Finished {
				t.Errorf("StopContainer returned after %v, want %v", got, tc.want.Finished)
			}
			if diff := cmp.Diff(tc.want, summarize(f.status(id))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if err := f.r.StopContainer(f.ctx, id, 30); err != nil {
				t.Errorf("stopping an exited container: %v, want nil", err)
			}
		})
	}
	f := newFixture(t)
	wantCode(t, "stop unknown", f.r.StopContainer(f.ctx, "nope", 1), codes.NotFound)
	created := f.create(f.runPod("p"), ctrConfig("c"))
	if err := f.r.StopContainer(f.ctx, created, 1); err != nil {
		t.Errorf("stopping a created container: %v, want nil", err)
	}
	if got := f.status(created).State; got != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container after stop: %v, want CREATED (like containerd)", got)
	}
}

func TestRemoveContainer(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c"))
	if _, ok := f.r.TrueStopAskedAt(id); ok {
		t.Errorf("TrueStopAskedAt answers for a container never stopped")
	}
	if err := f.r.StopContainer(f.ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.r.RemoveContainer(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err := f.r.ContainerStatus(f.ctx, id, false)
	wantCode(t, "status after remove", err, codes.NotFound)
	if _, ok := f.r.TrueStopAskedAt(id); !ok {
		t.Errorf("TrueStopAskedAt forgot a container stopped and then removed")
	}
	if err := f.r.RemoveContainer(f.ctx, id); err != nil {
		t.Errorf("removing twice: %v, want nil", err)
	}
	// The name can be reused.
	f.create(sb, ctrConfig("c"))
}

func TestListContainers(t *testing.T) {
	f := newFixture(t)
	p := f.runPod("p")
	q := f.runPod("q")
	a := f.run(p, ctrConfig("a"))
	b := f.create(p, ctrConfig("b"))
	c := f.run(q, ctrConfig("c", "FAKECRI_EXIT_AFTER=1s"))
	f.clock.Advance(2 * time.Second)
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{a, b, c}},
		{"by id", &runtimeapi.ContainerFilter{Id: b}, []string{b}},
		{"by prefix", &runtimeapi.ContainerFilter{Id: c[:6]}, []string{c}},
		{"unknown id", &runtimeapi.ContainerFilter{Id: "zz"}, nil},
		{"by sandbox", &runtimeapi.ContainerFilter{PodSandboxId: p}, []string{a, b}},
		{"id in other sandbox", &runtimeapi.ContainerFilter{Id: c, PodSandboxId: p}, nil},
		{"unknown sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "zz"}, nil},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{a}},
		{"created", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, []string{b}},
		{"exited", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{c}},
		{"labels", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "b"}}, []string{b}},
	} {
		items, err := f.r.ListContainers(f.ctx, tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Id)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	items, err := f.r.ListContainers(f.ctx, &runtimeapi.ContainerFilter{Id: a})
	if err != nil {
		t.Fatal(err)
	}
	cfg := ctrConfig("a")
	imgID := digestOf("config", "docker.io/library/busybox:latest")
	want := []*runtimeapi.Container{{
		Id: a, PodSandboxId: p, Metadata: cfg.Metadata, Image: cfg.Image, ImageRef: imgID, ImageId: imgID,
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: ns(0), Labels: cfg.Labels, Annotations: cfg.Annotations,
	}}
	if diff := cmp.Diff(want, items, protocmp.Transform()); diff != "" {
		t.Errorf("ListContainers item (-want +got):\n%s", diff)
	}
}

func TestReopenContainerLog(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c", "FAKECRI_LOG=hi"))
	if err := f.r.ReopenContainerLog(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	created := f.create(sb, ctrConfig("d"))
	wantCode(t, "reopen log of created container", f.r.ReopenContainerLog(f.ctx, created), codes.FailedPrecondition)
	wantCode(t, "reopen log of unknown container", f.r.ReopenContainerLog(f.ctx, "nope"), codes.NotFound)
}

func TestLogs(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c", "FAKECRI_LOG=tick", "FAKECRI_LOG_EVERY=1s", "FAKECRI_EXIT_AFTER=2500ms"))
	f.clock.Advance(time.Hour)
	f.r.Sync()
	got, _ := f.files.get("/var/log/pods/default_p/c/0.log")
	want := "2026-01-01T00:00:00Z stdout F tick\n" +
		"2026-01-01T00:00:01Z stdout F tick\n" +
		"2026-01-01T00:00:02Z stdout F tick\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log file (-want +got):\n%s", diff)
	}
	if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("state %v, want EXITED", st.State)
	}
	u := f.r.NodeUsage()
	if want := f.r.node.NodefsBase + uint64(len(want)); u.Nodefs.Used != want {
		t.Errorf("nodefs used %d, want base + log bytes = %d", u.Nodefs.Used, want)
	}
}

func TestTerminationMessage(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	cfg := ctrConfig("app", "FAKECRI_TERMINATION_MESSAGE=all done", "FAKECRI_EXIT_AFTER=1s")
	cfg.Annotations = map[string]string{annotationTerminationMessagePath: "/dev/termination-log"}
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/host/data"}, {ContainerPath: "/dev/termination-log", HostPath: "/host/term/app"}}
	f.run(sb, cfg)
	if got, _ := f.files.get("/host/term/app"); got != "all done" {
		t.Errorf("termination log = %q, want %q", got, "all done")
	}
	if _, ok := f.files.get("/host/data"); ok {
		t.Error("the message went to another mount")
	}

	// Not mounted: nothing is written anywhere.
	other := ctrConfig("other", "FAKECRI_TERMINATION_MESSAGE=lost")
	other.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/host/other"}}
	f.run(sb, other)
	if _, ok := f.files.get("/host/other"); ok {
		t.Error("a container without the mount wrote its message")
	}
}

// UpdateContainerResources changes only the fields it sets, as containerd
// does: the CPU manager's cpuset-only update keeps the memory limit.
func TestUpdateContainerResourcesMerges(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, withLimit(ctrConfig("c"), 64<<20))
	if err := f.r.UpdateContainerResources(f.ctx, id, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: "1-2"}}); err != nil {
		t.Fatal(err)
	}
	got := f.status(id).Resources.GetLinux()
	if got.GetMemoryLimitInBytes() != 64<<20 || got.GetCpusetCpus() != "1-2" {
		t.Errorf("after a cpuset update: memory limit %d, cpuset %q; want %d, 1-2", got.GetMemoryLimitInBytes(), got.GetCpusetCpus(), 64<<20)
	}
	if truth, _ := f.r.TrueResources(id); truth.GetCpusetCpus() != "1-2" {
		t.Errorf("TrueResources cpuset %q", truth.GetCpusetCpus())
	}
}

// TestVerboseStatusCarriesConfig: as containerd's, verbose ContainerStatus
// and PodSandboxStatus info hold the configs the objects were created
// from, so a harness can see the env, mounts and DNS an agent asked for.
func TestVerboseStatusCarriesConfig(t *testing.T) {
	f := newFixture(t)
	pod := podConfig("p")
	pod.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local"}, Options: []string{"ndots:5"}}
	sb, err := f.r.RunPodSandbox(f.ctx, pod, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ctrConfig("app", "A=1", "B=two")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/tmp/hosts", Readonly: true}}
	id := f.create(sb, cfg)

	cs, err := f.r.ContainerStatus(f.ctx, id, true)
	if err != nil {
		t.Fatal(err)
	}
	var ci struct {
		Config *runtimeapi.ContainerConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(cs.Info["info"]), &ci); err != nil {
		t.Fatalf("container info %q: %v", cs.Info["info"], err)
	}
	if diff := cmp.Diff(cfg, ci.Config, protocmp.Transform()); diff != "" {
		t.Errorf("verbose container info config (-created +reported):\n%s", diff)
	}

	ss, err := f.r.PodSandboxStatus(f.ctx, sb, true)
	if err != nil {
		t.Fatal(err)
	}
	var si struct {
		Config *runtimeapi.PodSandboxConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(ss.Info["info"]), &si); err != nil {
		t.Fatalf("sandbox info %q: %v", ss.Info["info"], err)
	}
	if diff := cmp.Diff(pod, si.Config, protocmp.Transform()); diff != "" {
		t.Errorf("verbose sandbox info config (-created +reported):\n%s", diff)
	}
}
