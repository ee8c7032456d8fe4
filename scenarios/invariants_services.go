package scenarios

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceChecks is what service-env remembers.
//
//   - service-env: when the kubernetes service (default/kubernetes)
//     existed as the checker started, every container of an API pod is
//     created with KUBERNETES_SERVICE_HOST set to its cluster IP: the
//     agent never builds an environment before it has listed the
//     services (upstream's "services have not yet been read at least
//     once"), also after a crash, during an outage or while its watch is
//     broken. Static pods may start without it (the apiserver may be one
//     of them).
type serviceChecks struct {
	// masterIP is the kubernetes service's cluster IP as the checker
	// started; "": there was none, nothing is checked.
	masterIP string
	// checked are the container IDs already checked (a container's
	// environment never changes).
	checked map[string]bool
}

func newServiceChecks(c *Checker) *serviceChecks {
	s := &serviceChecks{checked: map[string]bool{}}
	if svc, ok := c.h.API.User().Service(metav1.NamespaceDefault, "kubernetes"); ok {
		s.masterIP = svc.Spec.ClusterIP
	}
	return s
}

// checkServiceEnv checks service-env on the containers not checked yet.
func (c *Checker) checkServiceEnv(truth []RuntimeContainer) {
	s := c.svc
	if s.masterIP == "" {
		return
	}
	for _, rc := range truth {
		if s.checked[rc.ID] {
			continue
		}
		s.checked[rc.ID] = true
		if _, fromAPI := c.suite.specs[rc.PodUID]; !fromAPI {
			continue
		}
		cfg, ok := c.h.Runtime.TrueContainerConfigView(rc.ID)
		if !ok {
			continue
		}
		got := ""
		for _, kv := range cfg.GetEnvs() {
			if kv.GetKey() == "KUBERNETES_SERVICE_HOST" {
				got = string(kv.GetValue())
			}
		}
		if got != s.masterIP {
			c.fail("service-env", "container %s (%s, attempt %d) of API pod %s was created with KUBERNETES_SERVICE_HOST=%q, want %q",
				rc.Name, rc.ID, rc.Attempt, rc.PodUID, got, s.masterIP)
		}
	}
}
