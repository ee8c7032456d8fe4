package nodestatus

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Ready condition reasons and the ready message.
const (
	ReasonReady    = "KubeletReady"
	ReasonNotReady = "KubeletNotReady"
	// MessageReady is the Ready condition's message, the kubelet's words
	// (tools match on it).
	MessageReady = "kubelet is posting ready status"
	// ShutdownMessage is the NotReady cause while the node shuts down
	// (the kubelet's words).
	ShutdownMessage = "node is shutting down"
)

// runtimeHealth is what the runtime status checks have found.
type runtimeHealth struct {
	// lastOK is the end of the last check that answered with RuntimeReady
	// true; zero before the first.
	lastOK time.Time
	// runtimeErr is why the last answered check found the runtime not
	// ready ("" when ready).
	runtimeErr string
	// networkErr is why the last answered check found the network not
	// ready ("" when ready).
	networkErr string
}

// readiness is a computed Ready condition.
type readiness struct {
	ready   bool
	message string
}

func (r readiness) reason() string {
	if r.ready {
		return ReasonReady
	}
	return ReasonNotReady
}

// computeReadiness decides the Ready condition at now from the runtime
// checks, the PLEG's health (nil: healthy) and further causes (the node
// shutting down). Every cause found is named, in the kubelet's order, in
// the kubelet's form (aggregateMessage).
func computeReadiness(now time.Time, rt runtimeHealth, unhealthyAfter time.Duration, health Health, more ...string) readiness {
	var errs []string
	switch {
	case rt.lastOK.IsZero():
		errs = append(errs, "container runtime status check may not have completed yet")
	case now.Sub(rt.lastOK) >= unhealthyAfter:
		errs = append(errs, "container runtime is down")
	}
	if health != nil {
		if ok, err := health.PLEGHealthy(); !ok {
			errs = append(errs, fmt.Sprintf("PLEG is not healthy: %v", err))
		}
	}
	if rt.runtimeErr != "" {
		errs = append(errs, rt.runtimeErr)
	}
	if rt.networkErr != "" {
		errs = append(errs, rt.networkErr)
	}
	errs = append(errs, more...)
	if len(errs) == 0 {
		return readiness{ready: true, message: MessageReady}
	}
	return readiness{message: aggregateMessage(errs)}
}

// aggregateMessage is the kubelet's NotReady message for causes, as its
// aggregated error prints them (k8s.io/apimachinery/pkg/util/errors):
// duplicates dropped, one cause alone, several joined by ", " in brackets.
func aggregateMessage(causes []string) string {
	var seen []string
	for _, c := range causes {
		if !slices.Contains(seen, c) {
			seen = append(seen, c)
		}
	}
	if len(seen) == 1 {
		return seen[0]
	}
	return "[" + strings.Join(seen, ", ") + "]"
}

// applyRuntimeStatus folds one answered CRI Status call, made at now, into
// rt. A runtime that is not ready does not count as a successful check,
// so after RuntimeUnhealthyAfter it is also reported down.
func applyRuntimeStatus(rt runtimeHealth, now time.Time, resp *runtimeapi.StatusResponse) runtimeHealth {
	conds := resp.GetStatus().GetConditions()
	find := func(t string) *runtimeapi.RuntimeCondition {
		for _, c := range conds {
			if c.GetType() == t {
				return c
			}
		}
		return nil
	}
	if c := find(runtimeapi.NetworkReady); c == nil || !c.GetStatus() {
		rt.networkErr = "container runtime network not ready: " + describeCondition(runtimeapi.NetworkReady, c)
	} else {
		rt.networkErr = ""
	}
	if c := find(runtimeapi.RuntimeReady); c == nil || !c.GetStatus() {
		rt.runtimeErr = "container runtime not ready: " + describeCondition(runtimeapi.RuntimeReady, c)
		return rt
	}
	rt.runtimeErr = ""
	rt.lastOK = now
	return rt
}

// describeCondition prints a runtime condition as the kubelet does.
func describeCondition(t string, c *runtimeapi.RuntimeCondition) string {
	if c == nil {
		return t + " condition missing"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", t, c.GetStatus(), c.GetReason(), c.GetMessage())
}

// checkRuntime asks the runtime for its status and records the answer.
// A call that fails leaves the record as it was, so the last good check
// ages until the node counts as NotReady.
func (m *Manager) checkRuntime(ctx context.Context) {
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	resp, err := m.ports.Runtime.Status(cctx, false)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("container runtime status check failed", "err", err)
		}
		return
	}
	now := m.d.Clock.Now()
	m.mu.Lock()
	m.rt = applyRuntimeStatus(m.rt, now, resp)
	m.handlers, m.features = runtimeHandlers(resp), runtimeFeatures(resp)
	m.mu.Unlock()
}

// readiness computes the Ready condition now.
func (m *Manager) readiness() readiness {
	m.mu.Lock()
	rt := m.rt
	m.mu.Unlock()
	var more []string
	if m.cfg.Shutdown != nil && m.cfg.Shutdown.ShuttingDown() {
		more = append(more, ShutdownMessage)
	}
	return computeReadiness(m.d.Clock.Now(), rt, m.cfg.RuntimeUnhealthyAfter, m.health, more...)
}
