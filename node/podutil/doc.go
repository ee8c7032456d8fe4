// Package podutil is the one home of the facts about a pod that several
// agent packages need: the defaults the agent assumes when a field is unset
// (image pull policy, termination grace), which pods are static or mirror
// pods, whether a container runs again after it exits, which phases are
// terminal, the order pods are listed in, the reasons the agent reports
// for waiting and terminated containers, and how a sysctl name is
// written. It is a leaf: pure functions over k8s.io/api types, importing
// no other agent package.
package podutil
