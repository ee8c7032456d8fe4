package podspec

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits a resolver (glibc) puts on resolv.conf, which the config is cut to.
const (
	maxDNSServers     = 3
	maxDNSSearches    = 32
	maxDNSSearchChars = 2048 // the whole "search" line, spaces included
	maxDNSSearchLen   = 253  // one search domain
)

// clusterNdots is the resolver option of ClusterFirst pods: names with
// fewer than 5 dots are tried with the cluster's search domains first.
const clusterNdots = "ndots:5"

// ResolvConf is what a pod's DNS config can inherit from a resolv.conf file.
type ResolvConf struct {
	Servers  []string
	Searches []string
	Options  []string
}

// ParseResolvConf reads the nameserver, search and options lines of a
// resolv.conf file. Like the resolver, the last search line wins; "." and
// trailing dots are dropped from search domains; a later option replaces an
// earlier one of the same name in place. Comments (# or ;) and other lines
// are ignored.
func ParseResolvConf(data []byte) ResolvConf {
	var rc ResolvConf
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "nameserver":
			if len(fields) >= 2 {
				rc.Servers = append(rc.Servers, fields[1])
			}
		case "search":
			rc.Searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					rc.Searches = append(rc.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			for _, o := range fields[1:] {
				name, value, _ := strings.Cut(o, ":")
				rc.Options = mergeOption(rc.Options, name, value)
			}
		}
	}
	return rc
}

// dnsConfig returns a pod's DNS config for its dnsPolicy:
//
//   - ClusterFirst (the default) and ClusterFirstWithHostNet: the cluster
//     DNS servers only, searches <ns>.svc.<domain>, svc.<domain>, <domain>
//     then the host's, and ndots:5. A host-network pod with ClusterFirst
//     gets Default instead, and so does any ClusterFirst pod when the node
//     knows no cluster DNS.
//   - Default: the node's resolv.conf (NodeInfo.HostDNS). With no
//     ResolverConfig: nameserver 127.0.0.1 (::1 for an IPv6 node) and
//     search ".", so lookups go nowhere rather than somewhere surprising.
//   - None: nothing but pod.Spec.DNSConfig.
//
// For every policy pod.Spec.DNSConfig's nameservers and searches are
// appended (duplicates dropped) and its options override by name. The
// result is cut to the resolver's limits: 3 servers, 32 search domains of
// at most 253 characters, 2048 characters of search line.
func dnsConfig(pod *corev1.Pod, node NodeInfo) (*runtimeapi.DNSConfig, error) {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	var base ResolvConf
	if node.ResolverConfig != "" {
		base = ResolvConf{
			Servers:  slices.Clone(node.HostDNS.Servers),
			Searches: slices.Clone(node.HostDNS.Searches),
			Options:  slices.Clone(node.HostDNS.Options),
		}
	}
	cluster := false
	switch policy {
	case corev1.DNSNone:
		base = ResolvConf{}
	case corev1.DNSClusterFirstWithHostNet:
		cluster = true
	case corev1.DNSClusterFirst:
		cluster = !pod.Spec.HostNetwork
	case corev1.DNSDefault:
	default:
		return nil, fmt.Errorf("dnsPolicy %q is not supported", policy)
	}
	switch {
	case policy == corev1.DNSNone:
	case cluster && len(node.ClusterDNS) > 0:
		base.Servers = slices.Clone(node.ClusterDNS)
		base.Searches = clusterSearches(pod.Namespace, node.ClusterDomain, base.Searches)
		base.Options = []string{clusterNdots}
	case node.ResolverConfig == "":
		base.Servers = nil
		for _, ip := range node.hostIPs() {
			if ipFamily(ip) == "v6" {
				base.Servers = append(base.Servers, "::1")
			} else {
				base.Servers = append(base.Servers, "127.0.0.1")
			}
		}
		if len(base.Servers) == 0 {
			base.Servers = []string{"127.0.0.1"}
		}
		base.Servers = omitDuplicates(base.Servers)
		base.Searches = []string{"."}
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		base.Servers = omitDuplicates(append(base.Servers, pc.Nameservers...))
		base.Searches = omitDuplicates(append(base.Searches, pc.Searches...))
		for _, o := range pc.Options {
			value := ""
			if o.Value != nil {
				value = *o.Value
			}
			base.Options = mergeOption(base.Options, o.Name, value)
		}
	}
	if len(base.Servers) > maxDNSServers {
		base.Servers = base.Servers[:maxDNSServers]
	}
	return &runtimeapi.DNSConfig{
		Servers:  base.Servers,
		Searches: limitSearches(base.Searches),
		Options:  base.Options,
	}, nil
}

// clusterSearches puts the cluster's search domains before the host's.
func clusterSearches(namespace, domain string, host []string) []string {
	if domain == "" {
		return host
	}
	s := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return omitDuplicates(append(s, host...))
}

// limitSearches cuts search domains to what a resolver accepts: the first
// 32, without any longer than 253 characters, then dropping from the end
// until the search line fits in 2048 characters.
func limitSearches(searches []string) []string {
	if len(searches) > maxDNSSearches {
		searches = searches[:maxDNSSearches]
	}
	out := make([]string, 0, len(searches))
	for _, s := range searches {
		if len(s) <= maxDNSSearchLen {
			out = append(out, s)
		}
	}
	for len(out) > 0 && len(strings.Join(out, " ")) > maxDNSSearchChars {
		out = out[:len(out)-1]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// mergeOption sets resolver option name to value ("" for a flag option),
// replacing an option of the same name in place or appending it.
func mergeOption(options []string, name, value string) []string {
	opt := name
	if value != "" {
		opt = name + ":" + value
	}
	for i, o := range options {
		if n, _, _ := strings.Cut(o, ":"); n == name {
			options[i] = opt
			return options
		}
	}
	return append(options, opt)
}

// omitDuplicates keeps the first occurrence of each string, in order.
func omitDuplicates(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
