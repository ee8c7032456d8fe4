package podspec

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// expand replaces each $(NAME) in s by lookup(NAME), following the
// Kubernetes rules: "$$" is an escaped "$"; a reference to an unknown name,
// "$(" without a closing ")", and a "$" followed by anything else are left
// as written.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envVar is one resolved environment variable.
type envVar struct {
	name, value string
}

// environment resolves a container's env, in declaration order. A literal
// value is expanded against the variables declared before it; a valueFrom
// is resolved from the pod (fieldRef), the container's resources
// (resourceFieldRef) or fails when it needs configMaps, secrets or files,
// which are not supported yet. A name declared twice keeps its first
// position and takes its last value (the upstream kubelet keeps the last
// value too, in no particular order).
func environment(pod *corev1.Pod, c *corev1.Container, podIPs []string, node NodeInfo) ([]envVar, map[string]string, error) {
	for i, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			return nil, nil, fmt.Errorf("envFrom[%d]: configMapRef %q: configMaps are not supported yet", i, from.ConfigMapRef.Name)
		case from.SecretRef != nil:
			return nil, nil, fmt.Errorf("envFrom[%d]: secretRef %q: secrets are not supported yet", i, from.SecretRef.Name)
		}
	}
	values := make(map[string]string, len(c.Env))
	lookup := func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	}
	var order []string
	for _, e := range c.Env {
		value := e.Value
		switch {
		case value != "":
			value = expand(value, lookup)
		case e.ValueFrom != nil:
			v, err := valueFrom(pod, c, e.ValueFrom, podIPs, node)
			if err != nil {
				return nil, nil, fmt.Errorf("env %q: %w", e.Name, err)
			}
			value = v
		}
		if _, seen := values[e.Name]; !seen {
			order = append(order, e.Name)
		}
		values[e.Name] = value
	}
	out := make([]envVar, len(order))
	for i, name := range order {
		out[i] = envVar{name: name, value: values[name]}
	}
	return out, values, nil
}

// valueFrom resolves an env var's source.
func valueFrom(pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource, podIPs []string, node NodeInfo) (string, error) {
	switch {
	case src.FieldRef != nil:
		return fieldRefValue(pod, src.FieldRef, podIPs, node)
	case src.ResourceFieldRef != nil:
		return resourceFieldRefValue(pod, c, src.ResourceFieldRef, node)
	case src.ConfigMapKeyRef != nil:
		return "", fmt.Errorf("configMapKeyRef %s[%s]: configMaps are not supported yet", src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key)
	case src.SecretKeyRef != nil:
		return "", fmt.Errorf("secretKeyRef %s[%s]: secrets are not supported yet", src.SecretKeyRef.Name, src.SecretKeyRef.Key)
	case src.FileKeyRef != nil:
		return "", fmt.Errorf("fileKeyRef %s[%s]: env files are not supported yet", src.FileKeyRef.Path, src.FileKeyRef.Key)
	}
	return "", fmt.Errorf("valueFrom names no source")
}

