package pleg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// fakeRuntime is a tiny CRI runtime: the list and status calls only (any
// other method panics through the nil embedded interface). Lists come out
// sorted by ID, or reversed when reverse is set.
type fakeRuntime struct {
	cri.RuntimeService
	k          *kernel.Kernel
	sandboxes  map[string]*runtimeapi.PodSandboxStatus
	containers map[string]*fakeContainer
	reverse    bool

	listErr   error
	statusErr map[string]error // by object ID
	hang      map[string]bool  // status calls for these IDs block until ctx ends
	clock     int64            // creation times, increasing

	fullLists  int      // unfiltered ListPodSandbox calls
	podLists   int      // filtered ListPodSandbox calls
	statusLog  []string // IDs of status calls, in order
	statusErrs []error
}

type fakeContainer struct {
	status    *runtimeapi.ContainerStatus
	sandboxID string
}

func newFakeRuntime(k *kernel.Kernel) *fakeRuntime {
	return &fakeRuntime{
		k:          k,
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		containers: map[string]*fakeContainer{},
		statusErr:  map[string]error{},
		hang:       map[string]bool{},
	}
}

func (f *fakeRuntime) tick() int64 {
	f.clock += int64(time.Second)
	return kernel.DefaultEpoch.UnixNano() + f.clock
}

// addSandbox adds a ready sandbox sb-<uid>-<attempt> of pod uid (named p-<uid>
// in namespace ns).
func (f *fakeRuntime) addSandbox(uid string, attempt uint32) string {
	id := fmt.Sprintf("sb-%s-%d", uid, attempt)
	ref := podstate.PodRef{UID: types.UID(uid), Name: "p-" + uid, Namespace: "ns"}
	f.sandboxes[id] = &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: ref.Name, Namespace: ref.Namespace, Uid: uid, Attempt: attempt},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: f.tick(),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"},
		Labels:    podstate.SandboxLabels(ref),
	}
	return id
}

// addContainer adds container id named name in sandbox sb of pod uid.
func (f *fakeRuntime) addContainer(uid, sb, name, id string, state runtimeapi.ContainerState, restarts int) {
	ref := podstate.PodRef{UID: types.UID(uid), Name: "p-" + uid, Namespace: "ns"}
	f.containers[id] = &fakeContainer{sandboxID: sb, status: &runtimeapi.ContainerStatus{
		Id:          id,
		Metadata:    &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restarts)},
		State:       state,
		CreatedAt:   f.tick(),
		Image:       &runtimeapi.ImageSpec{Image: "img:" + name},
		Labels:      podstate.ContainerLabels(ref, name),
		Annotations: podstate.ContainerAnnotations("hash-"+name, restarts),
	}}
}

func (f *fakeRuntime) setState(id string, state runtimeapi.ContainerState) {
	f.containers[id].status.State = state
	if state == runtimeapi.ContainerState_CONTAINER_EXITED {
		f.containers[id].status.ExitCode = 1
		f.containers[id].status.FinishedAt = f.tick()
	}
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) sortedIDs(ids []string) []string {
	slices.Sort(ids)
	if f.reverse {
		slices.Reverse(ids)
	}
	return ids
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if filter == nil {
		f.fullLists++
	} else {
		f.podLists++
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	var ids []string
	for id := range f.sandboxes {
		ids = append(ids, id)
	}
	var out []*runtimeapi.PodSandbox
	for _, id := range f.sortedIDs(ids) {
		s := f.sandboxes[id]
		if !matches(filter.GetLabelSelector(), s.Labels) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels})
	}
	return out, nil
}

func (f *fakeRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	var ids []string
	for id := range f.containers {
		ids = append(ids, id)
	}
	var out []*runtimeapi.Container
	for _, id := range f.sortedIDs(ids) {
		c := f.containers[id]
		s := c.status
		if !matches(filter.GetLabelSelector(), s.Labels) {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: s.Id, PodSandboxId: c.sandboxID, Metadata: s.Metadata, State: s.State,
			CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations,
		})
	}
	return out, nil
}

func (f *fakeRuntime) statusCall(ctx context.Context, id string) error {
	f.statusLog = append(f.statusLog, id)
	if f.hang[id] {
		err := f.k.Tasks().Sleep(ctx, 24*time.Hour)
		f.statusErrs = append(f.statusErrs, err)
		return err
	}
	return f.statusErr[id]
}

