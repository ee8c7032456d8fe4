package activepods

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
)

// fakePod is one pod of a test node: where each part of the agent stands
// on it.
type fakePod struct {
	name     string
	age      int // creation order: higher is newer
	desired  bool
	deleting bool
	mirror   bool
	phase    corev1.PodPhase // the spec object's phase
	worker   string          // "" none, "syncing", "terminating", "terminated"
	finished bool
	admitted bool
	refused  bool
	status   corev1.PodPhase // the status manager's phase ("" none)
	runtime  string          // "" nothing, "running", "ready-sandbox", "exited"
}

type fakeNode struct{ pods []fakePod }

func (n fakeNode) pod(f fakePod) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: "ns", UID: types.UID(f.name),
		CreationTimestamp: metav1.NewTime(time.Unix(int64(f.age), 0))}}
	p.Status.Phase = f.phase
	if f.deleting {
		now := metav1.NewTime(time.Unix(1000, 0))
		p.DeletionTimestamp = &now
	}
	if f.mirror {
		p.Annotations = map[string]string{podutil.AnnotationConfigMirror: "x"}
	}
	return p
}

func (n fakeNode) find(uid types.UID) (fakePod, bool) {
	for _, f := range n.pods {
		if types.UID(f.name) == uid {
			return f, true
		}
	}
	return fakePod{}, false
}

func (n fakeNode) Pod(uid types.UID) (*corev1.Pod, bool) {
	f, ok := n.find(uid)
	if !ok || !f.desired {
		return nil, false
	}
	return n.pod(f), true
}

// Pods lists the desired pods in reverse declaration order, so that a set
// kept in the store's order is told from one sorted by age.
func (n fakeNode) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, f := range slices.Backward(n.pods) {
		if f.desired {
			out = append(out, n.pod(f))
		}
	}
	return out
}

func (n fakeNode) UIDs() []types.UID {
	var out []types.UID
	for _, f := range n.pods {
		if f.worker != "" {
			out = append(out, types.UID(f.name))
		}
	}
	return out
}

func (n fakeNode) State(uid types.UID) (podworkers.State, bool) {
	f, _ := n.find(uid)
	switch f.worker {
	case "syncing":
		return podworkers.Syncing, true
	case "terminating":
		return podworkers.Terminating, true
	case "terminated":
		return podworkers.Terminated, true
	}
	return 0, false
}

func (n fakeNode) IsFinished(uid types.UID) bool { f, _ := n.find(uid); return f.finished }

func (n fakeNode) sources() Sources {
	return Sources{
		Desired: n, Workers: n,
		Admitted: func() []*corev1.Pod {
			var out []*corev1.Pod
			for _, f := range slices.Backward(n.pods) {
				if f.admitted {
					out = append(out, n.pod(f))
				}
			}
			return out
		},
		Refused: func(p *corev1.Pod) bool { f, _ := n.find(p.UID); return f.refused },
		Allocated: func(p *corev1.Pod) *corev1.Pod {
			p = p.DeepCopy()
			p.Labels = map[string]string{"allocated": "yes"}
			return p
		},
		Phase: func(uid types.UID) (corev1.PodPhase, bool) {
			f, _ := n.find(uid)
			return f.status, f.status != ""
		},
		Runtime: func(uid types.UID) (*podstate.PodStatus, bool) {
			f, _ := n.find(uid)
			st := &podstate.PodStatus{UID: uid}
			switch f.runtime {
			case "":
				return nil, false
			case "running":
				st.Containers = []podstate.Container{{ID: "c", State: podstate.ContainerRunning}}
			case "ready-sandbox":
				st.Sandboxes = []podstate.Sandbox{{ID: "s", State: podstate.SandboxReady}}
			case "exited":
				st.Sandboxes = []podstate.Sandbox{{ID: "s", State: podstate.SandboxNotReady}}
				st.Containers = []podstate.Container{{ID: "c", State: podstate.ContainerExited}}
			}
			return st, true
		},
	}
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		name := p.Name
		if p.Labels["allocated"] == "yes" {
			name += "(allocated)"
		}
		out = append(out, name)
	}
	return out
}

