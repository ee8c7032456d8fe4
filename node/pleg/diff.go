package pleg

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// objState is what the diff remembers of a sandbox's or container's state.
type objState uint8

const (
	stateNone objState = iota // not in the runtime
	stateCreated
	stateRunning
	stateExited
	stateUnknown
	stateSandboxReady
	stateSandboxNotReady
)

func containerState(s runtimeapi.ContainerState) objState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return stateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return stateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return stateExited
	}
	return stateUnknown
}

func sandboxState(s runtimeapi.PodSandboxState) objState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return stateSandboxReady
	}
	return stateSandboxNotReady
}

// object is one sandbox or container as the last look at the runtime saw it.
type object struct {
	id        string
	pod       types.UID
	name      string // container name; empty for a sandbox
	sandboxID string // containers only
	state     objState
	gen       uint64 // the look that last saw it
	isSandbox bool
}

// podObjects are one pod's objects, in the order the runtime first listed
// them.
type podObjects struct {
	sandboxes  []*object
	containers []*object
}

// snapshot is the runtime as the previous look saw it: every sandbox and
// container of a pod, by ID and by pod. It is updated in place, so a look
// at a runtime where nothing changed allocates nothing.
type snapshot struct {
	gen        uint64
	sandboxes  map[string]*object
	containers map[string]*object
	pods       map[types.UID]*podObjects
}

func newSnapshot() *snapshot {
	return &snapshot{
		sandboxes:  map[string]*object{},
		containers: map[string]*object{},
		pods:       map[types.UID]*podObjects{},
	}
}

// changes collects what one diff found.
type changes struct {
	// events are the container events, in no particular order.
	events []Event
	// pods maps every pod that changed to whether one of its containers
	// did (false: only its sandboxes changed).
	pods map[types.UID]bool
}

func newChanges() *changes { return &changes{pods: map[types.UID]bool{}} }

func (c *changes) reset() {
	clear(c.events)
	c.events = c.events[:0]
	clear(c.pods)
}

// containerEvents appends the events of a container moving from old to
// new: Started when it runs, Died when it exits, Changed for the states the
// agent cannot act on (created, unknown), Removed when it disappears, after
// a Died when nobody saw it exit.
func (c *changes) containerEvents(o *object, old, new objState) {
	if old == new {
		return
	}
	ev := Event{UID: o.pod, ContainerID: o.id, ContainerName: o.name}
	switch new {
	case stateRunning:
		ev.Type = ContainerStarted
	case stateExited:
		ev.Type = ContainerDied
	case stateNone:
		if old == stateRunning || old == stateUnknown {
			died := ev
			died.Type = ContainerDied
			c.events = append(c.events, died)
		}
		ev.Type = ContainerRemoved
	default:
		ev.Type = ContainerChanged
	}
	c.events = append(c.events, ev)
	c.pods[o.pod] = true
}

func (c *changes) sandboxChanged(pod types.UID) {
	if _, ok := c.pods[pod]; !ok {
		c.pods[pod] = false
	}
}

// diffAll compares a full listing with the snapshot, records the changes in
// ch and makes the listing the new snapshot. Objects without the pod UID
// label are not the agent's and are ignored. Cost: one map lookup per
// listed object, plus a sweep of the snapshot only when something vanished.
func (s *snapshot) diffAll(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, ch *changes) {
	s.gen++
	before, seen := len(s.sandboxes), 0
	for _, sb := range sandboxes {
		if s.observeSandbox(sb, "", ch) {
			seen++
		}
	}
	if seen < before {
		s.sweep(s.sandboxes, ch)
	}
	before, seen = len(s.containers), 0
	for _, c := range containers {
		if s.observeContainer(c, "", ch) {
			seen++
		}
	}
	if seen < before {
		s.sweep(s.containers, ch)
	}
}

