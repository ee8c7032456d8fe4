package volume_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

const root = "/var/lib/lockstep"

// world is a volume manager over the simulator's kernel, files and
// apiserver.
type world struct {
	t     *testing.T
	k     *kernel.Kernel
	files *memfs.FS
	api   *apiserver.Server
	m     *volume.Manager
	// mounts: the tmpfs model (newWorldWith mounts set), else nil.
	mounts *memfs.Mounts
}

func newWorld(t *testing.T) *world { t.Helper(); return newWorldWith(t, false) }

// newWorldWith is newWorld, with the simulator's tmpfs mounts when
// mounts is set (else memory-backed volumes are plain directories).
func newWorldWith(t *testing.T, mounts bool) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 7})
	t.Cleanup(k.Close)
	w := &world{t: t, k: k, files: memfs.New(),
		api: apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Rand: k.Rand(), Log: k.Logger(), Node: "n1"})}
	d := k.Deps()
	d.Files = w.files
	if mounts {
		w.mounts = memfs.NewMounts(w.files)
		d.Mounts = w.mounts
	}
	d.API = deps.API{Pods: w.api, Events: apiserver.NewRecorder(w.api, k, corev1.EventSource{Component: "kubelet", Host: "n1"}), ConfigMaps: w.api, Secrets: w.api}
	w.m = volume.New(d.Core, volume.Ports{Files: d.Files, Mounts: d.Mounts, Objects: d.API.Objects(), Claims: w.api, TrustBundles: w.api, Events: d.API.Events}, volume.Config{Node: podspec.NodeInfo{RootDir: root, NodeName: "n1"}})
	ctx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	w.m.Start(ctx)
	return w
}

func (w *world) run(d time.Duration) {
	w.t.Helper()
	if err := w.k.RunFor(d); err != nil {
		w.t.Fatal(err)
	}
}

// pod creates a pod bound to n1 with the given volumes.
func (w *world) pod(name string, vols ...corev1.Volume) *corev1.Pod {
	w.t.Helper()
	p, err := w.api.User().CreatePod(&corev1.Pod{
		ObjectMeta: metaName(name),
		Spec:       corev1.PodSpec{NodeName: "n1", Volumes: vols, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// wait runs WaitForPod in a task and returns its error once it returned.
func (w *world) wait(pod *corev1.Pod, limit time.Duration) (error, bool) {
	var got error
	done := false
	w.k.Go("wait "+pod.Name, func() {
		got = w.m.WaitForPod(context.Background(), pod)
		done = true
	})
	_ = w.k.RunUntil(func() bool { return done }, limit)
	return got, done
}

func (w *world) read(p string) string {
	data, err := w.files.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

func volDir(pod *corev1.Pod, plugin, name string) string {
	return path.Join(root, "pods", string(pod.UID), "volumes", plugin, name)
}

func TestConfigMapVolumePublishedAndUpdatedAtomically(t *testing.T) {
	w := newWorld(t)
	w.api.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metaName("cfg"), Data: map[string]string{"a": "1", "b": "2"}})
	pod := w.pod("p", corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	w.m.AddPod(pod)
	if err, done := w.wait(pod, time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod: done=%v err=%v", done, err)
	}
	dir := volDir(pod, podspec.PluginConfigMap, "c")
	got := map[string]string{"a": w.read(dir + "/a"), "b": w.read(dir + "/b")}
	if diff := cmp.Diff(map[string]string{"a": "1", "b": "2"}, got); diff != "" {
		t.Fatalf("content (-want +got):\n%s", diff)
	}
	first, _ := w.files.Readlink(dir + "/..data")

	w.api.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metaName("cfg"), Data: map[string]string{"a": "10", "c": "3"}})
	w.run(volume.DefaultResyncPeriod + 2*time.Second)
	got = map[string]string{"a": w.read(dir + "/a"), "c": w.read(dir + "/c")}
	if diff := cmp.Diff(map[string]string{"a": "10", "c": "3"}, got); diff != "" {
		t.Fatalf("content after the update (-want +got):\n%s", diff)
	}
	if _, err := w.files.Stat(dir + "/b"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed key b still published: %v", err)
	}
	second, _ := w.files.Readlink(dir + "/..data")
	if first == second || !strings.HasPrefix(second, "..") {
		t.Errorf("..data went from %q to %q; want a new timestamped directory", first, second)
	}
	if _, err := w.files.Stat(path.Join(dir, first)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the previous content directory %s was kept: %v", first, err)
	}
}

func TestMissingConfigMapTimesOutThenMountsWhenCreated(t *testing.T) {
	w := newWorld(t)
	pod := w.pod("p", corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}}})
	w.m.AddPod(pod)
	if w.m.AllSetUp(pod) {
		t.Fatalf("AllSetUp before the configmap exists; want false (the sync writes the pod's status before it waits)")
	}
	err, done := w.wait(pod, 3*time.Minute)
	if w.m.AllSetUp(pod) {
		t.Errorf("AllSetUp after the wait timed out; want false")
	}
	if !done || err == nil || !strings.Contains(err.Error(), `unmounted volumes=[c]`) || !strings.Contains(err.Error(), `configmap "later" not found`) {
		t.Fatalf("WaitForPod: done=%v err=%v; want a timeout naming volume c and the missing configmap", done, err)
	}
	if n := countEvents(w.api, volume.ReasonFailedMount); n == 0 {
		t.Errorf("no %s event", volume.ReasonFailedMount)
	}
	w.api.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metaName("later"), Data: map[string]string{"k": "v"}})
	if err, done := w.wait(pod, 5*time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod after the configmap appeared: done=%v err=%v", done, err)
	}
	if got := w.read(volDir(pod, podspec.PluginConfigMap, "c") + "/k"); got != "v" {
		t.Errorf("k = %q, want v", got)
	}
	if !w.m.AllSetUp(pod) {
		t.Errorf("AllSetUp false once the volume is set up")
	}
}

