package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/shutdown"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// ShutdownGroups are the shutdown scenario node's graceful shutdown
// groups: shutdownGracePeriod 30 s of which 10 s for critical pods.
var ShutdownGroups = shutdown.GroupsFor(30*time.Second, 10*time.Second)

func shutdownScenario() Scenario {
	return Scenario{Name: "node-shutdown",
		Doc: "the machine announces its shutdown (logind) while pods of every priority run, critical ones included; it is cancelled later; slow runtimes and outages",
		Mix: map[string]int{"create": 3, "create-qos": 3, "node-shutdown": 2, "delete": 1, "cri-latency": 1, "api-outage": 1, "wait": 1},
		Configure: func(c *harness.Config) {
			c.Agent.ShutdownGroups = ShutdownGroups
		},
	}
}

// opNodeShutdown announces the node's shutdown, lets a ms pass and
// cancels it. On a node without graceful shutdown it changes nothing.
func opNodeShutdown(r *run, a [3]int) error {
	r.c.ShutdownStarting()
	r.fault("node-shutdown", "cancel-after-ms", a[0])
	r.h.ShutdownNode()
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.CancelShutdown()
	r.c.ShutdownCancelled()
	return nil
}

// shutdownChecks is what the graceful shutdown invariants remember of the
// shutdown under way.
type shutdownChecks struct {
	active bool
	// start is when it was announced; readyExcuse the node-ready excuse
	// before it.
	start, readyExcuse time.Duration
	// pods are the pods running at the start, by UID; group their group.
	pods  map[types.UID]*corev1.Pod
	group map[types.UID]int
	// reported: violations already reported, by key.
	reported map[string]bool
}

// groups are the shutdown groups of the agent (none: off).
func (c *Checker) shutdownGroups() []shutdown.Group { return c.h.AgentConfig().ShutdownGroups }

// ShutdownStarting tells the checker that the node's shutdown is about to
// be announced: the pods running now must be stopped by groups.
func (c *Checker) ShutdownStarting() {
	if len(c.shutdownGroups()) == 0 {
		return
	}
	s := &shutdownChecks{active: true, start: c.h.K.Elapsed(), readyExcuse: c.ready.excused,
		pods: map[types.UID]*corev1.Pod{}, group: map[types.UID]int{}, reported: map[string]bool{}}
	running := map[types.UID]bool{}
	for _, ct := range TrueContainers(c.h) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[ct.PodUID] = true
		}
	}
	var pods []*corev1.Pod
	for _, p := range c.h.API.User().ListAllPods() {
		if running[p.UID] {
			pods = append(pods, p)
		}
	}
	for i, g := range shutdown.Assign(c.shutdownGroups(), pods) {
		for _, p := range g {
			s.pods[p.UID], s.group[p.UID] = p, i
		}
	}
	c.shutdown = s
	c.ready.excused = forever // NotReady while it shuts down
}

// ShutdownCancelled tells the checker the shutdown was cancelled: the
// node must turn Ready again.
func (c *Checker) ShutdownCancelled() {
	if c.shutdown == nil || !c.shutdown.active {
		return
	}
	c.shutdown.active = false
	c.ready.excused = max(c.shutdown.readyExcuse, c.h.K.Elapsed()+readySlack)
}

