// Package refmodel is the simulation checker's own reference model of the
// upstream kubelet's decision rules: QoS class, requests, eviction ranking,
// the critical-pod predicate and priority, grace periods, restart
// decisions, phases and the sidecar and runs-once predicates. It is
// written from upstream's rules (pkg/apis/core/v1/helper/qos,
// pkg/kubelet/eviction, pkg/kubelet/types, pkg/kubelet/kubelet_pods.go),
// never from lockstep's agent: the invariants of package scenarios read
// it instead of the agent's decision code, so that a bug there cannot
// agree with the checker by construction. It imports no package of the
// agent (node/...); scenarios' lint test holds it to that.
package refmodel
