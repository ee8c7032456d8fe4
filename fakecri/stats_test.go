package fakecri

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerStats(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, withLimit(ctrConfig("c", "FAKECRI_MEMORY=10Mi", "FAKECRI_MEMORY_GROWTH=1Mi/s", "FAKECRI_CPU=250m", "FAKECRI_DISK=5Mi"), 100<<20))
	created := f.create(sb, ctrConfig("idle", "FAKECRI_DISK=1Mi"))
	f.clock.Advance(4 * time.Second)
	got, err := f.r.ContainerStats(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	at := ns(4 * time.Second)
	cfg := ctrConfig("c")
	ws := uint64(14 << 20)
	want := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: cfg.Metadata, Labels: cfg.Labels, Annotations: cfg.Annotations},
		Cpu: &runtimeapi.CpuUsage{
			Timestamp:            at,
			UsageCoreNanoSeconds: u64(uint64(time.Second)), // 250m for 4s
			UsageNanoCores:       u64(250_000_000),
		},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp: at, WorkingSetBytes: u64(ws), UsageBytes: u64(ws), RssBytes: u64(ws),
			AvailableBytes: u64(100<<20 - ws), PageFaults: u64(0), MajorPageFaults: u64(0),
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp: at, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: snapshotterMount},
			UsedBytes: u64(5 << 20), InodesUsed: u64(1),
		},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("ContainerStats (-want +got):\n%s", diff)
	}
	idle, err := f.r.ContainerStats(f.ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	if idle.Cpu != nil || idle.Memory != nil || idle.WritableLayer.UsedBytes.Value != 1<<20 {
		t.Errorf("stats of a created container: cpu %v memory %v layer %v; want no cpu/memory, 1Mi layer", idle.Cpu, idle.Memory, idle.WritableLayer)
	}
	_, err = f.r.ContainerStats(f.ctx, "nope")
	wantCode(t, "stats of unknown container", err, codes.NotFound)

	list, err := f.r.ListContainerStats(f.ctx, &runtimeapi.ContainerStatsFilter{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Attributes.Id != id || list[1].Attributes.Id != created {
		t.Errorf("ListContainerStats by sandbox: %d items, want [c, idle]", len(list))
	}
	list, err = f.r.ListContainerStats(f.ctx, &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "idle"}})
	if err != nil || len(list) != 1 || list[0].Attributes.Id != created {
		t.Errorf("ListContainerStats by label: %v %v", list, err)
	}

	// Sandbox stats are the sums; the node's usage agrees.
	ps, err := f.r.PodSandboxStats(f.ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Linux.Memory.WorkingSetBytes.Value != ws || ps.Linux.Cpu.UsageNanoCores.Value != 250_000_000 ||
		ps.Linux.Process.ProcessCount.Value != 1 || len(ps.Linux.Containers) != 2 {
		t.Errorf("PodSandboxStats: memory %v cpu %v processes %v containers %d", ps.Linux.Memory.WorkingSetBytes, ps.Linux.Cpu.UsageNanoCores, ps.Linux.Process.ProcessCount, len(ps.Linux.Containers))
	}
	u := f.r.NodeUsage()
	m := DefaultNodeModel()
	if want := m.MemoryBase + ws; u.MemoryWorkingSet != want {
		t.Errorf("node working set %d, want %d", u.MemoryWorkingSet, want)
	}
	if want := m.CPUBaseMilli*1_000_000 + 250_000_000; u.CPUUsageNanoCores != want {
		t.Errorf("node CPU %d, want %d", u.CPUUsageNanoCores, want)
	}
	if u.PIDsUsed != m.PIDBase+1 || u.RunningContainers != 1 || u.Containers != 2 || u.Sandboxes != 1 {
		t.Errorf("node counts: pids %d running %d containers %d sandboxes %d", u.PIDsUsed, u.RunningContainers, u.Containers, u.Sandboxes)
	}
	f.r.SetNodeMemoryUsage(1 << 30)
	if got := f.r.NodeUsage().MemoryWorkingSet; got != 1<<30+ws {
		t.Errorf("after SetNodeMemoryUsage: %d, want %d", got, 1<<30+ws)
	}

	other := f.runPod("q")
	if err := f.r.StopPodSandbox(f.ctx, other); err != nil {
		t.Fatal(err)
	}
	_, err = f.r.PodSandboxStats(f.ctx, other)
	wantCode(t, "stats of a stopped sandbox", err, codes.FailedPrecondition)
	_, err = f.r.PodSandboxStats(f.ctx, "nope")
	wantCode(t, "stats of unknown sandbox", err, codes.NotFound)
	all, err := f.r.ListPodSandboxStats(f.ctx, nil)
	if err != nil || len(all) != 1 || all[0].Attributes.Id != sb {
		t.Errorf("ListPodSandboxStats: %v %v, want only the ready sandbox", all, err)
	}
	none, err := f.r.ListPodSandboxStats(f.ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"app": "zzz"}})
	if err != nil || len(none) != 0 {
		t.Errorf("ListPodSandboxStats with unmatched labels: %v %v", none, err)
	}
}

