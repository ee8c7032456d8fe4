package unseen

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func view(ids ...string) *podstate.PodStatus {
	st := &podstate.PodStatus{UID: "p"}
	for _, id := range ids {
		st.Containers = append(st.Containers, podstate.Container{ID: id, Name: "c-" + id, State: podstate.ContainerRunning})
	}
	return st
}

func TestStale(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name        string
		started     []Container
		view        *podstate.PodStatus
		at          time.Duration // after t0
		wantStale   bool
		wantGivenUp []Container
		wantAfter   bool // still stale when asked again with the same view
	}{
		{name: "nothing started", view: view(), wantStale: false},
		{name: "started and seen", started: []Container{{"app", "1"}}, view: view("1"), wantStale: false},
		{name: "started, not seen: stale", started: []Container{{"app", "1"}}, view: view(), at: time.Second,
			wantStale: true, wantAfter: true},
		{name: "one of two seen: stale", started: []Container{{"app", "1"}, {"side", "2"}}, view: view("2"),
			at: time.Second, wantStale: true, wantAfter: true},
		{name: "another instance of the name does not count", started: []Container{{"app", "2"}}, view: view("1"),
			wantStale: true, wantAfter: true},
		{name: "seen only Created (a view older than the start): stale", started: []Container{{"app", "1"}},
			view: func() *podstate.PodStatus {
				st := view("1")
				st.Containers[0].State = podstate.ContainerCreated
				return st
			}(), at: time.Second, wantStale: true, wantAfter: true},
		{name: "seen exited: not stale", started: []Container{{"app", "1"}},
			view: func() *podstate.PodStatus {
				st := view("1")
				st.Containers[0].State = podstate.ContainerExited
				return st
			}(), wantStale: false},
		{name: "given up after the timeout", started: []Container{{"app", "1"}}, view: view(), at: Timeout + time.Second,
			wantStale: false, wantGivenUp: []Container{{"app", "1"}}},
		{name: "exactly the timeout: still waiting", started: []Container{{"app", "1"}}, view: view(), at: Timeout,
			wantStale: true, wantAfter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := New()
			tr.Expect("p", t0, tt.started...)
			stale, givenUp := tr.Stale("p", tt.view, t0.Add(tt.at))
			if stale != tt.wantStale {
				t.Errorf("stale = %v, want %v", stale, tt.wantStale)
			}
			if diff := cmp.Diff(tt.wantGivenUp, givenUp); diff != "" {
				t.Errorf("given up (-want +got):\n%s", diff)
			}
			if again, _ := tr.Stale("p", tt.view, t0.Add(tt.at)); again != tt.wantAfter {
				t.Errorf("asked again: stale = %v, want %v", again, tt.wantAfter)
			}
		})
	}
}

func TestWithUnseen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := New()
	st := view("1")
	if got := tr.WithUnseen("p", st); got != st {
		t.Errorf("nothing expected: the view is not returned as is")
	}
	tr.Expect("p", t0, Container{"b", "3"}, Container{"a", "2"}, Container{"seen", "1"})
	got := tr.WithUnseen("p", st)
	want := view("1")
	want.Containers = append(want.Containers,
		podstate.Container{ID: "2", Name: "a", State: podstate.ContainerUnknown},
		podstate.Container{ID: "3", Name: "b", State: podstate.ContainerUnknown})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithUnseen (-want +got):\n%s", diff)
	}
	if len(st.Containers) != 1 {
		t.Errorf("WithUnseen changed the caller's view: %d containers", len(st.Containers))
	}
	tr.Forget("p")
	if got := tr.WithUnseen("p", st); got != st {
		t.Errorf("a forgotten pod still has unseen containers")
	}
}
