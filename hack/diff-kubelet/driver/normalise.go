package main

import (
	"regexp"
	"sort"
	"strings"
)

// normaliser rewrites what differs between the two nodes for no
// behavioural reason — the node's and namespace's names, pod UIDs, runtime
// IDs, IP addresses, timestamps — into placeholders, so equal behaviour
// reads equal.
type normaliser struct {
	// literal replacements, longest first (a namespace name holds the
	// scenario name, which other names may hold too).
	literals []literal
}

type literal struct{ from, to string }

// newNormaliser replaces the node name with <node>, the namespace with
// <ns>; UIDs are added as they are seen (addUID).
func newNormaliser(node, namespace string) *normaliser {
	n := &normaliser{}
	n.add(node, "<node>")
	n.add(namespace, "<ns>")
	return n
}

// add registers a literal replacement (ignored when from is empty).
func (n *normaliser) add(from, to string) {
	if from == "" {
		return
	}
	for _, l := range n.literals {
		if l.from == from {
			return
		}
	}
	n.literals = append(n.literals, literal{from, to})
	sort.SliceStable(n.literals, func(i, j int) bool { return len(n.literals[i].from) > len(n.literals[j].from) })
}

// addUID registers a pod's UID.
func (n *normaliser) addUID(uid string) { n.add(uid, "<uid>") }

var (
	// 64 hex digits: container, sandbox and image IDs (sha256:… too).
	hexIDRE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	// A UUID the normaliser has not been told of (another pod's UID).
	uuidRE = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	// RFC 3339 timestamps, with fractions and zones; CRI log timestamps.
	timeRE = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?( [+-]\d{4} UTC)?( m=[+-][0-9.]+)?`)
	ipv4RE = regexp.MustCompile(`\b(\d{1,3}\.){3}\d{1,3}\b`)
	// Ports of the agents' secure ports and runtimes' stream servers.
	portRE = regexp.MustCompile(`(<ip>|localhost):\d{2,5}\b`)
)

// String normalises s.
func (n *normaliser) String(s string) string {
	if s == "" {
		return s
	}
	for _, l := range n.literals {
		s = strings.ReplaceAll(s, l.from, l.to)
	}
	s = hexIDRE.ReplaceAllString(s, "<id>")
	s = uuidRE.ReplaceAllString(s, "<uid>")
	s = timeRE.ReplaceAllString(s, "<time>")
	s = ipv4RE.ReplaceAllStringFunc(s, func(ip string) string {
		// Addresses a scenario names on purpose (cluster DNS, the service
		// range) stay; pod, host and node addresses are the runtime's.
		if strings.HasPrefix(ip, "10.96.") {
			return ip
		}
		return "<ip>"
	})
	s = portRE.ReplaceAllString(s, "$1:<port>")
	return s
}

// Strings normalises each of ss.
func (n *normaliser) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = n.String(s)
	}
	return out
}