func TestSets(t *testing.T) {
	node := fakeNode{pods: []fakePod{
		{name: "running", age: 1, desired: true, worker: "syncing", admitted: true},
		{name: "young", age: 9, desired: true, worker: "syncing", admitted: true},
		{name: "deleting", age: 2, desired: true, deleting: true, worker: "terminating", admitted: true},
		{name: "evicted", age: 3, desired: true, worker: "terminating"},
		{name: "done", age: 4, desired: true, worker: "terminated", finished: true, status: corev1.PodSucceeded},
		{name: "ended-status", age: 5, desired: true, worker: "syncing", admitted: true, status: corev1.PodFailed},
		{name: "spec-failed", age: 6, desired: true, phase: corev1.PodFailed, worker: "syncing"},
		{name: "refused", age: 7, desired: true, worker: "syncing", refused: true},
		{name: "mirror", age: 8, desired: true, mirror: true, worker: "syncing"},
		{name: "gone", age: 0, worker: "terminating", admitted: true},
		{name: "new", age: 10, desired: true},
		{name: "terminated-unfinished", age: 11, desired: true, worker: "terminated"},
	}}
	tests := []struct {
		set  string
		got  []*corev1.Pod
		want []string
	}{
		{"Admitted", Admitted(node.sources()), []string{"gone", "running", "deleting", "ended-status", "young"}},
		{"Evictable", Evictable(node.sources()), []string{"running", "young"}},
		{"MayRunContainers", MayRunContainers(node.sources()),
			[]string{"running", "deleting", "evicted", "ended-status", "spec-failed", "refused", "young"}},
		{"HoldingResources", HoldingResources(node.sources()), []string{
			"terminated-unfinished(allocated)", "new(allocated)", "ended-status(allocated)",
			"evicted(allocated)", "deleting(allocated)", "young(allocated)", "running(allocated)"}},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(tt.got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.set, diff)
			}
		})
	}
}

func TestMayRunAndKnown(t *testing.T) {
	tests := []struct {
		pod       fakePod
		wantRun   bool
		wantKnown bool
	}{
		{fakePod{name: "syncing", desired: true, worker: "syncing"}, true, true},
		{fakePod{name: "terminating, not desired", worker: "terminating"}, true, true},
		{fakePod{name: "terminated, not finished", worker: "terminated"}, true, true},
		{fakePod{name: "finished, desired", desired: true, worker: "terminated", finished: true}, false, true},
		{fakePod{name: "finished, still running in the runtime", worker: "terminated", finished: true, runtime: "running"}, true, true},
		{fakePod{name: "finished, a ready sandbox left", worker: "terminated", finished: true, runtime: "ready-sandbox"}, true, true},
		{fakePod{name: "finished, only exited containers", worker: "terminated", finished: true, runtime: "exited"}, false, true},
		{fakePod{name: "desired, no worker yet", desired: true}, true, true},
		{fakePod{name: "only in the runtime, exited", runtime: "exited"}, false, true},
		{fakePod{name: "only in the runtime, running", runtime: "running"}, true, true},
		{fakePod{name: "nowhere"}, false, false},
	}
	for _, tt := range tests {
		node := fakeNode{pods: []fakePod{tt.pod}}
		uid := types.UID(tt.pod.name)
		if got := MayRun(node.sources(), uid); got != tt.wantRun {
			t.Errorf("%s: MayRun = %v, want %v", tt.pod.name, got, tt.wantRun)
		}
		if got := Known(node.sources(), uid); got != tt.wantKnown {
			t.Errorf("%s: Known = %v, want %v", tt.pod.name, got, tt.wantKnown)
		}
	}
}
