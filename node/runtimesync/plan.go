package runtimesync

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/images"
	"github.com/lockstep-dev/lockstep/node/lifecycle"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Plan is one sync of a pod, decided from its Inputs and stepped by the
// outcomes of its calls, in the manner of etcd raft's Ready/Advance: Next
// returns what to do now (events to record, container starts to observe,
// the next call), Report hands the call's outcome back, and the plan
// decides what follows from it. Once Next returns no call, Result holds
// what the sync did. A Plan does no I/O; it is used by one task.
type Plan struct {
	in    Inputs
	acts  Actions
	grace int64
	// restarts are the restarts the crash-loop back-off let go, recorded
	// in it when their start is attempted.
	restarts []restart

	// todo is what is left to do, in order; current is the task whose
	// call awaits its outcome.
	todo    []task
	current *task
	// events and observed wait for the next Step.
	events   []Event
	observed []StartObservation

	sandboxID string
	podIPs    []string
	res       Result
	errs      []error // calls that failed, the sync going on
	err       error   // the failure that ended the sync
}

// task is a call to make and what to decide on its outcome, or (op nil)
// a decision to make when it is reached.
type task struct {
	events []Event
	op     Op
	done   func(Outcome)
}

// Step is what to do now for a Plan.
type Step struct {
	// Events to record, in order, before the call.
	Events []Event
	// Observe lists container start attempts that have ended, for the
	// Observer.
	Observe []StartObservation
	// Op is the call to make and Report the outcome of; nil: the sync is
	// over.
	Op Op
}

// Event is an event to record on the pod (Container "": on the pod
// itself, else on that container's field path).
type Event struct {
	Container string
	Type      string
	Reason    string
	Message   string
}

// StartObservation is how an attempt to start a container ended: Code ""
// when it started, else its waiting reason (Observer.ObserveContainerStart).
type StartObservation struct {
	Init bool
	Code string
}

// Outcome is how a call ended.
type Outcome struct {
	// Err is the call's error; nil: it succeeded.
	Err error
	// ID is the sandbox RunPodSandboxOp ran or the container
	// CreateContainerOp created.
	ID string
	// IP is the pod IP SandboxStatusOp read.
	IP string
	// Message is a failed postStart hook's message.
	Message string
	// Canceled is the sync's context's error when the call returned (a
	// hook cut because the sync was called off).
	Canceled error
}

// Result reports what a sync did and why containers wait.
type Result struct {
	Actions Actions
	// Waiting maps container names to why they are not running.
	Waiting map[string]Waiting
	// Started lists the containers started, in order.
	Started []Started
	// SandboxID is the sandbox the pod's containers run in after the sync.
	SandboxID string
}

// Started is a container instance a sync started.
type Started struct {
	Name string
	ID   string
}

