package scenarios

import (
	"time"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// certRecovery is how long after the API is back (or the agent restarts)
// the node may take to hold a valid client certificate again: the
// rotation's retry back-off (at most 32 s), a request's own retry (at most
// 30 s), the approver's delay (5 s) and some slack.
const certRecovery = 90 * time.Second

// checkClientCert (client-cert-valid): with client certificates
// (harness ClientCertLifetime), while the agent runs and reaches the API
// the node holds a valid client certificate: it is renewed before it
// expires, and renewed again soon after an outage or a restart that let
// it lapse.
func (c *Checker) checkClientCert() {
	now := c.h.K.Elapsed()
	m := c.h.ClientCert()
	if m == nil || now < certRecovery || now <= addSat(c.suite.leaseExcused, certRecovery) {
		return
	}
	if m.Current() != nil {
		return
	}
	detail := "no certificate was ever issued"
	if hist := c.h.Certs.History(); len(hist) > 0 {
		last := hist[len(hist)-1]
		detail = "the last one expired at " + last.NotAfter.Sub(c.h.K.Now().Add(-now)).String() + " since the start"
	}
	c.fail("client-cert-valid", "the node has no valid client certificate at %v although the API has been reachable for %v: %s", now, certRecovery, detail)
	c.suite.leaseExcused = max(c.suite.leaseExcused, now) // report once per lapse
}

// certsScenario runs the agent with short-lived client certificates
// renewed through CSRs.
func certsScenario() Scenario {
	return Scenario{Name: "certs",
		Doc: "5-minute client certificates renewed through CSRs while pods come and go, the agent crashes and the API goes down: the node holds a valid certificate whenever it has reached the API for a while (client-cert-valid)",
		Mix: map[string]int{"create": 3, "delete": 2, "crash": 1, "api-outage": 2, "wait": 3},
		Configure: func(c *harness.Config) {
			c.ClientCertLifetime = 5 * time.Minute
		},
	}
}
