// Package scenarios drives the complete agent inside the simulator: the
// lifecycle scenarios the agent must pass deterministically, property-based
// scenarios (rapid) that hammer it with faults, and the invariant checkers
// (named as in the project's invariants note) they share.
package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodOption shapes a test pod.
type PodOption func(*corev1.Pod)

// NewPod returns a pod in namespace "default" bound to node, with one
// busybox container "app" that runs forever unless options say otherwise.
func NewPod(name, node string, opts ...PodOption) *corev1.Pod {
	grace := int64(30)
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Env sets an environment variable on a container (created if missing).
func Env(container, key, value string) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		c.Env = append(c.Env, corev1.EnvVar{Name: key, Value: value})
	}
}

// Exits makes container exit with code after d of running.
func Exits(container string, after time.Duration, code int) PodOption {
	return func(p *corev1.Pod) {
		Env(container, "FAKECRI_EXIT_AFTER", after.String())(p)
		Env(container, "FAKECRI_EXIT_CODE", fmt.Sprint(code))(p)
	}
}

// IgnoresSIGTERM makes container ignore SIGTERM: only the grace period's end
// stops it.
func IgnoresSIGTERM(container string) PodOption {
	return Env(container, "FAKECRI_IGNORE_SIGTERM", "true")
}

// StopsAfter makes container take d to exit on SIGTERM.
func StopsAfter(container string, d time.Duration) PodOption {
	return Env(container, "FAKECRI_STOP_DELAY", d.String())
}

// GrowsMemory makes container use start bytes growing by rate (e.g.
// "1Mi/s") under a memory limit: the fake runtime OOM-kills it at the limit.
func GrowsMemory(container, start, rate, limit string) PodOption {
	return func(p *corev1.Pod) {
		Env(container, "FAKECRI_MEMORY", start)(p)
		Env(container, "FAKECRI_MEMORY_GROWTH", rate)(p)
		c := findOrAdd(p, container)
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse(limit)
	}
}

// Restart sets the pod's restart policy.
func Restart(policy corev1.RestartPolicy) PodOption {
	return func(p *corev1.Pod) { p.Spec.RestartPolicy = policy }
}

// Grace sets the pod's termination grace period.
func Grace(seconds int64) PodOption {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &seconds }
}

// Container adds a regular container.
func Container(name string) PodOption {
	return func(p *corev1.Pod) { findOrAdd(p, name) }
}

// Init adds an init container that exits with code after d.
func Init(name string, after time.Duration, code int) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: name, Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
			Env: []corev1.EnvVar{
				{Name: "FAKECRI_EXIT_AFTER", Value: after.String()},
				{Name: "FAKECRI_EXIT_CODE", Value: fmt.Sprint(code)},
			},
		})
	}
}

// ActiveDeadline sets the pod's activeDeadlineSeconds.
func ActiveDeadline(seconds int64) PodOption {
	return func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &seconds }
}

// RestartRule sets container's own restartPolicy and a rule restarting it
// on exit codes op values.
func RestartRule(container string, policy corev1.ContainerRestartPolicy, op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		c.RestartPolicy = &policy
		c.RestartPolicyRules = append(c.RestartPolicyRules, corev1.ContainerRestartRule{
			Action:    corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes},
		})
	}
}

func findOrAdd(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
		Name: name, Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
	})
	return &p.Spec.Containers[len(p.Spec.Containers)-1]
}

// PostStart sets container's postStart hook.
func PostStart(container string, h *corev1.LifecycleHandler) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.PostStart = h
	}
}

// PreStop sets container's preStop hook.
func PreStop(container string, h *corev1.LifecycleHandler) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.PreStop = h
	}
}

// SleepHook is a hook that sleeps for d (whole seconds).
func SleepHook(d time.Duration) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(d / time.Second)}}
}

// ExecHook is a hook that runs cmd in the container (fakecri answers it
// from the container's FAKECRI_EXEC rules).
func ExecHook(cmd ...string) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

// TerminationMessage makes container write msg to its termination
// message file (FAKECRI_TERMINATION_MESSAGE).
func TerminationMessage(container, msg string) PodOption {
	return Env(container, "FAKECRI_TERMINATION_MESSAGE", msg)
}

// MessageFromLogs sets container's terminationMessagePolicy to
// FallbackToLogsOnError.
func MessageFromLogs(container string) PodOption {
	return func(p *corev1.Pod) {
		findOrAdd(p, container).TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}
}
