// Package lifecycle runs containers' lifecycle hooks: postStart right
// after a container started, preStop before it is stopped, within the
// grace period. Exec and HTTP handlers go through the probes' runner
// (prober.Runner: CRI ExecSync and the probe network), sleep handlers
// through the injected tasks' clock, so the same hooks run on a real
// node and, deterministically, in the simulator.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/prober"
)

// UserAgent is the User-Agent of HTTP hooks, as the kubelet's.
const UserAgent = "kube-lifecycle/1.37"

// The event reasons of failed hooks, as the kubelet's. Their messages
// never carry the hook's output (it may hold secrets): that goes to the
// container's waiting state and the log.
const (
	ReasonFailedPostStartHook = "FailedPostStartHook"
	ReasonFailedPreStopHook   = "FailedPreStopHook"
	MessageFailedPostStart    = "PostStartHook failed"
	MessageFailedPreStop      = "PreStopHook failed"
)

// errSleepCut is the error of a sleep hook whose context ended first.
var errSleepCut = errors.New("container terminated before sleep hook finished")

// Target is the container a hook runs against (its pod IP is the default
// host of an HTTP hook).
type Target = prober.Target

// Runner runs lifecycle hooks.
type Runner struct {
	tasks    deps.Tasks
	clock    deps.Clock
	handlers *prober.Runner
}

// New returns a Runner that execs through exec and sends HTTP GETs
// through net (nil: HTTP hooks fail).
func New(d deps.Core, exec prober.Execer, net deps.ProbeNetwork) *Runner {
	return &Runner{tasks: d.Tasks, clock: d.Clock,
		handlers: &prober.Runner{Execer: exec, Net: net, Clock: d.Clock}}
}

// ContainerOf returns pod's container (regular or init) named name; nil
// when there is none (or no pod).
func ContainerOf(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// PostStart returns c's postStart handler (nil: none).
func PostStart(c *corev1.Container) *corev1.LifecycleHandler {
	if c == nil || c.Lifecycle == nil {
		return nil
	}
	return c.Lifecycle.PostStart
}

// PreStop returns the preStop handler of pod's container name (nil: none).
func PreStop(pod *corev1.Pod, name string) *corev1.LifecycleHandler {
	if c := ContainerOf(pod, name); c != nil && c.Lifecycle != nil {
		return c.Lifecycle.PreStop
	}
	return nil
}

// Run runs handler h against t until it ends or ctx does. A failed hook
// returns the kubelet's message for it (it names the hook, the container
// and the pod, and carries the hook's error and output) and its error.
func (r *Runner) Run(ctx context.Context, h *corev1.LifecycleHandler, t Target) (string, error) {
	switch {
	case h.Exec != nil:
		o, err := r.handlers.Exec(ctx, h.Exec.Command, 0, t)
		if err == nil && o.Result != prober.Success {
			err = o.Err
			if err == nil {
				err = errors.New(o.Output)
			}
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, t.Container.Name, podDesc(t.Pod), err, o.Output), err
		}
		return "", nil
	case h.HTTPGet != nil:
		o, err := r.handlers.HTTPGet(ctx, h.HTTPGet, t, UserAgent)
		if err == nil && !o.Responded {
			// Any response will do, whatever its status, as upstream.
			err = o.Err
			if err == nil {
				err = errors.New(o.Output)
			}
		}
		if err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, t.Container.Name, podDesc(t.Pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := r.tasks.Sleep(ctx, time.Duration(h.Sleep.Seconds)*time.Second); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, t.Container.Name, podDesc(t.Pod), errSleepCut), errSleepCut
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// PreStopResult is how a preStop hook ended.
type PreStopResult struct {
	// Waited is how long the caller waited for the hook.
	Waited time.Duration
	// Cut: the hook outlived its grace period and was abandoned.
	Cut bool
	// Message and Err describe a hook that ended in time and failed.
	Message string
	Err     error
}

// RunPreStop runs preStop handler h against t as a task of its own and
// waits for it at most grace seconds: a hook that outlives the grace
// period is abandoned, not stopped, so that the container is still
// stopped in time while the hook runs on until it ends by itself, the
// container's stop ends it (an exec hook) or ctx ends — as the kubelet
// leaves its hook running: a looping preStop hook lives the grace period
// and the stop's minimum window after it. name names the task.
func (r *Runner) RunPreStop(ctx context.Context, name string, h *corev1.LifecycleHandler, t Target, grace int64) PreStopResult {
	type outcome struct {
		msg string
		err error
	}
	start := r.clock.Now()
	hookCtx := ctx
	if preStopCutAtGrace {
		var cancel context.CancelFunc
		hookCtx, cancel = r.tasks.WithCancel(ctx)
		defer cancel()
	}
	done := deps.NewInbox[outcome](r.tasks, "prestop "+name)
	r.tasks.Go("prestop "+name, func() {
		msg, err := r.Run(hookCtx, h, t)
		done.Put(outcome{msg, err})
	})
	wait, stop := r.clock.WithTimeout(ctx, time.Duration(grace)*time.Second)
	defer stop()
	o, err := done.Get(wait)
	res := PreStopResult{Waited: r.clock.Since(start)}
	if err != nil {
		res.Cut = true
		return res
	}
	res.Message, res.Err = o.msg, o.err
	return res
}

// RemainingGrace is what is left of grace seconds after waiting waited
// for a preStop hook, in whole seconds (the time waited is truncated, as
// upstream), at least min.
func RemainingGrace(grace int64, waited time.Duration, min int64) int64 {
	return max(grace-int64(waited/time.Second), min)
}

// podDesc is how the kubelet names a pod in hook messages:
// name_namespace(uid).
func podDesc(pod *corev1.Pod) string {
	if pod == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
