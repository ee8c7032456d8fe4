package pleg

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	unknown = runtimeapi.ContainerState_CONTAINER_UNKNOWN
	ready   = runtimeapi.PodSandboxState_SANDBOX_READY
	stopped = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
)

func sb(id, uid string, st runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: st, Labels: podstate.SandboxLabels(podstate.PodRef{UID: types.UID(uid)})}
}

func ctr(id, uid, name string, st runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id: id, PodSandboxId: "sb-" + uid, State: st,
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Labels:   podstate.ContainerLabels(podstate.PodRef{UID: types.UID(uid)}, name),
	}
}

type listing struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func ev(uid string, typ EventType, name, id string) Event {
	return Event{UID: types.UID(uid), Type: typ, ContainerName: name, ContainerID: id}
}

// TestDiffTable feeds a snapshot two listings and checks the changes the
// second one produces.
func TestDiffTable(t *testing.T) {
	base := listing{
		sandboxes: []*runtimeapi.PodSandbox{sb("sb-a", "a", ready), sb("sb-b", "b", ready)},
		containers: []*runtimeapi.Container{
			ctr("a1", "a", "app", running), ctr("a2", "a", "side", exited),
			ctr("b1", "b", "app", running),
		},
	}
	with := func(mod func(l *listing)) listing {
		l := listing{sandboxes: slices.Clone(base.sandboxes), containers: slices.Clone(base.containers)}
		mod(&l)
		return l
	}
	setC := func(l *listing, id string, st runtimeapi.ContainerState) {
		for i, c := range l.containers {
			if c.Id == id {
				n := ctr(c.Id, string(types.UID(c.Labels[podstate.LabelPodUID])), c.Metadata.Name, st)
				l.containers[i] = n
			}
		}
	}
	dropC := func(l *listing, id string) {
		l.containers = slices.DeleteFunc(l.containers, func(c *runtimeapi.Container) bool { return c.Id == id })
	}
	tests := []struct {
		name   string
		before listing
		after  listing
		events []Event
		pods   map[types.UID]bool
	}{{
		name:   "nothing changed",
		before: base, after: base,
		pods: map[types.UID]bool{},
	}, {
		name:  "first look: running is started, exited is died, sandboxes count",
		after: base,
		events: []Event{
			ev("a", ContainerStarted, "app", "a1"), ev("a", ContainerDied, "side", "a2"),
			ev("b", ContainerStarted, "app", "b1"),
		},
		pods: map[types.UID]bool{"a": true, "b": true},
	}, {
		name:   "started",
		before: base,
		after:  with(func(l *listing) { l.containers = append(l.containers, ctr("b2", "b", "side", running)) }),
		events: []Event{ev("b", ContainerStarted, "side", "b2")},
		pods:   map[types.UID]bool{"b": true},
	}, {
		name:   "died",
		before: base,
		after:  with(func(l *listing) { setC(l, "a1", exited) }),
		events: []Event{ev("a", ContainerDied, "app", "a1")},
		pods:   map[types.UID]bool{"a": true},
	}, {
		name:   "removed after it was seen exited",
		before: base,
		after:  with(func(l *listing) { dropC(l, "a2") }),
		events: []Event{ev("a", ContainerRemoved, "side", "a2")},
		pods:   map[types.UID]bool{"a": true},
	}, {
		name:   "removed while running: died then removed",
		before: base,
		after:  with(func(l *listing) { dropC(l, "b1") }),
		events: []Event{ev("b", ContainerDied, "app", "b1"), ev("b", ContainerRemoved, "app", "b1")},
		pods:   map[types.UID]bool{"b": true},
	}, {
		name:   "created and unknown are changed",
		before: base,
		after: with(func(l *listing) {
			setC(l, "b1", unknown)
			l.containers = append(l.containers, ctr("a3", "a", "init", created))
		}),
		events: []Event{ev("a", ContainerChanged, "init", "a3"), ev("b", ContainerChanged, "app", "b1")},
		pods:   map[types.UID]bool{"a": true, "b": true},
	}, {
		name:   "created then removed without running: removed only",
		before: with(func(l *listing) { l.containers = append(l.containers, ctr("a3", "a", "init", created)) }),
		after:  base,
		events: []Event{ev("a", ContainerRemoved, "init", "a3")},
		pods:   map[types.UID]bool{"a": true},
	}, {
		name:   "sandbox only: state change and a new sandbox",
		before: base,
		after: with(func(l *listing) {
			l.sandboxes = []*runtimeapi.PodSandbox{sb("sb-a", "a", stopped), sb("sb-b", "b", ready), sb("sb-c", "c", ready)}
		}),
		pods: map[types.UID]bool{"a": false, "c": false},
	}, {
		name:   "sandbox and container change in one pod",
		before: base,
		after: with(func(l *listing) {
			l.sandboxes = []*runtimeapi.PodSandbox{sb("sb-a", "a", stopped), sb("sb-b", "b", ready)}
			setC(l, "a1", exited)
		}),
		events: []Event{ev("a", ContainerDied, "app", "a1")},
		pods:   map[types.UID]bool{"a": true},
	}, {
		name:   "whole pod gone",
		before: base,
		after: listing{
			sandboxes:  []*runtimeapi.PodSandbox{sb("sb-a", "a", ready)},
			containers: []*runtimeapi.Container{ctr("a1", "a", "app", running), ctr("a2", "a", "side", exited)},
		},
		events: []Event{ev("b", ContainerDied, "app", "b1"), ev("b", ContainerRemoved, "app", "b1")},
		pods:   map[types.UID]bool{"b": true},
	}, {
		name:   "objects without the pod UID label are ignored",
		before: base,
		after: with(func(l *listing) {
			l.sandboxes = append(l.sandboxes, &runtimeapi.PodSandbox{Id: "foreign-sb"})
			l.containers = append(l.containers, &runtimeapi.Container{Id: "foreign", State: running}, nil)
		}),
		pods: map[types.UID]bool{},
	}, {
		name:   "a duplicate listing entry counts once",
		before: base,
		after:  with(func(l *listing) { l.containers = append(l.containers, ctr("a1", "a", "app", running)) }),
		pods:   map[types.UID]bool{},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ch := newSnapshot(), newChanges()
			s.diffAll(tc.before.sandboxes, tc.before.containers, ch)
			ch.reset()
			s.diffAll(tc.after.sandboxes, tc.after.containers, ch)
			got := slices.Clone(ch.events)
			slices.SortStableFunc(got, compareEvents)
			if diff := cmp.Diff(tc.events, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pods, ch.pods); diff != "" {
				t.Errorf("changed pods (-want +got):\n%s", diff)
			}
			// The snapshot now is the second listing: diffing it again
			// finds nothing.
			ch.reset()
			s.diffAll(tc.after.sandboxes, tc.after.containers, ch)
			if len(ch.events) != 0 || len(ch.pods) != 0 {
				t.Errorf("second diff of the same listing found %v %v", ch.events, ch.pods)
			}
			checkIndex(t, s)
		})
	}
}