// onShutdownStop checks each StopContainer made while the node shuts
// down:
//   - shutdown-order: a pod of a group is stopped only once no pod of a
//     lower group runs any more or the lower groups' grace periods are
//     over (critical pods after all the others);
//   - shutdown-grace: its grace period is within its budget, the group's
//     or its own when shorter.
func (c *Checker) onShutdownStop(id string, grace int64) {
	s := c.shutdown
	if s == nil || !s.active {
		return
	}
	uid, ok := containerPod(c.h, id)
	if !ok {
		return
	}
	pod, tracked := s.pods[uid]
	if !tracked {
		return
	}
	if cur, ok := APIPod(c.h, pod.Namespace, pod.Name); ok && cur.UID == uid && cur.DeletionTimestamp != nil {
		return // deleted by a user: stopped for that
	}
	groups := c.shutdownGroups()
	g := s.group[uid]
	now := c.h.K.Elapsed()
	// The budget is computed here, not with the agent's own helper.
	budget := int64(groups[g].GracePeriod / time.Second)
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own < budget {
		budget = *own
	}
	if grace > budget {
		c.shutdownFail("shutdown-grace", "grace "+string(uid), "pod %s (priority %d) stopped with grace %d s, over its budget of %d s (group of priority %d: %v, own %v)",
			pod.Name, prio(pod), grace, budget, groups[g].Priority, groups[g].GracePeriod, ownGrace(pod))
	}
	var lowerTime time.Duration
	for i := range g {
		lowerTime += groups[i].GracePeriod
	}
	if now >= s.start+lowerTime {
		return
	}
	running := runningPods(c.h)
	var still []string
	for _, u := range slices.Sorted(maps.Keys(s.pods)) {
		if s.group[u] < g && running[u] {
			still = append(still, s.pods[u].Name)
		}
	}
	if len(still) > 0 {
		c.shutdownFail("shutdown-order", "order "+string(uid), "pod %s (priority %d) stopped at +%v while lower-priority pods %s still ran, before their %v were over",
			pod.Name, prio(pod), now-s.start, strings.Join(still, ", "), lowerTime)
	}
}

// checkShutdown: shutdown-grace also asks that every pod running at the
// announcement has stopped once all the groups' time (and a slack for the
// runtime's stop) is over, and shutdown-not-ready that the node reports
// the shutdown within a status write's slack.
func (c *Checker) checkShutdown() {
	s := c.shutdown
	if s == nil || !s.active || c.h.Agent() == nil {
		return
	}
	now := c.h.K.Elapsed()
	total := shutdown.Total(c.shutdownGroups())
	if now > s.start+total+shutdownSlack {
		running := runningPods(c.h)
		for _, u := range slices.Sorted(maps.Keys(s.pods)) {
			if running[u] {
				c.shutdownFail("shutdown-grace", "late "+string(u), "pod %s (priority %d) still runs %v after the shutdown began (grace periods %v + %v slack)",
					s.pods[u].Name, prio(s.pods[u]), now-s.start, total, shutdownSlack)
			}
		}
	}
	if now > s.start+shutdownSlack && c.suite.leaseExcused < now {
		cond := nodeReadyCondition(c.h.API.User().Nodes(), c.h.NodeName)
		if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "KubeletNotReady" || !strings.Contains(cond.Message, shutdown.NodeMessage) {
			c.shutdownFail("shutdown-not-ready", "ready", "node %s Ready condition %v %s %q %v after the shutdown began, want False KubeletNotReady %q",
				c.h.NodeName, condStatus(cond), condReason(cond), condMessage(cond), now-s.start, shutdown.NodeMessage)
		}
	}
}

// shutdownSlack covers a stop's last polls and the runtime's kill.
const shutdownSlack = 5 * time.Second

func (c *Checker) shutdownFail(inv, key, format string, args ...any) {
	if c.shutdown.reported[key] {
		return
	}
	c.shutdown.reported[key] = true
	c.fail(inv, format, args...)
}

// containerPod is the UID of the pod whose container id is.
func containerPod(h *harness.Harness, id string) (types.UID, bool) {
	for _, ct := range h.Runtime.TrueContainers() {
		if ct.Id == id {
			return types.UID(ct.Labels[podstate.LabelPodUID]), true
		}
	}
	return "", false
}

// runningPods are the UIDs of pods with a running container.
func runningPods(h *harness.Harness) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, ct := range TrueContainers(h) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out[ct.PodUID] = true
		}
	}
	return out
}

func prio(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func ownGrace(p *corev1.Pod) string {
	if p.Spec.TerminationGracePeriodSeconds == nil {
		return "unset"
	}
	return fmt.Sprintf("%d s", *p.Spec.TerminationGracePeriodSeconds)
}

func condStatus(c *corev1.NodeCondition) corev1.ConditionStatus {
	if c == nil {
		return "missing"
	}
	return c.Status
}

func condReason(c *corev1.NodeCondition) string {
	if c == nil {
		return ""
	}
	return c.Reason
}

func condMessage(c *corev1.NodeCondition) string {
	if c == nil {
		return ""
	}
	return c.Message
}
