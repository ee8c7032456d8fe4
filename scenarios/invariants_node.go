package scenarios

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/pleg"
)

// readySlack is how long the node may take to report Ready again once
// nothing excuses NotReady: the first status of a new agent (its first
// runtime check and relist), or the next status update (10 s) and its
// write after a fault ends.
const readySlack = 30 * time.Second

// nodeReadyState is what node-ready remembers.
type nodeReadyState struct {
	// excused: until then the node may be NotReady (agent starting, API
	// impaired, runtime not ready or not answering its lists).
	excused time.Duration
	// restarts: the agent starts seen so far.
	restarts int
	// reported: the node's NotReady was reported (once per lapse).
	reported bool
}

// RuntimeDown tells the checker the runtime may not answer its Status or
// list calls, or report itself ready, for d from now (forever: until
// Healed): the node may turn NotReady meanwhile. A stalled list may meet a
// relist stalled by a hung pod refresh (at most the PLEG's
// PodStatusTimeout), so the excuse lasts that much longer.
func (c *Checker) RuntimeDown(d time.Duration) {
	c.excuseReady(addSat(addSat(c.h.K.Elapsed(), d), pleg.DefaultPodStatusTimeout+readySlack))
}

func (c *Checker) excuseReady(until time.Duration) {
	c.ready.excused = max(c.ready.excused, until)
}

// healReady ends the open-ended excuses of node-ready.
func (c *Checker) healReady() {
	if c.ready.excused == forever {
		c.ready.excused = addSat(c.h.K.Elapsed(), pleg.DefaultPodStatusTimeout+readySlack)
	}
}

// checkNodeReady: while the agent runs and reaches the API and the runtime
// answers its Status and list calls, the node is Ready. A pod whose status
// calls hang (upstream #94829) must not make it NotReady.
func (c *Checker) checkNodeReady() {
	c.evaluate("node-ready")
	now := c.h.K.Elapsed()
	if r := c.h.Restarts(); c.h.Agent() == nil || r != c.ready.restarts {
		c.ready.restarts = r
		c.excuseReady(now + readySlack)
	}
	c.excuseReady(c.suite.leaseExcused) // the API is impaired: statuses may not be written
	if now <= c.ready.excused {
		c.ready.reported = false
		return
	}
	cond := nodeReadyCondition(c.apiNodes(), c.h.NodeName)
	if cond == nil || cond.Status == corev1.ConditionTrue {
		c.ready.reported = false
		return
	}
	if !c.ready.reported {
		c.ready.reported = true
		c.fail("node-ready", "node %s is %s (%s: %s) while the runtime answers and the API is up", c.h.NodeName, notReady(cond), cond.Reason, cond.Message)
	}
}

// nodeReadyCondition is node name's Ready condition, nil if it has none.
func nodeReadyCondition(nodes []*corev1.Node, name string) *corev1.NodeCondition {
	for _, n := range nodes {
		if n.Name != name {
			continue
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				return &n.Status.Conditions[i]
			}
		}
	}
	return nil
}

func notReady(c *corev1.NodeCondition) string {
	if c.Status == corev1.ConditionUnknown {
		return "Ready=Unknown"
	}
	return "NotReady"
}
