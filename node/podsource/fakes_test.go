package podsource_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// world is a kernel with a merger over the given sources.
type world struct {
	t   testing.TB
	k   *kernel.Kernel
	d   deps.Deps
	out *deps.Inbox[podsource.Update]
	m   *podsource.Merger
}

func newWorld(t testing.TB, sources ...string) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	d := k.Deps()
	out := deps.NewInbox[podsource.Update](d.Tasks, "updates")
	return &world{t: t, k: k, d: d, out: out, m: podsource.NewMerger(d.Core, sources, out)}
}

// run advances virtual time by dur.
func (w *world) run(dur time.Duration) {
	w.t.Helper()
	if err := w.k.RunFor(dur); err != nil {
		w.t.Fatal(err)
	}
}

// updates drains the inbox.
func (w *world) updates() []podsource.Update {
	var us []podsource.Update
	for {
		u, ok := w.out.TryGet()
		if !ok {
			return us
		}
		us = append(us, u)
	}
}

// summary drains the inbox into "OP source ns/name,ns/name" lines.
func (w *world) summary() []string {
	return summarize(w.updates())
}

func summarize(us []podsource.Update) []string {
	var out []string
	for _, u := range us {
		var names []string
		for _, p := range u.Pods {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		out = append(out, fmt.Sprintf("%s %s %s", u.Op, u.Source, strings.Join(names, ",")))
	}
	return out
}

// apiPod is a minimal API pod.
func apiPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: corev1.PodSpec{
			NodeName:   "node-1",
			Containers: []corev1.Container{{Name: "c", Image: "img:1"}},
		},
	}
}

// fakePodAPI is an in-test apiserver holding the node's pods: list, watch
// (events fan out to open watches), mutations, scripted list failures and
// watch breaks.
type fakePodAPI struct {
	deps.PodAPI // other methods are not used by the sources

	tasks   deps.Tasks
	clock   deps.Clock
	rv      int
	pods    map[types.UID]*corev1.Pod
	watches []*fakeWatch

	// listErrs fail the next lists, in order.
	listErrs []error
	// lists records when each list was attempted.
	lists []time.Time
}

func newFakePodAPI(d deps.Deps) *fakePodAPI {
	return &fakePodAPI{tasks: d.Tasks, clock: d.Clock, pods: map[types.UID]*corev1.Pod{}}
}

func (a *fakePodAPI) ListPods(ctx context.Context, node, _ string) ([]*corev1.Pod, string, error) {
	a.lists = append(a.lists, a.clock.Now())
	if len(a.listErrs) > 0 {
		err := a.listErrs[0]
		a.listErrs = a.listErrs[1:]
		return nil, "", err
	}
	var out []*corev1.Pod
	for _, uid := range slices.Sorted(maps.Keys(a.pods)) {
		out = append(out, a.pods[uid].DeepCopy())
	}
	return out, strconv.Itoa(a.rv), nil
}

func (a *fakePodAPI) WatchPods(ctx context.Context, node, rv string) (deps.PodWatch, error) {
	w := &fakeWatch{events: deps.NewInbox[watchItem](a.tasks, "fake-watch")}
	a.watches = append(a.watches, w)
	return w, nil
}

// put creates or replaces a pod and tells the watches.
func (a *fakePodAPI) put(p *corev1.Pod) {
	typ := deps.PodModified
	if _, ok := a.pods[p.UID]; !ok {
		typ = deps.PodAdded
	}
	a.rv++
	p = p.DeepCopy()
	p.ResourceVersion = strconv.Itoa(a.rv)
	a.pods[p.UID] = p
	a.send(deps.PodEvent{Type: typ, Pod: p.DeepCopy()})
}

// remove deletes a pod and tells the watches.
func (a *fakePodAPI) remove(uid types.UID) {
	p := a.pods[uid]
	delete(a.pods, uid)
	a.rv++
	a.send(deps.PodEvent{Type: deps.PodDeleted, Pod: p})
}

func (a *fakePodAPI) send(ev deps.PodEvent) {
	for _, w := range a.watches {
		if !w.broken {
			w.events.Put(watchItem{ev: ev})
		}
	}
}

// breakWatches ends every open watch with an error.
func (a *fakePodAPI) breakWatches() {
	for _, w := range a.watches {
		if !w.broken {
			w.broken = true
			w.events.Put(watchItem{err: errors.New("watch closed by fake apiserver")})
		}
	}
	a.watches = nil
}

type watchItem struct {
	ev  deps.PodEvent
	err error
}

type fakeWatch struct {
	events *deps.Inbox[watchItem]
	broken bool
}

func (w *fakeWatch) Next(ctx context.Context) (deps.PodEvent, error) {
	it, err := w.events.Get(ctx)
	if err != nil {
		return deps.PodEvent{}, err
	}
	return it.ev, it.err
}

func (w *fakeWatch) Stop() { w.broken = true }

// memFiles is an in-memory deps.Files with injectable errors.
type memFiles struct {
	fs          fstest.MapFS
	readDirErr  error
	readFileErr map[string]error
}

func newMemFiles() *memFiles {
	return &memFiles{fs: fstest.MapFS{}, readFileErr: map[string]error{}}
}

func (m *memFiles) ReadDir(dir string) ([]fs.DirEntry, error) {
	if m.readDirErr != nil {
		return nil, m.readDirErr
	}
	return fs.ReadDir(m.fs, dir)
}

func (m *memFiles) ReadFile(path string) ([]byte, error) {
	if err := m.readFileErr[path]; err != nil {
		return nil, err
	}
	return fs.ReadFile(m.fs, path)
}

func (m *memFiles) write(path, content string) { m.fs[path] = &fstest.MapFile{Data: []byte(content)} }
func (m *memFiles) rm(path string)             { delete(m.fs, path) }

// MkdirAll, Remove, RemoveAll and Symlink are not used by the sources.
func (f *memFiles) MkdirAll(string) error        { return nil }
func (f *memFiles) Remove(string) error          { return nil }
func (f *memFiles) RemoveAll(string) error       { return nil }
func (f *memFiles) Symlink(string, string) error { return nil }

// CreateFile, Rename, Readlink, ReadFileTail, Stat, Lchown and Chmod are
// not used by the sources either.
func (f *memFiles) CreateFile(string, []byte, fs.FileMode) error { return nil }
func (f *memFiles) Rename(string, string) error                  { return nil }
func (f *memFiles) Readlink(string) (string, error)              { return "", fs.ErrNotExist }
func (f *memFiles) ReadFileTail(string, int64) ([]byte, error)   { return nil, fs.ErrNotExist }
func (f *memFiles) Stat(string) (fs.FileInfo, error)             { return nil, fs.ErrNotExist }
func (f *memFiles) Lchown(string, int, int) error                { return nil }
func (f *memFiles) Chmod(string, fs.FileMode) error              { return nil }