// diffPod is diffAll for one pod's objects (a listing filtered by the pod
// UID label): the pod's objects not listed are gone.
func (s *snapshot) diffPod(uid types.UID, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, ch *changes) {
	s.gen++
	for _, sb := range sandboxes {
		s.observeSandbox(sb, uid, ch)
	}
	for _, c := range containers {
		s.observeContainer(c, uid, ch)
	}
	p := s.pods[uid]
	if p == nil {
		return
	}
	for _, o := range slices.Clone(p.sandboxes) {
		if o.gen != s.gen {
			s.remove(s.sandboxes, o, ch)
		}
	}
	for _, o := range slices.Clone(p.containers) {
		if o.gen != s.gen {
			s.remove(s.containers, o, ch)
		}
	}
}

// observeSandbox records a listed sandbox; it reports whether the sandbox
// was already in the snapshot (and not yet seen in this look). A non-empty
// only skips sandboxes of other pods.
func (s *snapshot) observeSandbox(sb *runtimeapi.PodSandbox, only types.UID, ch *changes) bool {
	if sb == nil {
		return false
	}
	st := sandboxState(sb.GetState())
	if o := s.sandboxes[sb.GetId()]; o != nil {
		if o.gen == s.gen || (only != "" && o.pod != only) {
			return false
		}
		o.gen = s.gen
		if o.state != st {
			o.state = st
			ch.sandboxChanged(o.pod)
		}
		return true
	}
	uid := types.UID(sb.GetLabels()[podstate.LabelPodUID])
	if uid == "" || (only != "" && uid != only) {
		return false
	}
	o := &object{id: sb.GetId(), pod: uid, state: st, gen: s.gen, isSandbox: true}
	s.sandboxes[o.id] = o
	s.pod(uid).sandboxes = append(s.pod(uid).sandboxes, o)
	ch.sandboxChanged(uid)
	return false
}

// observeContainer is observeSandbox for a container.
func (s *snapshot) observeContainer(c *runtimeapi.Container, only types.UID, ch *changes) bool {
	if c == nil {
		return false
	}
	st := containerState(c.GetState())
	if o := s.containers[c.GetId()]; o != nil {
		if o.gen == s.gen || (only != "" && o.pod != only) {
			return false
		}
		o.gen = s.gen
		if o.state != st {
			old := o.state
			o.state = st
			ch.containerEvents(o, old, st)
		}
		return true
	}
	labels := c.GetLabels()
	uid := types.UID(labels[podstate.LabelPodUID])
	if uid == "" || (only != "" && uid != only) {
		return false
	}
	name := c.GetMetadata().GetName()
	if name == "" {
		name = labels[podstate.LabelContainerName]
	}
	o := &object{id: c.GetId(), pod: uid, name: name, sandboxID: c.GetPodSandboxId(), state: st, gen: s.gen}
	s.containers[o.id] = o
	s.pod(uid).containers = append(s.pod(uid).containers, o)
	ch.containerEvents(o, stateNone, st)
	return false
}

func (s *snapshot) pod(uid types.UID) *podObjects {
	p := s.pods[uid]
	if p == nil {
		p = &podObjects{}
		s.pods[uid] = p
	}
	return p
}

// sweep removes the objects of m this look did not see. The order of the
// map walk does not leak: events are sorted before anyone sees them and the
// per-pod lists keep their order.
func (s *snapshot) sweep(m map[string]*object, ch *changes) {
	for _, o := range m {
		if o.gen != s.gen {
			s.remove(m, o, ch)
		}
	}
}

func (s *snapshot) remove(m map[string]*object, o *object, ch *changes) {
	delete(m, o.id)
	p := s.pods[o.pod]
	if o.isSandbox {
		p.sandboxes = slices.DeleteFunc(p.sandboxes, func(x *object) bool { return x == o })
		ch.sandboxChanged(o.pod)
	} else {
		p.containers = slices.DeleteFunc(p.containers, func(x *object) bool { return x == o })
		ch.containerEvents(o, o.state, stateNone)
	}
	if len(p.sandboxes) == 0 && len(p.containers) == 0 {
		delete(s.pods, o.pod)
	}
}

// compareEvents orders events by pod UID, then container name, then
// container ID; a stable sort by it keeps a container's own events (Died
// before Removed) in the order they happened.
func compareEvents(a, b Event) int {
	if c := cmp.Compare(a.UID, b.UID); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ContainerName, b.ContainerName); c != 0 {
		return c
	}
	return cmp.Compare(a.ContainerID, b.ContainerID)
}