// checkIndex checks that the per-pod index matches the maps.
func checkIndex(t *testing.T, s *snapshot) {
	t.Helper()
	n := 0
	for uid, p := range s.pods {
		if len(p.sandboxes)+len(p.containers) == 0 {
			t.Errorf("pod %s indexed without objects", uid)
		}
		for _, o := range p.sandboxes {
			if s.sandboxes[o.id] != o || o.pod != uid {
				t.Errorf("sandbox %s of pod %s not in the map", o.id, uid)
			}
		}
		for _, o := range p.containers {
			if s.containers[o.id] != o || o.pod != uid {
				t.Errorf("container %s of pod %s not in the map", o.id, uid)
			}
		}
		n += len(p.sandboxes) + len(p.containers)
	}
	if n != len(s.sandboxes)+len(s.containers) {
		t.Errorf("index holds %d objects, maps %d", n, len(s.sandboxes)+len(s.containers))
	}
}

// TestDiffPod checks the one-pod diff: only that pod's objects count, and
// the pod's objects missing from the listing are gone.
func TestDiffPod(t *testing.T) {
	s, ch := newSnapshot(), newChanges()
	s.diffAll([]*runtimeapi.PodSandbox{sb("sb-a", "a", ready), sb("sb-b", "b", ready)},
		[]*runtimeapi.Container{ctr("a1", "a", "app", running), ctr("a2", "a", "side", running), ctr("b1", "b", "app", running)}, ch)
	ch.reset()
	// Pod a: a1 exited, a2 gone, a3 new; a stray object of pod b in the
	// listing is not pod a's and must not count.
	s.diffPod("a", []*runtimeapi.PodSandbox{sb("sb-a", "a", ready)},
		[]*runtimeapi.Container{ctr("a1", "a", "app", exited), ctr("a3", "a", "app", running), ctr("b1", "b", "app", exited)}, ch)
	got := slices.Clone(ch.events)
	slices.SortStableFunc(got, compareEvents)
	want := []Event{
		ev("a", ContainerDied, "app", "a1"), ev("a", ContainerStarted, "app", "a3"),
		ev("a", ContainerDied, "side", "a2"), ev("a", ContainerRemoved, "side", "a2"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[types.UID]bool{"a": true}, ch.pods); diff != "" {
		t.Errorf("changed pods (-want +got):\n%s", diff)
	}
	if s.containers["b1"].state != stateRunning {
		t.Errorf("pod b's container changed by a diff of pod a")
	}
	checkIndex(t, s)
	// A pod that vanished entirely.
	ch.reset()
	s.diffPod("b", nil, nil, ch)
	if _, ok := s.pods["b"]; ok {
		t.Errorf("pod b still indexed after it vanished")
	}
	if diff := cmp.Diff(map[types.UID]bool{"b": true}, ch.pods); diff != "" {
		t.Errorf("changed pods (-want +got):\n%s", diff)
	}
	checkIndex(t, s)
}

func TestRetryBackoff(t *testing.T) {
	const p = 1_000_000_000 // 1 s
	for _, tc := range []struct {
		failures int
		want     int64
	}{{1, 0}, {2, 2 * p}, {3, 4 * p}, {4, 8 * p}, {9, 256 * p}, {10, 300 * p}, {1000, 300 * p}} {
		if got := retryBackoff(tc.failures, p); int64(got) != tc.want {
			t.Errorf("retryBackoff(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}
