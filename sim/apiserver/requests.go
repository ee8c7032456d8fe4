package apiserver

import (
	"maps"
	"strings"
)

// Request names one kind of agent request: a verb (the Verb constants, or
// "create"/"patch" of events) on a resource ("pods", "nodes", "leases",
// "events", ...).
type Request struct {
	Verb     string
	Resource string
}

// String is "verb resource".
func (r Request) String() string { return r.Verb + " " + r.Resource }

// resources maps the first word of a request's description to its
// resource.
var resources = map[string]string{
	"pod": "pods", "pods": "pods", "node": "nodes", "lease": "leases",
	"configmap": "configmaps", "secret": "secrets", "services": "services",
	"runtimeclass": "runtimeclasses", "event": "events",
	"persistentvolumeclaim": "persistentvolumeclaims", "persistentvolume": "persistentvolumes",
	"clustertrustbundle": "clustertrustbundles", "clustertrustbundles": "clustertrustbundles",
}

// count adds one request of verb on the object what describes ("pod
// ns/name", "pods on node ...").
func (s *Server) count(verb, what string) {
	word, _, _ := strings.Cut(what, " ")
	res, ok := resources[word]
	if !ok {
		res = word
	}
	s.mu.Lock()
	s.requests[Request{Verb: verb, Resource: res}]++
	s.mu.Unlock()
}

// Requests returns how many requests of each kind the agent has sent so
// far, failed ones included: the load it puts on an apiserver.
func (s *Server) Requests() map[Request]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}
