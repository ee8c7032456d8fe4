package scenarios

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

func oomScenario() Scenario {
	return Scenario{Name: "oom",
		Doc:      "containers growing past their memory limit under every restart policy, beside node memory pressure and agent crashes",
		MaxSteps: 15, // a small make-test budget: restarting OOM loops are busy
		Mix:      map[string]int{"create-oom": 5, "create-qos": 2, "system-oom": 1, "node-memory": 2, "delete": 1, "crash": 1, "wait": 1},
		// The eviction scenario's node: pressure thresholds and maxPods.
		Configure: evictionScenario().Configure,
	}
}

// Restart policies, growth rates and limits create-oom draws from.
var (
	oomPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	oomRates    = []string{"5Mi/s", "20Mi/s", "100Mi/s"}
	oomLimits   = []string{"32Mi", "64Mi", "256Mi"}
)

// opCreateOOM creates a pod whose container starts at 8Mi and grows at
// rate b until its limit c kills it, under restart policy a.
func opCreateOOM(r *run, a [3]int) error {
	name := fmt.Sprintf("oom%d", r.step)
	pod := NewPod(name, r.h.NodeName,
		Restart(oomPolicies[pick(a[0], len(oomPolicies))]),
		GrowsMemory("app", "8Mi", oomRates[pick(a[1], len(oomRates))], oomLimits[pick(a[2], len(oomLimits))]),
		Grace(5))
	if _, err := Create(r.h, pod); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// opSystemOOM scripts a kernel OOM kill of a system process (a SystemOOM
// node event).
func opSystemOOM(r *run, a [3]int) error {
	r.h.SystemOOM("stress", max(1, a[0]))
	r.fault("system-oom", "pid", a[0])
	return nil
}