func (f *fakeRuntime) PodSandboxStatus(ctx context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.statusCall(ctx, id); err != nil {
		return nil, err
	}
	s, ok := f.sandboxes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "sandbox %q not found", id)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: s}, nil
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.statusCall(ctx, id); err != nil {
		return nil, err
	}
	c, ok := f.containers[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: c.status}, nil
}

// world is one test's simulated world: a kernel, the fake runtime and a
// PLEG over them.
type world struct {
	t  *testing.T
	k  *kernel.Kernel
	rt *fakeRuntime
	p  *PLEG
}

func newWorld(t *testing.T, seed uint64, cfg Config, events ...deps.ContainerEvents) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: seed})
	t.Cleanup(k.Close)
	rt := newFakeRuntime(k)
	var ev deps.ContainerEvents
	if len(events) > 0 {
		ev = events[0]
	}
	return &world{t: t, k: k, rt: rt, p: New(k.Deps().Core, rt, ev, cfg)}
}

// do runs fn as a task and the world until it has returned.
func (w *world) do(fn func(ctx context.Context)) {
	w.t.Helper()
	done := false
	w.k.Tasks().Go("test", func() { fn(context.Background()); done = true })
	if err := w.k.RunUntil(func() bool { return done }, time.Hour); err != nil {
		w.t.Fatal(err)
	}
	// Let the tasks fn woke run too, without moving time.
	if err := w.k.RunFor(0); err != nil {
		w.t.Fatal(err)
	}
}

// relist runs one relist in a task and fails the test on an error.
func (w *world) relist() {
	w.t.Helper()
	var err error
	w.do(func(ctx context.Context) { err = w.p.Relist(ctx) })
	if err != nil {
		w.t.Fatalf("relist: %v", err)
	}
}

// drain takes every event waiting in the PLEG's inbox.
func (w *world) drain() []Event {
	var out []Event
	for {
		ev, ok := w.p.Events().TryGet()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func (w *world) now() time.Time { return w.k.Now() }

// advance moves virtual time on by d, running whatever is due meanwhile
// (RunFor alone stops early when nothing is scheduled).
func (w *world) advance(d time.Duration) {
	w.t.Helper()
	w.k.Tasks().Go("clock", func() { w.k.Sleep(d) })
	if err := w.k.RunFor(d); err != nil {
		w.t.Fatal(err)
	}
}

// fakeEvents is a deps.ContainerEvents whose streams deliver what the test sends.
type fakeEvents struct {
	tasks      deps.Tasks
	subscribes int
	subErr     error // Subscribe fails with it while set
	cur        *fakeStream
}

type fakeStream struct {
	in *deps.Inbox[fakeItem]
}

type fakeItem struct {
	ev  *runtimeapi.ContainerEventResponse
	err error
}

func (e *fakeEvents) Subscribe(ctx context.Context) (deps.ContainerEventStream, error) {
	e.subscribes++
	if e.subErr != nil {
		return nil, e.subErr
	}
	e.cur = &fakeStream{in: deps.NewInbox[fakeItem](e.tasks, "fake-stream")}
	return e.cur, nil
}

func (s *fakeStream) Next(ctx context.Context) (*runtimeapi.ContainerEventResponse, error) {
	it, err := s.in.Get(ctx)
	if err != nil {
		return nil, err
	}
	return it.ev, it.err
}

// send delivers an event about container or sandbox id of pod uid.
func (e *fakeEvents) send(rt *fakeRuntime, uid, id string, typ runtimeapi.ContainerEventType) {
	var sb *runtimeapi.PodSandboxStatus
	for _, s := range rt.sandboxes {
		if s.Labels[podstate.LabelPodUID] == uid {
			sb = s
		}
	}
	e.cur.in.Put(fakeItem{ev: &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, PodSandboxStatus: sb}})
}

// fail ends the current stream with an error.
func (e *fakeEvents) fail() {
	e.cur.in.Put(fakeItem{err: errors.New("stream broke")})
}

func eventsString(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s %s/%s\n", e.UID, e.Type, e.ContainerName, e.ContainerID)
	}
	return b.String()
}

func errNotFound(id string) error { return status.Errorf(codes.NotFound, "%q not found", id) }
