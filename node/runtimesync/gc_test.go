package runtimesync

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// gcPod is a pod's runtime view with the given container instances.
func gcPod(uid types.UID, cs ...podstate.Container) *podstate.PodStatus {
	st := &podstate.PodStatus{UID: uid, Containers: cs}
	st.Sort()
	return st
}

func inst(id, name string, state podstate.ContainerState, age time.Duration) podstate.Container {
	return podstate.Container{ID: id, Name: name, State: state, CreatedAt: now.Add(-age)}
}

func TestSelectDeadContainers(t *testing.T) {
	x, r, c := podstate.ContainerExited, podstate.ContainerRunning, podstate.ContainerCreated
	crashLoop := gcPod("a",
		inst("a3", "app", r, 1*time.Minute), inst("a2", "app", x, 2*time.Minute),
		inst("a1", "app", x, 3*time.Minute), inst("a0", "app", x, 4*time.Minute))
	other := gcPod("b",
		inst("b1", "web", x, 5*time.Minute), inst("b0", "web", x, 6*time.Minute),
		inst("s0", "side", x, 10*time.Minute), inst("n0", "new", c, 11*time.Minute))
	ids := func(ds []DeadContainer) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Container.ID)
		}
		return out
	}
	tests := []struct {
		name   string
		policy GCPolicy
		want   []string
	}{
		{"default keeps the newest dead instance of each container", DefaultGCPolicy(), []string{"b0", "a0", "a1"}},
		{"no limits keep everything", GCPolicy{MaxPerPodContainer: -1, MaxContainers: -1}, nil},
		{"keep none", GCPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, []string{"s0", "b0", "b1", "a0", "a1", "a2"}},
		{"min age protects the young", GCPolicy{MinAge: 150 * time.Second, MaxPerPodContainer: 0, MaxContainers: -1},
			[]string{"s0", "b0", "b1", "a0", "a1"}},
		// Three containers, two to keep: one each (a2, b1, s0), then the
		// oldest of those (s0) goes too.
		{"node limit: an equal share, then oldest first", GCPolicy{MaxPerPodContainer: -1, MaxContainers: 2},
			[]string{"s0", "b0", "a0", "a1"}},
		{"node limit above the per-container cut", GCPolicy{MaxPerPodContainer: 1, MaxContainers: 3}, []string{"b0", "a0", "a1"}},
	}
	for _, tt := range tests {
		got := ids(SelectDeadContainers([]*podstate.PodStatus{crashLoop, other}, tt.policy, now))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