func TestTeardownAfterRemovePodAndOrphansButNeverKnownPods(t *testing.T) {
	w := newWorld(t)
	empty := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	a, b := w.pod("a", empty), w.pod("b", empty)
	w.m.AddPod(a)
	w.m.AddPod(b)
	w.run(2 * time.Second)
	// An orphan left by an earlier agent, and a known pod's directory the
	// manager was never told about.
	orphan, known := types.UID("orphan-uid"), types.UID("known-uid")
	for _, uid := range []types.UID{orphan, known} {
		_ = w.files.MkdirAll(path.Join(podspec.PodVolumesDir(root, uid), podspec.PluginEmptyDir, "x"))
	}
	// A pod log directory, should --pod-logs-dir be <root>/pods too, and
	// a directory the manager did not make: neither is a pod's.
	logDir := path.Join(podspec.PodsDir(root), "ns_name_uid-9")
	w.files.WriteFile(logDir+"/app/0.log", []byte("log"))
	_ = w.files.MkdirAll(path.Join(podspec.PodsDir(root), "not-a-pod", "data"))
	w.m.RemovePod(a.UID)
	w.m.CleanupOrphans(func(uid types.UID) bool { return uid == known })
	w.run(2 * time.Second)
	exists := func(uid types.UID) bool { _, err := w.files.Stat(podspec.PodDir(root, uid)); return err == nil }
	got := map[string]bool{"a": exists(a.UID), "b": exists(b.UID), "orphan": exists(orphan), "known": exists(known)}
	want := map[string]bool{"a": false, "b": true, "orphan": false, "known": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pod directories present (-want +got):\n%s", diff)
	}
	for _, dir := range []string{logDir, path.Join(podspec.PodsDir(root), "not-a-pod")} {
		if _, err := w.files.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
}

func TestHostPathTypes(t *testing.T) {
	w := newWorld(t)
	w.files.WriteFile("/srv/file", []byte("x"))
	_ = w.files.MkdirAll("/srv/dir")
	hp := func(name, p string, typ corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &typ}}}
	}
	ok := w.pod("ok", hp("d", "/srv/dir", corev1.HostPathDirectory), hp("f", "/srv/file", corev1.HostPathFile),
		hp("dc", "/srv/new/dir", corev1.HostPathDirectoryOrCreate), hp("fc", "/srv/new2/file", corev1.HostPathFileOrCreate),
		hp("u", "/nowhere", corev1.HostPathUnset))
	w.m.AddPod(ok)
	if err, done := w.wait(ok, time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod: done=%v err=%v", done, err)
	}
	if info, err := w.files.Stat("/srv/new/dir"); err != nil || !info.IsDir() {
		t.Errorf("DirectoryOrCreate did not create a directory: %v", err)
	}
	if info, err := w.files.Stat("/srv/new2/file"); err != nil || !info.Mode().IsRegular() {
		t.Errorf("FileOrCreate did not create a file: %v", err)
	}
	bad := w.pod("bad", hp("d", "/srv/file", corev1.HostPathDirectory))
	w.m.AddPod(bad)
	err, done := w.wait(bad, 3*time.Minute)
	if !done || err == nil || !strings.Contains(err.Error(), "/srv/file is not a directory") {
		t.Fatalf("WaitForPod: done=%v err=%v; want the type check's error", done, err)
	}
}

