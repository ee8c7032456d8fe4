package imagegc_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// fsStats reports a fixed image filesystem usage.
type fsStats struct{ capacity, available int64 }

func (f *fsStats) ImageFsStats(context.Context) (int64, int64, error) {
	return f.capacity, f.available, nil
}

// events records events as "reason: message".
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) Event(_ *corev1.ObjectReference, _, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, reason+": "+message)
}

type world struct {
	k     *kernel.Kernel
	rt    *fakecri.Runtime
	files *memfs.FS
	fs    *fsStats
	ev    *events
}

func newWorld(t *testing.T) *world {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	files := memfs.New()
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: files,
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) },
		Images: []fakecri.Image{
			{Ref: "registry.k8s.io/pause:3.10", Size: 320_368},
			{Ref: "busybox:latest", Size: 2 << 20},
			{Ref: "nginx:latest", Size: 72 << 20},
			{Ref: "example.com/old1:1", Size: 4 << 30},
			{Ref: "example.com/old2:1", Size: 3 << 30},
			{Ref: "example.com/pinned:1", Size: 9 << 30, Pinned: true},
		}})
	return &world{k: k, rt: rt, files: files, fs: &fsStats{capacity: 100 << 30, available: 50 << 30}, ev: &events{}}
}

func (w *world) manager() *imagegc.Manager {
	d := w.k.Deps()
	return imagegc.New(d.Core, imagegc.Ports{Images: w.rt, Containers: w.rt, Fs: w.fs, Files: w.files, Events: w.ev},
		imagegc.Config{Policy: imagegc.DefaultPolicy(), StateDir: "/var/lib/lockstep", NodeName: "n1", SandboxImages: []string{"registry.k8s.io/pause:3.10"}})
}

