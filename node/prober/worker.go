package prober

import "time"

// View is what a worker sees of its container when it wakes: the latest
// instance in the runtime's view, and the pod's state.
type View struct {
	Now time.Time
	// Terminating: the pod is being stopped; nothing is probed any more.
	Terminating bool
	// ID is the latest instance's container ID ("": none yet).
	ID string
	// Running: the instance runs, since StartedAt.
	Running   bool
	StartedAt time.Time
	// Exited: the instance finished (neither Running nor Exited: its state
	// is unknown).
	Exited bool
	// Started: the instance's startup probe succeeded (or it has none).
	Started bool
	// RestartNever: the container will not be started again once it
	// exited (its restart policies say it never runs again).
	RestartNever bool
	// BeforeAgent: the instance was already running before this agent
	// started (it started more than RestartGrace before the agent did).
	BeforeAgent bool
}

// RestartGrace is how long before the agent's start an instance must have
// started to count as one the agent found running when it (re)started, as
// the kubelet's kubeletRestartGracePeriod.
const RestartGrace = 10 * time.Second

// Step is what a worker decides: results to record and whether to probe.
type Step struct {
	// Forget names an earlier instance whose results are dropped.
	Forget string
	// Set: record Result for instance ID.
	Set    bool
	ID     string
	Result Result
	// Probe: run the probe now and feed its outcome to Record.
	Probe bool
	// Stop: the worker is done.
	Stop bool
}

// Worker is the state of one probe worker: the instance it follows, its
// run of equal outcomes and whether it holds after a failure. It does no
// I/O; the Manager feeds it views and probe outcomes.
type Worker struct {
	Type Type
	Spec Spec

	id     string
	onHold bool
	last   Result
	run    int
}

// NewWorker returns a worker for a probe of type t with timing s.
func NewWorker(t Type, s Spec) *Worker { return &Worker{Type: t, Spec: s} }

// Observe decides what to do on a wake-up. A new instance starts from the
// initial verdict with no history (it never inherits its predecessor's
// results), except one that ran before the agent started: it gets no
// verdict until its probe gives one, so the status it had before the
// restart holds meanwhile (the Manager answers from it); a terminating pod's liveness and startup report success and
// its readiness failure; after a liveness or startup failure the worker
// holds until a new instance appears; liveness and readiness wait for the
// startup probe, and the startup probe stops once it succeeded.
func (w *Worker) Observe(v View) Step {
	var st Step
	if v.ID != "" && v.ID != w.id {
		st.Forget = w.id
		if !(v.Running && v.BeforeAgent) {
			st.Set, st.ID, st.Result = true, v.ID, firstVerdict(w)
		}
		w.id, w.onHold, w.last, w.run = v.ID, false, Unknown, 0
	}
	if w.id == "" {
		return st
	}
	if v.Terminating {
		r := Success
		if w.Type == Readiness {
			r = Failure
		}
		return Step{Forget: st.Forget, Set: true, ID: w.id, Result: r}
	}
	if w.onHold {
		return st
	}
	if !v.Running {
		// Only an exited instance has failed for sure; one in an unknown
		// state (a runtime's passing answer) is left as it is.
		if v.Exited {
			st.Set, st.ID, st.Result = true, w.id, Failure
			st.Stop = v.RestartNever
		}
		return st
	}
	if v.Now.Before(v.StartedAt.Add(w.Spec.InitialDelay)) {
		return st
	}
	if (w.Type == Startup) == v.Started {
		return st
	}
	st.Probe = true
	return st
}

// Record takes a probe's outcome for the current instance: a verdict
// changes once failureThreshold failures or successThreshold successes
// come in a row; Unknown (the probe could not run) changes nothing. A
// liveness or startup failure puts the worker on hold.
func (w *Worker) Record(r Result) Step {
	if r == Unknown || w.id == "" {
		return Step{}
	}
	if r == w.last {
		w.run++
	} else {
		w.last, w.run = r, 1
	}
	if r == Failure && w.run < w.Spec.FailureThreshold || r == Success && w.run < w.Spec.SuccessThreshold {
		return Step{}
	}
	if r == Failure && w.Type != Readiness {
		w.onHold, w.run = true, 0
	}
	return Step{Set: true, ID: w.id, Result: r}
}
