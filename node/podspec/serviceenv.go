package podspec

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// MasterServiceNamespace is where the "kubernetes" service lives, whose
// variables every container gets.
const MasterServiceNamespace = "default"

// ServiceLinksEnabled reports whether a pod asks for the variables of its
// namespace's services (enableServiceLinks, true when unset as the
// apiserver defaults it).
func ServiceLinksEnabled(pod *corev1.Pod) bool {
	return pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}

// ServiceEnv returns the service environment variables of a pod in
// namespace, from services (those of MasterServiceNamespace and of the
// pod's namespace): the "kubernetes" service's always, and with links
// every service's of the namespace. A service without a cluster IP (or a
// headless one) gives none. Each service gives <NAME>_SERVICE_HOST,
// <NAME>_SERVICE_PORT (its first port), <NAME>_SERVICE_PORT_<PORTNAME>
// for named ports, and the docker-link variables <NAME>_PORT and
// <NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR], NAME being the service
// name upper-cased with '-' as '_'.
func ServiceEnv(namespace string, links bool, services []*corev1.Service) map[string]string {
	byName := map[string]*corev1.Service{}
	for _, svc := range services {
		if clusterIPSet(svc) && svc.Namespace == MasterServiceNamespace && svc.Name == "kubernetes" {
			byName[svc.Name] = svc
		}
	}
	// A service of the pod's own namespace wins over the master one of
	// the same name, as upstream.
	for _, svc := range services {
		if clusterIPSet(svc) && links && svc.Namespace == namespace {
			byName[svc.Name] = svc
		}
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		for _, kv := range serviceVars(byName[name]) {
			out[kv[0]] = kv[1]
		}
	}
	return out
}

// clusterIPSet reports whether a service has a cluster IP.
func clusterIPSet(svc *corev1.Service) bool {
	ip := svc.Spec.ClusterIP
	return ip != "" && ip != corev1.ClusterIPNone
}

// serviceVars returns one service's variables as name/value pairs.
func serviceVars(svc *corev1.Service) [][2]string {
	if len(svc.Spec.Ports) == 0 {
		return nil
	}
	prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
	ip := svc.Spec.ClusterIP
	out := [][2]string{
		{prefix + "_SERVICE_HOST", ip},
		{prefix + "_SERVICE_PORT", strconv.Itoa(int(svc.Spec.Ports[0].Port))},
	}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			out = append(out, [2]string{prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range svc.Spec.Ports {
		proto := string(corev1.ProtocolTCP)
		if p.Protocol != "" {
			proto = string(p.Protocol)
		}
		lower := strings.ToLower(proto)
		url := fmt.Sprintf("%s://%s", lower, net.JoinHostPort(ip, strconv.Itoa(int(p.Port))))
		if i == 0 {
			out = append(out, [2]string{prefix + "_PORT", url})
		}
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out = append(out,
			[2]string{pp, url},
			[2]string{pp + "_PROTO", lower},
			[2]string{pp + "_PORT", strconv.Itoa(int(p.Port))},
			[2]string{pp + "_ADDR", ip})
	}
	return out
}