// do runs fn as a task and the world until it is done.
func (w *world) do(t *testing.T, fn func(ctx context.Context)) {
	t.Helper()
	done := false
	w.k.Go("test step", func() { fn(context.Background()); done = true })
	if err := w.k.RunUntil(func() bool { return done }, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func (w *world) tags(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, img := range w.rt.TrueImages() {
		out = append(out, img.GetRepoTags()...)
	}
	slices.Sort(out)
	return out
}

// Above the high threshold the collector removes unused images least
// recently used first, down to the low threshold, keeping images in use,
// pinned ones, the sandbox image and images younger than the minimum
// age; the last-used times survive a new manager (an agent restart).
func TestGarbageCollectLeastRecentlyUsedFirst(t *testing.T) {
	w := newWorld(t)
	m := w.manager()
	began := w.k.Now()
	var sb, old2Ctr string
	w.do(t, func(ctx context.Context) {
		var err error
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u1"}}
		if sb, err = w.rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
			t.Fatal(err)
		}
		for _, img := range []string{"busybox:latest", "example.com/old2:1"} {
			id, err := w.rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: strings.Split(img, ":")[0][:3]},
				Image: &runtimeapi.ImageSpec{Image: img}}, sbCfg)
			if err != nil {
				t.Fatal(err)
			}
			old2Ctr = id
		}
		if err := m.GarbageCollect(ctx, began); err != nil {
			t.Fatal(err)
		}
	})
	if len(w.rt.TrueImages()) != 6 {
		t.Fatalf("below the high threshold images were removed: %v", w.tags(t))
	}
	// old2's container goes; a new image arrives after a minute.
	if err := w.k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	w.do(t, func(ctx context.Context) {
		if err := w.rt.RemoveContainer(ctx, old2Ctr); err != nil {
			t.Fatal(err)
		}
		if _, err := w.rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "example.com/young:1"}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := m.GarbageCollect(ctx, began); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.k.RunFor(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	// A restarted agent: a new manager over the same files.
	m2 := w.manager()
	w.fs.available = 20<<30 - 4<<30 - 50<<20 // 85% used: 4Gi+50Mi to free for 80%
	w.do(t, func(ctx context.Context) {
		if err := m2.GarbageCollect(ctx, began); err != nil {
			t.Fatal(err)
		}
	})
	want := []string{"docker.io/library/busybox:latest", "example.com/old2:1", "example.com/pinned:1", "example.com/young:1", "registry.k8s.io/pause:3.10"}
	if d := cmp.Diff(want, w.tags(t)); d != "" {
		t.Errorf("images left (-want +got):\n%s\n(never-used nginx and old1 free 4Gi+72Mi first; old2, used a minute in, stays)", d)
	}
	if r, ok := m2.Records()[imageID(w, "example.com/old2:1")]; !ok || r.LastUsed.IsZero() {
		t.Errorf("old2's last use was not kept across managers: %+v", r)
	}
	if len(w.ev.got) != 0 {
		t.Errorf("events %v", w.ev.got)
	}

	// Now nothing removable frees enough: FreeDiskSpaceFailed.
	w.fs.available = 1 << 30
	w.do(t, func(ctx context.Context) {
		if err := m2.GarbageCollect(ctx, began); err == nil {
			t.Error("no error when the low threshold cannot be reached")
		}
	})
	if len(w.ev.got) != 1 || !strings.HasPrefix(w.ev.got[0], "FreeDiskSpaceFailed: Insufficient free disk space on the node's image filesystem (99% of 100.0 GiB used).") {
		t.Errorf("events %v", w.ev.got)
	}
}

func imageID(w *world, tag string) string {
	for _, img := range w.rt.TrueImages() {
		if slices.Contains(img.GetRepoTags(), tag) {
			return img.GetId()
		}
	}
	return ""
}

// The eviction manager's reclaim removes every unused image old enough,
// whatever the usage, never one in use, pinned or the sandbox image.
func TestDeleteUnused(t *testing.T) {
	w := newWorld(t)
	m := w.manager()
	w.do(t, func(ctx context.Context) {
		if err := m.DeleteUnused(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if len(w.rt.TrueImages()) != 6 {
		t.Fatalf("images younger than the minimum age were removed: %v", w.tags(t))
	}
	if err := w.k.RunFor(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	w.do(t, func(ctx context.Context) {
		if err := m.DeleteUnused(ctx); err != nil {
			t.Fatal(err)
		}
	})
	want := []string{"example.com/pinned:1", "registry.k8s.io/pause:3.10"}
	if d := cmp.Diff(want, w.tags(t)); d != "" {
		t.Errorf("images left (-want +got):\n%s", d)
	}
}

// With a maximum age, images unused that long go whatever the usage,
// once the collector has run that long.
func TestMaximumAge(t *testing.T) {
	w := newWorld(t)
	d := w.k.Deps()
	p := imagegc.DefaultPolicy()
	p.MaxAge = 10 * time.Minute
	m := imagegc.New(d.Core, imagegc.Ports{Images: w.rt, Containers: w.rt, Fs: w.fs}, imagegc.Config{Policy: p, Period: time.Minute})
	ctx, cancel := w.k.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.Start(ctx)
	if err := w.k.RunFor(10 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rt.TrueImages()); n != 6 {
		t.Fatalf("%d images left before the maximum age", n)
	}
	if err := w.k.RunFor(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"example.com/pinned:1"}, w.tags(t)); d != "" {
		t.Errorf("images left (-want +got):\n%s", d)
	}
}

// A high threshold of 100 and no maximum age turn collections off, not
// detection: nothing goes at 99 % usage, yet the records are kept for the
// eviction manager's reclaim.
func TestDisabledPolicyOnlyDetects(t *testing.T) {
	w := newWorld(t)
	w.fs.available = 1 << 30
	d := w.k.Deps()
	m := imagegc.New(d.Core, imagegc.Ports{Images: w.rt, Containers: w.rt, Fs: w.fs},
		imagegc.Config{Policy: imagegc.Policy{HighThresholdPercent: 100, LowThresholdPercent: 80, MinAge: time.Minute}})
	ctx, cancel := w.k.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.Start(ctx)
	if err := w.k.RunFor(11 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rt.TrueImages()); n != 6 {
		t.Errorf("%d images left, want all 6", n)
	}
	if n := len(m.Records()); n != 6 {
		t.Errorf("%d records, want 6", n)
	}
}