func TestImages(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.PullLatency = 2 * time.Second
		c.Registry = []Image{{Ref: "example.com/app:v1", Size: 1000, Inodes: 10}}
	})
	list, err := f.r.ListImages(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, img := range list {
		tags = append(tags, img.RepoTags...)
	}
	if diff := cmp.Diff([]string{"registry.k8s.io/pause:3.10", "docker.io/library/busybox:latest", "docker.io/library/nginx:latest"}, tags); diff != "" {
		t.Errorf("preloaded images (-want +got):\n%s", diff)
	}

	st, err := f.r.ImageStatus(f.ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false)
	if err != nil {
		t.Fatal(err)
	}
	ref := "docker.io/library/busybox:latest"
	want := &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{
		Id:          digestOf("config", ref),
		RepoTags:    []string{ref},
		RepoDigests: []string{"docker.io/library/busybox@" + digestOf("manifest", ref)},
		Size:        2_166_802,
		Spec:        &runtimeapi.ImageSpec{Image: digestOf("config", ref)},
	}}
	if diff := cmp.Diff(want, st, protocmp.Transform()); diff != "" {
		t.Errorf("ImageStatus (-want +got):\n%s", diff)
	}
	for _, name := range []string{want.Image.Id, want.Image.RepoDigests[0], "docker.io/library/busybox"} {
		if st, err := f.r.ImageStatus(f.ctx, &runtimeapi.ImageSpec{Image: name}, false); err != nil || st.Image.GetId() != want.Image.Id {
			t.Errorf("ImageStatus(%s) = %v, %v", name, st, err)
		}
	}
	absent, err := f.r.ImageStatus(f.ctx, &runtimeapi.ImageSpec{Image: "example.com/app:v1"}, false)
	if err != nil || absent.Image != nil {
		t.Errorf("ImageStatus of an absent image: %v %v, want no image and no error", absent, err)
	}

	before := f.r.NodeUsage().Imagefs.Used
	id, err := f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "example.com/app:v1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.clock.Elapsed(); got != 2*time.Second {
		t.Errorf("pull took %v, want 2s", got)
	}
	if id != digestOf("config", "example.com/app:v1") {
		t.Errorf("PullImage returned %q", id)
	}
	if got := f.r.NodeUsage().Imagefs.Used; got != before+1000 {
		t.Errorf("imagefs after pull %d, want %d", got, before+1000)
	}
	fs, err := f.r.ImageFsInfo(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.ImageFilesystems[0].UsedBytes.Value; got != before+1000 {
		t.Errorf("ImageFsInfo used %d, want %d (consistent with NodeUsage)", got, before+1000)
	}
	if _, err := f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "other.io/x"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.r.ImageStatus(f.ctx, &runtimeapi.ImageSpec{Image: "other.io/x:latest"}, false); st.Image.GetSize() != DefaultPullSize {
		t.Errorf("unregistered pull size %d, want %d", st.Image.GetSize(), DefaultPullSize)
	}

	if err := f.r.FailPull("example.com/broken:1", "", 1); err != nil {
		t.Fatal(err)
	}
	_, err = f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "example.com/broken:1"}, nil, nil)
	wantCode(t, "failing pull", err, codes.NotFound)
	wantErrContains(t, "failing pull", err, `failed to pull and unpack image "example.com/broken:1"`, "not found")
	if _, err := f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "example.com/broken:1"}, nil, nil); err != nil {
		t.Errorf("second pull (fault count 1): %v", err)
	}
	if err := f.r.FailPull("example.com/denied:1", "pull access denied", 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "example.com/denied:1"}, nil, nil)
	wantCode(t, "denied pull", err, codes.Unknown)
	wantErrContains(t, "denied pull", err, "pull access denied")
	_, err = f.r.PullImage(f.ctx, &runtimeapi.ImageSpec{Image: "Bad/Ref"}, nil, nil)
	wantCode(t, "bad reference", err, codes.InvalidArgument)

	// Removing an image a container uses is allowed, like containerd.
	sb := f.runPod("p")
	c := f.run(sb, ctrConfig("c"))
	if err := f.r.RemoveImage(f.ctx, &runtimeapi.ImageSpec{Image: "busybox"}); err != nil {
		t.Fatalf("RemoveImage of a used image: %v", err)
	}
	if st, _ := f.r.ImageStatus(f.ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false); st.Image != nil {
		t.Errorf("image still present after RemoveImage")
	}
	if st := f.status(c); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Image.Image != ref {
		t.Errorf("container after its image was removed: %v %v", st.State, st.Image)
	}
	if err := f.r.RemoveImage(f.ctx, &runtimeapi.ImageSpec{Image: "busybox"}); err != nil {
		t.Errorf("removing an absent image: %v, want nil", err)
	}
	filtered, err := f.r.ListImages(f.ctx, &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "nginx"}})
	if err != nil || len(filtered) != 1 || filtered[0].RepoTags[0] != "docker.io/library/nginx:latest" {
		t.Errorf("ListImages filtered by nginx: %v %v", filtered, err)
	}
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                          "docker.io/library/busybox:latest",
		"busybox:1.36":                     "docker.io/library/busybox:1.36",
		"library/busybox":                  "docker.io/library/busybox:latest",
		"user/app:v2":                      "docker.io/user/app:v2",
		"registry.k8s.io/pause:3.10":       "registry.k8s.io/pause:3.10",
		"localhost:5000/a/b":               "localhost:5000/a/b:latest",
		"quay.io/x/y@sha256:" + hex64('a'): "quay.io/x/y@sha256:" + hex64('a'),
	} {
		got, err := normalizeRef(in)
		if err != nil || got != want {
			t.Errorf("normalizeRef(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "UPPER", "a//b", "x:", "x@sha256:12", "-x", "a/b:c:d/e"} {
		if got, err := normalizeRef(bad); err == nil {
			t.Errorf("normalizeRef(%q) = %q, want an error", bad, got)
		}
	}
}

// hex64 is 64 copies of c.
func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// Like containerd 1.6 on some hosts, NoSandboxStats answers the sandbox
// stats calls Unimplemented, and NoNanoCores leaves the CPU rate out of
// container stats while the cumulative counter stays.
func TestStatsLikeContainerd16(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.NoSandboxStats, c.NoNanoCores = true, true })
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c", "FAKECRI_CPU=500m"))
	f.clock.Advance(2 * time.Second)
	_, err := f.r.ListPodSandboxStats(f.ctx, &runtimeapi.PodSandboxStatsFilter{})
	wantCode(t, "ListPodSandboxStats", err, codes.Unimplemented)
	_, err = f.r.PodSandboxStats(f.ctx, sb)
	wantCode(t, "PodSandboxStats", err, codes.Unimplemented)
	one, err := f.r.ContainerStats(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.r.ListContainerStats(f.ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.CpuUsage{Timestamp: ns(2 * time.Second), UsageCoreNanoSeconds: u64(uint64(time.Second))}
	for name, got := range map[string]*runtimeapi.CpuUsage{"ContainerStats": one.Cpu, "ListContainerStats": list[0].Cpu} {
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("%s cpu (-want +got):\n%s", name, diff)
		}
	}
}

// TestImagefsMountpoint: ImageFsInfo and container stats name the
// configured imagefs mountpoint (a real kubelet asks cAdvisor about it),
// containerd's snapshotter directory by default.
func TestImagefsMountpoint(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"", snapshotterMount},
		{"/tmp/diff/imagefs", "/tmp/diff/imagefs"},
	} {
		f := newFixture(t, func(c *Config) { c.ImagefsMountpoint = tc.set })
		fs, err := f.r.ImageFsInfo(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := fs.ImageFilesystems[0].GetFsId().GetMountpoint(); got != tc.want {
			t.Errorf("ImagefsMountpoint %q: ImageFsInfo mountpoint %q, want %q", tc.set, got, tc.want)
		}
		id := f.run(f.runPod("p"), ctrConfig("app"))
		st, err := f.r.ContainerStats(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.GetWritableLayer().GetFsId().GetMountpoint(); got != tc.want {
			t.Errorf("ImagefsMountpoint %q: container stats mountpoint %q, want %q", tc.set, got, tc.want)
		}
	}
}