// NewPlan decides the sync of in's pod (ComputeActions) and returns it,
// ready for its first Step. The order: a SandboxChanged event when the
// sandbox is replaced, crash-loop BackOff events; the kill
// of the whole pod, or of the containers that must go (a stale Created
// instance is removed after its kill); then, unless a kill failed or there
// is nothing to start, the sandbox (its config, and for a new one its log
// directory, the sandbox itself and its IP); then each container to start
// in turn: image, config, create, start, postStart hook. A failed call of
// a container makes it wait with the kubelet's reason and the next one
// goes on; a failed kill, sandbox or sandbox config ends the sync.
func NewPlan(in Inputs) *Plan {
	acts := computeActions(in)
	restarts := holdBackedOff(in, &acts)
	p := &Plan{in: in, acts: acts, restarts: restarts, grace: podutil.GracePeriod(in.Pod),
		res: Result{Actions: acts, Waiting: maps.Clone(acts.Waiting)}}
	if p.res.Waiting == nil {
		p.res.Waiting = map[string]Waiting{}
	}
	if acts.CreateSandbox && acts.KillPod {
		// A sandbox replaces the pod's existing one (the kubelet's
		// SyncPod, when computePodActions names a sandbox to replace).
		p.event("", corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
	}
	for _, name := range slices.Sorted(maps.Keys(acts.Waiting)) {
		if acts.Waiting[name].Reason == podutil.ReasonCrashLoopBackOff {
			p.event(name, corev1.EventTypeWarning, "BackOff",
				fmt.Sprintf("Back-off restarting failed container %s in pod %s", name, FormatPod(in.Pod)))
		}
	}
	p.planKills()
	p.then(p.afterKills)
	return p
}

// Actions is what the plan's ComputeActions decided.
func (p *Plan) Actions() Actions { return p.acts }

// Next returns what to do now. While a call awaits its outcome, Next
// returns that call again (with nothing to record).
func (p *Plan) Next() Step {
	for p.current == nil && len(p.todo) > 0 {
		t := p.todo[0]
		p.todo = p.todo[1:]
		p.events = append(p.events, t.events...)
		if t.op == nil {
			t.done(Outcome{})
			continue
		}
		p.current = &t
	}
	s := Step{Events: p.events, Observe: p.observed}
	p.events, p.observed = nil, nil
	if p.current != nil {
		s.Op = p.current.op
	}
	return s
}

// Report hands the outcome of the call Next returned to the plan.
func (p *Plan) Report(o Outcome) {
	t := p.current
	if t == nil {
		panic("runtimesync: Report without a call in progress")
	}
	p.current = nil
	t.done(o)
}

// Result is what the sync did and its error, once Next returns no call.
func (p *Plan) Result() (Result, error) {
	if p.err != nil {
		return p.res, p.err
	}
	return p.res, errors.Join(p.errs...)
}

// planKills plans the kill of the whole pod or of the containers that
// must go.
func (p *Plan) planKills() {
	pod := p.in.Pod
	if p.acts.KillPod {
		p.call(KillPodOp{Grace: p.grace}, func(o Outcome) {
			if o.Err != nil {
				p.abort(fmt.Errorf("kill pod %s/%s before re-creating it: %w", pod.Namespace, pod.Name, o.Err))
			}
		})
		return
	}
	for _, k := range p.acts.Kill {
		msg, grace := k.Message, p.grace
		if msg == "" {
			msg = fmt.Sprintf("Stopping container %s", k.Name)
		}
		if k.Grace != nil {
			grace = *k.Grace
		}
		victim, ok := p.in.Status.Instance(k.ID)
		if !ok {
			victim = podstate.Container{ID: k.ID, Name: k.Name}
		}
		op := KillContainerOp{ID: k.ID, Name: k.Name, Reason: k.Reason, Grace: grace, PodIP: sandboxIP(p.in.Status, victim.SandboxID)}
		p.todo = append(p.todo, task{events: []Event{{k.Name, corev1.EventTypeNormal, "Killing", msg}}, op: op, done: func(o Outcome) {
			if o.Err != nil {
				p.fail(fmt.Errorf("kill container %q of pod %s/%s: %w", k.Name, pod.Namespace, pod.Name, o.Err))
				return
			}
			if k.Remove {
				p.callNext(RemoveContainerOp{ID: k.ID, Name: k.Name, RestartCount: victim.RestartCount}, func(o Outcome) {
					if o.Err != nil {
						p.fail(fmt.Errorf("remove stale container %q (%s) of pod %s/%s: %w", k.Name, k.ID, pod.Namespace, pod.Name, o.Err))
					}
				})
			}
		}})
	}
}

// afterKills ends the sync when a kill failed or nothing is to start,
// else plans the sandbox.
func (p *Plan) afterKills() {
	if len(p.errs) > 0 {
		p.abort(errors.Join(p.errs...))
		return
	}
	if p.acts.InitFailed || p.in.Terminal || len(p.acts.Start) == 0 && !p.acts.CreateSandbox {
		p.res.SandboxID = p.acts.SandboxID
		return
	}
	p.planSandbox()
}

// planSandbox plans the sandbox the containers start in: a new one, or
// the newest one (its attempt and IP).
func (p *Plan) planSandbox() {
	pod, acts := p.in.Pod, p.acts
	attempt := acts.Attempt
	p.sandboxID = acts.SandboxID
	if sb, ok := p.in.Status.LatestSandbox(); ok && !acts.CreateSandbox {
		attempt = sb.Attempt
		if sb.IP != "" {
			p.podIPs = []string{sb.IP}
		}
	}
	p.call(SandboxConfigOp{Attempt: attempt}, func(o Outcome) {
		if o.Err == nil {
			return
		}
		if acts.CreateSandbox {
			// The kubelet builds the config as it creates the sandbox: its
			// failure is the creation's (event, ContainerCreating).
			p.sandboxFailed(sandboxConfigCause(o.Err))
		}
		if _, named := errors.AsType[*podspec.SandboxConfigError](o.Err); named {
			p.abort(o.Err)
			return
		}
		p.abort(fmt.Errorf("sandbox config of pod %s/%s: %w", pod.Namespace, pod.Name, o.Err))
	})
	switch {
	case acts.CreateSandbox:
		dir := podspec.LogDirectory(p.in.Node.PodLogsRoot, podspec.RefOf(pod))
		p.call(LogDirectoryOp{Path: dir}, func(o Outcome) {
			if o.Err != nil {
				p.abort(fmt.Errorf("create log directory %s of pod %s/%s: %w", dir, pod.Namespace, pod.Name, o.Err))
			}
		})
		p.call(RunPodSandboxOp{Attempt: attempt, Reason: acts.SandboxReason}, p.sandboxRan)
	case podspec.WantsUserNamespace(pod):
		// The running sandbox's user namespace, for its new containers.
		p.call(UserNamespaceOp{}, func(o Outcome) {
			if o.Err != nil {
				p.abort(o.Err)
			}
		})
	}
	p.then(p.planStarts)
}

// sandboxFailed reports a sandbox that could not be created for cause:
// a FailedCreatePodSandBox event "Failed to create pod sandbox: <cause>"
// (the kubelet's, every sync that tries) and every container to start
// waiting in ContainerCreating.
func (p *Plan) sandboxFailed(cause error) {
	p.event("", corev1.EventTypeWarning, "FailedCreatePodSandBox", fmt.Sprintf("Failed to create pod sandbox: %v", cause))
	for _, s := range p.acts.Start {
		p.res.Waiting[s.Name] = Waiting{Reason: podutil.ReasonContainerCreating}
	}
}

// sandboxConfigCause is a sandbox config error as the kubelet words it
// in its event: the cause alone, without lockstep's naming of the pod.
func sandboxConfigCause(err error) error {
	if sce, ok := errors.AsType[*podspec.SandboxConfigError](err); ok {
		return sce.Cause
	}
	return err
}

// sandboxRan follows RunPodSandboxOp: on failure every container to
// start waits in ContainerCreating and the sync ends; else the new
// sandbox's IP is read.
func (p *Plan) sandboxRan(o Outcome) {
	pod := p.in.Pod
	if o.Err != nil {
		p.sandboxFailed(o.Err)
		p.abort(fmt.Errorf("create sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, o.Err))
		return
	}
	p.sandboxID = o.ID
	p.callNext(SandboxStatusOp{ID: o.ID}, func(o Outcome) {
		if o.Err == nil && o.IP != "" {
			p.podIPs = []string{o.IP}
		}
	})
}

// planStarts plans the start of each container in turn.
func (p *Plan) planStarts() {
	p.res.SandboxID = p.sandboxID
	for _, s := range p.acts.Start {
		c := containerSpec(p.in.Pod, s)
		if c == nil {
			continue
		}
		for _, r := range p.restarts {
			if r.name == s.Name {
				r.record(p.in)
			}
		}
		p.call(EnsureImageOp{Container: s, Image: c.Image}, func(o Outcome) { p.imageEnsured(s, c, o) })
	}
}

// imageEnsured follows EnsureImageOp: the container waits with the image
// manager's reason, or its config is built.
func (p *Plan) imageEnsured(s ContainerStart, c *corev1.Container, o Outcome) {
	pod := p.in.Pod
	if o.Err != nil {
		w := Waiting{Reason: podutil.ReasonErrImagePull, Message: o.Err.Error()}
		var ierr *images.Error
		if errors.As(o.Err, &ierr) {
			w = Waiting{Reason: ierr.Reason, Message: ierr.Message}
			p.event(s.Name, corev1.EventTypeWarning, "Failed", "Error: "+ierr.Reason)
		}
		p.wait(s, w, fmt.Errorf("image %q for container %q of pod %s/%s: %w", c.Image, c.Name, pod.Namespace, pod.Name, o.Err))
		return
	}
	op := ContainerConfigOp{Container: s, PodIPs: p.podIPs}
	if s.Ephemeral {
		op.TargetID = targetID(pod, p.in.Status, s.Index)
	}
	p.callNext(op, func(o Outcome) {
		if o.Err != nil {
			p.failedWithMessage(s, podutil.ReasonCreateContainerConfigError, podspec.UserMessage(o.Err), o.Err)
			return
		}
		p.callNext(CreateContainerOp{Container: s, SandboxID: p.sandboxID}, func(o Outcome) { p.created(s, c, o) })
	})
}

// created follows CreateContainerOp: the container waits in
// CreateContainerError, or is started.
func (p *Plan) created(s ContainerStart, c *corev1.Container, o Outcome) {
	pod := p.in.Pod
	if o.Err != nil {
		p.failedWithMessage(s, podutil.ReasonCreateContainerError, criMessage(o.Err),
			fmt.Errorf("create container %q of pod %s/%s: %w", s.Name, pod.Namespace, pod.Name, o.Err))
		return
	}
	id := o.ID
	created := Event{s.Name, corev1.EventTypeNormal, "Created", "Container created"}
	p.todo = append([]task{{events: []Event{created}, op: StartContainerOp{Container: s, ID: id}, done: func(o Outcome) {
		if o.Err != nil {
			p.failedWithMessage(s, podutil.ReasonRunContainerError, criMessage(o.Err),
				fmt.Errorf("start container %q of pod %s/%s: %w", s.Name, pod.Namespace, pod.Name, o.Err))
			return
		}
		p.event(s.Name, corev1.EventTypeNormal, "Started", "Container started")
		p.res.Started = append(p.res.Started, Started{Name: s.Name, ID: id})
		if lifecycle.PostStart(c) == nil {
			p.observe(s, "")
			return
		}
		p.callNext(PostStartOp{Container: s, ID: id, PodIP: p.podIP()}, func(o Outcome) { p.postStarted(s, id, o) })
	}}}, p.todo...)
}

// postStarted follows PostStartOp: a failed hook kills the new instance
// (it restarts under its back-off) and the container waits in
// PostStartHookError; a hook cut because the sync was called off (the pod
// is being deleted) did not fail: the termination stops the container.
func (p *Plan) postStarted(s ContainerStart, id string, o Outcome) {
	pod := p.in.Pod
	switch {
	case o.Err == nil:
		p.observe(s, "")
		return
	case o.Canceled != nil:
		p.wait(s, Waiting{Reason: podutil.ReasonContainerCreating},
			fmt.Errorf("postStart hook of container %q of pod %s/%s cut: %w", s.Name, pod.Namespace, pod.Name, o.Canceled))
		return
	}
	err := fmt.Errorf("postStart hook of container %q of pod %s/%s: %w", s.Name, pod.Namespace, pod.Name, o.Err)
	w := Waiting{Reason: podutil.ReasonPostStartHookError, Message: o.Message}
	kill := task{
		events: []Event{
			{s.Name, corev1.EventTypeWarning, lifecycle.ReasonFailedPostStartHook, lifecycle.MessageFailedPostStart},
			{s.Name, corev1.EventTypeNormal, "Killing", lifecycle.ReasonFailedPostStartHook},
		},
		op: KillContainerOp{ID: id, Name: s.Name, Reason: lifecycle.ReasonFailedPostStartHook, Grace: p.grace, PodIP: p.podIP()},
		done: func(k Outcome) {
			if k.Err != nil {
				err = errors.Join(err, fmt.Errorf("kill container %q of pod %s/%s after its postStart hook failed: %w", s.Name, pod.Namespace, pod.Name, k.Err))
			}
			p.wait(s, w, err)
		},
	}
	p.todo = append([]task{kill}, p.todo...)
}

// criMessage is what the kubelet tells of a failed CRI call: the gRPC
// status's own message (grpcstatus.FromError(err).Message()), without
// the "rpc error: code = … desc = " prefix or lockstep's context; a
// plain error's text.
func criMessage(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		if st := se.GRPCStatus(); st != nil {
			return st.Message()
		}
	}
	return err.Error()
}

// failedWithMessage makes s wait with reason and message, with the
// kubelet's Failed event ("Error: <message>"), and records err.
func (p *Plan) failedWithMessage(s ContainerStart, reason, message string, err error) {
	p.event(s.Name, corev1.EventTypeWarning, "Failed", "Error: "+message)
	p.wait(s, Waiting{Reason: reason, Message: message}, err)
}

// wait makes s wait for w, observes the failed start and records err.
func (p *Plan) wait(s ContainerStart, w Waiting, err error) {
	p.observe(s, w.Reason)
	p.res.Waiting[s.Name] = w
	p.fail(err)
}

// podIP is the pod's IP, "" for a host-network pod or before it has one.
func (p *Plan) podIP() string {
	if len(p.podIPs) > 0 {
		return p.podIPs[0]
	}
	return ""
}

// call appends a call and what follows its outcome.
func (p *Plan) call(op Op, done func(Outcome)) {
	p.todo = append(p.todo, task{op: op, done: done})
}

// callNext makes a call the next thing to do.
func (p *Plan) callNext(op Op, done func(Outcome)) {
	p.todo = append([]task{{op: op, done: done}}, p.todo...)
}

// then appends a decision made when everything before it is done.
func (p *Plan) then(f func()) {
	p.todo = append(p.todo, task{done: func(Outcome) { f() }})
}

// abort ends the sync with err.
func (p *Plan) abort(err error) {
	p.err = err
	p.todo = nil
}

// fail records a failed call; the sync goes on.
func (p *Plan) fail(err error) { p.errs = append(p.errs, err) }

func (p *Plan) event(container, eventType, reason, message string) {
	p.events = append(p.events, Event{Container: container, Type: eventType, Reason: reason, Message: message})
}

func (p *Plan) observe(s ContainerStart, code string) {
	p.observed = append(p.observed, StartObservation{Init: s.Init, Code: code})
}