// fieldRefValue resolves a downward-API field of the pod: metadata.name,
// .namespace, .uid, .labels['k'], .annotations['k'] (and the whole label
// or annotation map, one k="v" line per key, sorted), spec.nodeName,
// spec.serviceAccountName, status.hostIP(s) from the node, status.podIP(s)
// from podIPs.
func fieldRefValue(pod *corev1.Pod, fs *corev1.ObjectFieldSelector, podIPs []string, node NodeInfo) (string, error) {
	if fs.APIVersion != "" && fs.APIVersion != "v1" {
		return "", fmt.Errorf("fieldRef %s: apiVersion %q is not supported", fs.FieldPath, fs.APIVersion)
	}
	path := fs.FieldPath
	if path == "spec.host" { // the old name of spec.nodeName
		path = "spec.nodeName"
	}
	if base, key, ok := splitSubscript(path); ok {
		switch base {
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) != 0 {
				return "", fmt.Errorf("fieldRef %s: invalid label key: %s", path, strings.Join(errs, "; "))
			}
			return pod.Labels[key], nil
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) != 0 {
				return "", fmt.Errorf("fieldRef %s: invalid annotation key: %s", path, strings.Join(errs, "; "))
			}
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldRef %s: %s takes no subscript", path, base)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return node.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		ip := node.primaryHostIP()
		if ip == "" {
			return "", fmt.Errorf("fieldRef %s: the node's IP is not known", path)
		}
		return ip, nil
	case "status.hostIPs":
		ips := node.hostIPs()
		if len(ips) == 0 {
			return "", fmt.Errorf("fieldRef %s: the node's IPs are not known", path)
		}
		return strings.Join(ips, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("fieldRef %s is not supported", fs.FieldPath)
}

// splitSubscript splits "base['key']" into base and key.
func splitSubscript(path string) (base, key string, ok bool) {
	rest, found := strings.CutSuffix(path, "']")
	if !found {
		return path, "", false
	}
	base, key, found = strings.Cut(rest, "['")
	if !found || base == "" {
		return path, "", false
	}
	return base, key, true
}

// formatMap renders a map as sorted k="v" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// resourceFieldRefValue resolves limits.<r> or requests.<r> (cpu, memory,
// ephemeral-storage, hugepages-<size>) of the container, or of the one the
// selector names, divided by the divisor (default 1) and rounded up. CPU
// is counted in millicores before dividing, so 250m with divisor 1 is 1.
// A cpu, memory or ephemeral-storage limit the container does not set is
// the node's allocatable amount.
func resourceFieldRefValue(pod *corev1.Pod, c *corev1.Container, fs *corev1.ResourceFieldSelector, node NodeInfo) (string, error) {
	target := c
	if fs.ContainerName != "" && fs.ContainerName != c.Name {
		target = findContainer(pod, fs.ContainerName)
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef %s: no container %q in the pod", fs.Resource, fs.ContainerName)
		}
	}
	kind, name, _ := strings.Cut(fs.Resource, ".")
	rn := corev1.ResourceName(name)
	switch rn {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	default:
		if !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
			return "", fmt.Errorf("resourceFieldRef %s is not supported", fs.Resource)
		}
	}
	var q resource.Quantity
	switch kind {
	case "limits":
		l, ok := target.Resources.Limits[rn]
		if !ok && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
			l = node.Allocatable[rn]
		}
		q = l
	case "requests":
		q = effectiveRequests(target)[rn]
	default:
		return "", fmt.Errorf("resourceFieldRef %s is not supported", fs.Resource)
	}
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == corev1.ResourceCPU {
		d := divisor.MilliValue()
		if d <= 0 {
			return "", fmt.Errorf("resourceFieldRef %s: divisor %s is not positive", fs.Resource, divisor.String())
		}
		return strconv.FormatInt(ceilDiv(q.MilliValue(), d), 10), nil
	}
	d := divisor.Value()
	if d <= 0 {
		return "", fmt.Errorf("resourceFieldRef %s: divisor %s is not positive", fs.Resource, divisor.String())
	}
	return strconv.FormatInt(ceilDiv(q.Value(), d), 10), nil
}

// findContainer finds a regular or init container by name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// ceilDiv divides a by b > 0, rounding a positive result up.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a > 0 && a%b != 0 {
		q++
	}
	return q
}

// sortPodIPs orders pod IPs the way the downward API reports them: at most
// one per family, the node's primary family first (IPv4 when the node's IP
// is unknown). Strings that are not IPs are dropped.
func sortPodIPs(ips []string, node NodeInfo) []string {
	primaryV6 := ipFamily(node.primaryHostIP()) == "v6"
	var first, second string
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		isV6 := !a.Is4() && !a.Is4In6()
		switch {
		case isV6 == primaryV6 && first == "":
			first = s
		case isV6 != primaryV6 && second == "":
			second = s
		}
	}
	var out []string
	for _, s := range []string{first, second} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
