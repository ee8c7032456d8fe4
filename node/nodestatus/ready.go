package nodestatus

import (
	"context"
	"fmt"
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

// notReady adds cause to r: a ready node becomes NotReady for it alone.
func (r readiness) notReady(cause string) readiness {
	if r.ready {
		return readiness{message: cause}
	}
	return readiness{message: r.message + ", " + cause}
}

func (r readiness) reason() string {
	if r.ready {
		return ReasonReady
	}
	return ReasonNotReady
}

// computeReadiness decides the Ready condition at now from the runtime
// checks and the PLEG's health (nil: healthy). Every cause found is named,
// in a fixed order, joined by ", ".
func computeReadiness(now time.Time, rt runtimeHealth, unhealthyAfter time.Duration, health Health) readiness {
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
	if len(errs) == 0 {
		return readiness{ready: true, message: MessageReady}
	}
	return readiness{message: strings.Join(errs, ", ")}
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
	r := computeReadiness(m.d.Clock.Now(), rt, m.cfg.RuntimeUnhealthyAfter, m.health)
	if m.cfg.Shutdown != nil && m.cfg.Shutdown.ShuttingDown() {
		r = r.notReady(ShutdownMessage)
	}
	return r
}
