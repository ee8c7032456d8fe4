package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNormaliser(t *testing.T) {
	n := newNormaliser("diff-kubelet", "crash-k")
	n.addUID("0b6c3c1e-8f2a-4f0e-9a53-2d1a3c4b5e6f")
	for _, tc := range []struct{ in, want string }{
		{"back-off 10s restarting failed container=app pod=crash_crash-k(0b6c3c1e-8f2a-4f0e-9a53-2d1a3c4b5e6f)",
			"back-off 10s restarting failed container=app pod=crash_<ns>(<uid>)"},
		{"containerd://" + strings.Repeat("ab", 32), "containerd://<id>"},
		{"Successfully assigned to diff-kubelet at 2026-12-02T17:01:02.123456Z", "Successfully assigned to <node> at <time>"},
		{"dial tcp 10.88.0.7:8080: connect: connection refused", "dial tcp <ip>:<port>: connect: connection refused"},
		{"nameserver 10.96.0.10", "nameserver 10.96.0.10"},
		{"other pod 11111111-2222-3333-4444-555555555555", "other pod <uid>"},
		{"", ""},
	} {
		if got := n.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func obs(at time.Duration, phase string) Observed[PodState] {
	return Observed[PodState]{At: at, State: PodState{Phase: phase}}
}

func TestCompareTimelines(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		k, l []Observed[PodState]
		want []string // What of each difference
	}{
		{name: "same within tolerance", k: []Observed[PodState]{obs(0, "Pending"), obs(3*s, "Running")},
			l: []Observed[PodState]{obs(0, "Pending"), obs(5*s, "Running")}},
		{name: "late transition", k: []Observed[PodState]{obs(0, "Pending"), obs(3*s, "Running")},
			l:    []Observed[PodState]{obs(0, "Pending"), obs(13*s, "Running")},
			want: []string{"same state 10.0s apart (tolerance 2.5s): Running"}},
		{name: "extra state on lockstep", k: []Observed[PodState]{obs(0, "Pending"), obs(3*s, "Running")},
			l:    []Observed[PodState]{obs(0, "Pending"), obs(2*s, "Unknown"), obs(3*s, "Running")},
			want: []string{"state only on lockstep"}},
		{name: "transient extra state on lockstep", k: []Observed[PodState]{obs(0, "Pending"), obs(3*s, "Running")},
			l:    []Observed[PodState]{obs(0, "Pending"), obs(3*s, "Unknown"), obs(3*s+8*time.Millisecond, "Running")},
			want: []string{"state only on lockstep (transient: 8 ms)"}},
		{name: "missing on lockstep", k: []Observed[PodState]{obs(0, "Pending"), obs(3*s, "Failed")},
			l:    []Observed[PodState]{obs(0, "Pending")},
			want: []string{"state only on kubelet"}},
	} {
		var got []string
		for _, d := range compareTimelines("pod p", tc.k, tc.l, TransitionTolerance) {
			got = append(got, d.What)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestFieldDiffNamesTheFields(t *testing.T) {
	a := PodState{Phase: "Running", Containers: []ContainerState{{Name: "app", State: "running", Ready: true}}}
	b := PodState{Phase: "Running", Containers: []ContainerState{{Name: "app", State: "running", Ready: false}}}
	if got, want := fieldDiff(a, b, true), "containers[app].ready=true"; got != want {
		t.Errorf("fieldDiff mine = %q, want %q", got, want)
	}
	if got, want := fieldDiff(a, b, false), "containers[app].ready=false"; got != want {
		t.Errorf("fieldDiff other = %q, want %q", got, want)
	}
}

func TestCompareEvents(t *testing.T) {
	ev := func(reason string, count int32, first time.Duration) EventRecord {
		return EventRecord{Object: "Pod/p", Type: "Normal", Reason: reason, Message: "m", Count: count, First: first}
	}
	s := time.Second
	got := compareEvents(
		[]EventRecord{ev("Pulled", 1, s), ev("BackOff", 8, 10*s), ev("Started", 1, s), ev("Killing", 1, 20*s)},
		[]EventRecord{ev("Pulled", 1, 2*s), ev("BackOff", 7, 11*s), ev("Started", 2, s), ev("Created", 1, s)},
	)
	var whats []string
	for _, d := range got {
		whats = append(whats, d.Where+": "+d.What)
	}
	want := []string{
		"events of Pod/p: event only on lockstep", // Created
		"events of Pod/p: event only on kubelet",  // Killing
		"events of Pod/p: event count",            // Started 1 vs 2
	}
	if diff := cmp.Diff(want, whats); diff != "" {
		t.Errorf("compareEvents (-want +got):\n%s", diff)
	}
}

func TestCompareResults(t *testing.T) {
	got := compareResults(
		[]Result{{Label: "files", Text: "a\nb\nc"}, {Label: "logs", Text: "x"}},
		[]Result{{Label: "files", Text: "a\nB\nc"}, {Label: "logs", Text: "x"}, {Label: "exec", Text: "exit 0"}},
	)
	want := []Difference{
		{Where: "exec", What: "result only on lockstep", Kubelet: "(none)", Lockstep: "exit 0"},
		{Where: "files", What: "differs", Kubelet: "b", Lockstep: "B"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compareResults (-want +got):\n%s", diff)
	}
}

// TestKindsCountsTransientStates: the table's count of a scenario's
// differences says how many of its states were transient.
func TestKindsCountsTransientStates(t *testing.T) {
	ds := []Difference{
		{Where: "pod p", What: "state only on lockstep (transient: 8 ms)"},
		{Where: "pod p", What: "state only on kubelet"},
		{Where: "events of Pod/p", What: "event only on lockstep"},
	}
	if diff := cmp.Diff("2 states (1 transient), 1 events, 0 files/logs/exec", kinds(ds)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("1 states, 0 events, 0 files/logs/exec", kinds(ds[1:2])); diff != "" {
		t.Errorf("kinds without transient states (-want +got):\n%s", diff)
	}
}
