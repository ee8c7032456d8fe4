package prober

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// transcript drives a worker through lines of input and records what it
// decided, one line per input:
//
//	see <id> running|exited|none [unstarted] [terminating] [never] [before] @<seconds>
//	probe success|failure|unknown
func transcript(w *Worker, in string) string {
	var out []string
	epoch := time.Unix(0, 0)
	for _, line := range strings.Split(strings.TrimSpace(in), "\n") {
		f := strings.Fields(line)
		var st Step
		switch f[0] {
		case "see":
			v := View{ID: f[1], Started: true, StartedAt: epoch}
			if v.ID == "-" {
				v.ID = ""
			}
			v.Running, v.Exited = f[2] == "running", f[2] == "exited"
			for _, o := range f[3:] {
				switch {
				case o == "unstarted":
					v.Started = false
				case o == "terminating":
					v.Terminating = true
				case o == "never":
					v.RestartNever = true
				case o == "before":
					v.BeforeAgent = true
				case strings.HasPrefix(o, "@"):
					var s int
					fmt.Sscan(o[1:], &s)
					v.Now = epoch.Add(time.Duration(s) * time.Second)
				}
			}
			st = w.Observe(v)
		case "probe":
			r := map[string]Result{"success": Success, "failure": Failure, "unknown": Unknown}[f[1]]
			st = w.Record(r)
		}
		out = append(out, line+" -> "+fmtStep(st))
	}
	return strings.Join(out, "\n")
}

func fmtStep(st Step) string {
	var parts []string
	if st.Forget != "" {
		parts = append(parts, "forget "+st.Forget)
	}
	if st.Set {
		parts = append(parts, "set "+st.ID+"="+st.Result.String())
	}
	if st.Probe {
		parts = append(parts, "probe")
	}
	if st.Stop {
		parts = append(parts, "stop")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func TestWorkerTranscripts(t *testing.T) {
	spec := Spec{InitialDelay: 5 * time.Second, Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 2, FailureThreshold: 3}
	for _, tc := range []struct {
		name string
		typ  Type
		spec Spec
		in   string
		want string
	}{{
		name: "readiness: initial failure, initial delay, success threshold",
		typ:  Readiness, spec: spec,
		in: `
see - none @0
see c1 running @1
see c1 running @5
probe success
see c1 running @15
probe success
probe failure
probe failure
probe failure`,
		want: `
see - none @0 -> -
see c1 running @1 -> set c1=failure
see c1 running @5 -> probe
probe success -> -
see c1 running @15 -> probe
probe success -> set c1=success
probe failure -> -
probe failure -> -
probe failure -> set c1=failure`,
	}, {
		name: "liveness: initial success, hold after failure until a new instance with no history",
		typ:  Liveness, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 2},
		in: `
see c1 running @0
probe failure
probe failure
see c1 running @30
see c1 exited @31
see c2 running @32
probe failure
probe success`,
		want: `
see c1 running @0 -> set c1=success, probe
probe failure -> -
probe failure -> set c1=failure
see c1 running @30 -> -
see c1 exited @31 -> -
see c2 running @32 -> forget c1, set c2=success, probe
probe failure -> -
probe success -> set c2=success`,
	}, {
		name: "readiness: a new instance never inherits the old one's run (#141473)",
		typ:  Readiness, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 3, FailureThreshold: 1},
		in: `
see c1 running @0
probe success
probe success
see c2 running @20
probe success
probe success
probe success`,
		want: `
see c1 running @0 -> set c1=failure, probe
probe success -> -
probe success -> -
see c2 running @20 -> forget c1, set c2=failure, probe
probe success -> -
probe success -> -
probe success -> set c2=success`,
	}, {
		name: "liveness and readiness wait for startup; startup stops once started",
		typ:  Liveness, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 1},
		in: `
see c1 running unstarted @0
see c1 running @10`,
		want: `
see c1 running unstarted @0 -> set c1=success
see c1 running @10 -> probe`,
	}, {
		name: "startup: initial unknown, probes until started",
		typ:  Startup, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 2},
		in: `
see c1 running unstarted @0
probe failure
probe success
see c1 running @10`,
		want: `
see c1 running unstarted @0 -> set c1=unknown, probe
probe failure -> -
probe success -> set c1=success
see c1 running @10 -> -`,
	}, {
		name: "unknown outcomes change nothing",
		typ:  Readiness, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 2},
		in: `
see c1 running @0
probe failure
probe unknown
probe success`,
		want: `
see c1 running @0 -> set c1=failure, probe
probe failure -> -
probe unknown -> -
probe success -> set c1=success`,
	}, {
		name: "terminating: readiness fails and nothing is probed",
		typ:  Readiness, spec: spec,
		in: `
see c1 running @0
see c1 running terminating @20`,
		want: `
see c1 running @0 -> set c1=failure
see c1 running terminating @20 -> set c1=failure`,
	}, {
		name: "terminating: liveness succeeds even on hold",
		typ:  Liveness, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 1},
		in: `
see c1 running @0
probe failure
see c1 running terminating @20`,
		want: `
see c1 running @0 -> set c1=success, probe
probe failure -> set c1=failure
see c1 running terminating @20 -> set c1=success`,
	}, {
		name: "an instance in an unknown state changes nothing",
		typ:  Liveness, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 1},
		in: `
see c1 running @0
see c1 unknown @10
see c1 running @20`,
		want: `
see c1 running @0 -> set c1=success, probe
see c1 unknown @10 -> -
see c1 running @20 -> probe`,
	}, {
		name: "exited for good under restartPolicy Never: failure, and the worker stops",
		typ:  Readiness, spec: spec,
		in: `
see c1 running @0
see c1 exited never @10`,
		want: `
see c1 running @0 -> set c1=failure
see c1 exited never @10 -> set c1=failure, stop`,
	}, {
		name: "readiness: an instance that ran before the agent gets no verdict until its probe gives one",
		typ:  Readiness, spec: spec,
		in: `
see c1 running before @100
probe failure
probe failure
probe success
see c1 running before @110
probe success
probe failure
probe failure
probe failure`,
		want: `
see c1 running before @100 -> probe
probe failure -> -
probe failure -> -
probe success -> -
see c1 running before @110 -> probe
probe success -> set c1=success
probe failure -> -
probe failure -> -
probe failure -> set c1=failure`,
	}, {
		name: "liveness and startup: no verdict for an instance that ran before the agent; a later instance starts as usual",
		typ:  Startup, spec: Spec{Period: 10 * time.Second, SuccessThreshold: 1, FailureThreshold: 1},
		in: `
see c1 running before @100
see c1 exited before @110
see c2 running unstarted @120`,
		want: `
see c1 running before @100 -> -
see c1 exited before @110 -> set c1=failure
see c2 running unstarted @120 -> forget c1, set c2=unknown, probe`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := transcript(NewWorker(tc.typ, tc.spec), tc.in)
			if diff := cmp.Diff(strings.TrimSpace(tc.want), got); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpecOfDefaults(t *testing.T) {
	got := SpecOf(&corev1.Probe{SuccessThreshold: 5}, Liveness)
	want := Spec{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}