func TestRestartedManagerRebuildsFromDisk(t *testing.T) {
	w := newWorld(t)
	w.api.User().PutSecret(&corev1.Secret{ObjectMeta: metaName("s"), Data: map[string][]byte{"pw": []byte("hunter2")}})
	mode := int32(0o400)
	pod := w.pod("p", corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: &mode}}})
	w.m.AddPod(pod)
	if err, done := w.wait(pod, time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod: done=%v err=%v", done, err)
	}
	dir := volDir(pod, podspec.PluginSecret, "sec")
	before, _ := w.files.Readlink(dir + "/..data")
	if info, err := w.files.Stat(dir + "/pw"); err != nil || info.Mode().Perm() != 0o400 {
		t.Fatalf("pw: %v, mode %v; want 0400", err, info)
	}
	// A new manager (a restarted agent) sees the volume set up on disk
	// and does not rewrite unchanged content.
	d := w.k.Deps()
	d.Files = w.files
	d.API = deps.API{Pods: w.api, Events: apiserver.NewRecorder(w.api, w.k, corev1.EventSource{Component: "kubelet", Host: "n1"}), ConfigMaps: w.api, Secrets: w.api}
	m2 := volume.New(d.Core, volume.Ports{Files: d.Files, Mounts: d.Mounts, Objects: d.API.Objects(), Events: d.API.Events}, volume.Config{Node: podspec.NodeInfo{RootDir: root}})
	m2.AddPod(pod)
	var got error
	done := false
	w.k.Go("wait again", func() { got = m2.WaitForPod(context.Background(), pod); done = true })
	_ = w.k.RunUntil(func() bool { return done }, time.Second)
	if !done || got != nil {
		t.Fatalf("a new manager's WaitForPod before any reconcile: done=%v err=%v; want the disk to vouch", done, got)
	}
	w.k.Go("reconcile", func() { m2.Reconcile(context.Background()) })
	w.run(time.Second)
	if after, _ := w.files.Readlink(dir + "/..data"); after != before {
		t.Errorf("..data moved from %q to %q for unchanged content", before, after)
	}
}

func countEvents(api *apiserver.Server, reason string) int {
	n := 0
	for _, e := range api.User().Events() {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// statCounter counts the Stat calls on pods' directories.
type statCounter struct {
	deps.Files
	podDirStats int
}

func (c *statCounter) Stat(name string) (fs.FileInfo, error) {
	if strings.HasPrefix(name, podspec.PodsDir(root)+"/") && strings.Count(strings.TrimPrefix(name, podspec.PodsDir(root)+"/"), "/") == 0 {
		c.podDirStats++
	}
	return c.Files.Stat(name)
}

// TestAddingPodsReconcilesOnlyTheNewOnes: a pod added wakes the
// reconciler for that pod alone, so admitting N pods one after another
// costs O(N) pod reconciles (was O(N²): every wake went over every pod);
// the periodic pass still covers every pod.
func TestAddingPodsReconcilesOnlyTheNewOnes(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 7})
	t.Cleanup(k.Close)
	files := &statCounter{Files: memfs.New()}
	api := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Rand: k.Rand(), Log: k.Logger(), Node: "n1"})
	d := k.Deps()
	m := volume.New(d.Core, volume.Ports{Files: files, Mounts: d.Mounts, Objects: api}, volume.Config{Node: podspec.NodeInfo{RootDir: root, NodeName: "n1"}})
	ctx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.Start(ctx)
	if err := k.RunFor(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		meta := metaName(fmt.Sprintf("p%03d", i))
		meta.UID = types.UID(fmt.Sprintf("uid-%03d", i))
		m.AddPod(&corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: "n1"}})
		if err := k.RunFor(time.Millisecond); err != nil { // well within one Period
			t.Fatal(err)
		}
	}
	if files.podDirStats > 2*n {
		t.Errorf("%d stats of pod directories while adding %d pods one by one, want at most %d (one reconcile per new pod)", files.podDirStats, n, 2*n)
	}
	before := files.podDirStats
	if err := k.RunFor(volume.DefaultPeriod + 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := files.podDirStats - before; got < n {
		t.Errorf("the periodic pass looked at %d pod directories, want every one of the %d pods", got, n)
	}
}

// TestUnmountPodKeepsThePodDirectoryUntilOrphaned: a pod that ended but is
// still in the API loses its volumes but keeps its directory (other files
// of its containers' mounts live there) until CleanupOrphans finds it no
// longer known.
func TestUnmountPodKeepsThePodDirectoryUntilOrphaned(t *testing.T) {
	w := newWorld(t)
	pod := w.pod("done", corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	w.m.AddPod(pod)
	w.run(2 * time.Second)
	hosts := podspec.HostsFilePath(root, pod.UID)
	w.files.WriteFile(hosts, []byte("127.0.0.1 localhost\n"))
	w.m.UnmountPod(pod.UID)
	w.m.CleanupOrphans(func(types.UID) bool { return true })
	w.run(2 * time.Second)
	vols, _ := w.files.ReadDir(podspec.PodVolumesDir(root, pod.UID))
	_, hostsErr := w.files.Stat(hosts)
	if len(vols) != 0 || hostsErr != nil {
		t.Fatalf("after UnmountPod: %d volume plugin directories left (want 0), hosts file: %v (want kept)", len(vols), hostsErr)
	}
	w.m.CleanupOrphans(func(types.UID) bool { return false })
	w.run(2 * time.Second)
	if _, err := w.files.Stat(podspec.PodDir(root, pod.UID)); err == nil {
		t.Errorf("the pod directory remains once the pod is no longer known")
	}
}
