package podspec

import (
	"fmt"
	"maps"
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

// environment resolves a container's env: first each envFrom source in
// order (its keys sorted, with the source's prefix), then each env entry
// in order, then the service variables (opts.ServiceEnv) the container
// does not define itself. A literal value is expanded against what is
// defined before it, then the service variables; a valueFrom is resolved
// from the pod (fieldRef), the container's resources (resourceFieldRef)
// or the configMaps and secrets in opts. A missing configMap, secret or
// key fails unless the reference is optional, when the variable (or the
// whole source) is skipped, as upstream does. A name defined twice keeps
// its first position and takes its last value (the upstream kubelet keeps
// the last value too, in no particular order). The map returned holds
// every variable, for $(VAR) expansion in command and args.
func environment(pod *corev1.Pod, c *corev1.Container, podIPs []string, node NodeInfo, opts ContainerOptions) ([]envVar, map[string]string, error) {
	values := make(map[string]string, len(c.Env)+len(opts.ServiceEnv))
	var order []string
	set := func(name, value string) {
		if _, seen := values[name]; !seen {
			order = append(order, name)
		}
		values[name] = value
	}
	for i, from := range c.EnvFrom {
		data, err := envFromData(from, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("envFrom[%d]: %w", i, err)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, data[k])
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := values[name]; ok {
			return v, true
		}
		v, ok := opts.ServiceEnv[name]
		return v, ok
	}
	for _, e := range c.Env {
		value := e.Value
		switch {
		case value != "":
			value = expand(value, lookup)
		case e.ValueFrom != nil:
			v, skip, err := valueFrom(pod, c, e.ValueFrom, podIPs, node, opts)
			if err != nil {
				return nil, nil, fmt.Errorf("env %q: %w", e.Name, err)
			}
			if skip {
				continue
			}
			value = v
		}
		set(e.Name, value)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.ServiceEnv)) {
		if _, defined := values[name]; !defined {
			set(name, opts.ServiceEnv[name])
		}
	}
	out := make([]envVar, len(order))
	for i, name := range order {
		out[i] = envVar{name: name, value: values[name]}
	}
	return out, values, nil
}

// envFromData returns the variables of one envFrom source (nil for a
// missing optional one).
func envFromData(from corev1.EnvFromSource, opts ContainerOptions) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, ok := opts.ConfigMaps[from.ConfigMapRef.Name]
		if !ok {
			if isTrue(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, notFound("configmap", from.ConfigMapRef.Name)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		sec, ok := opts.Secrets[from.SecretRef.Name]
		if !ok {
			if isTrue(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, notFound("secret", from.SecretRef.Name)
		}
		data := make(map[string]string, len(sec.Data))
		for k, v := range sec.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// valueFrom resolves an env var's source; skip reports an optional
// reference to something missing (the variable is left out).
func valueFrom(pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource, podIPs []string, node NodeInfo, opts ContainerOptions) (value string, skip bool, err error) {
	switch {
	case src.FieldRef != nil:
		value, err = fieldRefValue(pod, src.FieldRef, podIPs, node)
		return value, false, err
	case src.ResourceFieldRef != nil:
		value, err = resourceFieldRefValue(pod, c, src.ResourceFieldRef, node)
		return value, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, ok := opts.ConfigMaps[ref.Name]
		if !ok {
			return "", isTrue(ref.Optional), optionalErr(ref.Optional, notFound("configmap", ref.Name))
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", isTrue(ref.Optional), optionalErr(ref.Optional, &ConfigError{fmt.Sprintf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)})
		}
		return v, false, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		sec, ok := opts.Secrets[ref.Name]
		if !ok {
			return "", isTrue(ref.Optional), optionalErr(ref.Optional, notFound("secret", ref.Name))
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			return "", isTrue(ref.Optional), optionalErr(ref.Optional, &ConfigError{fmt.Sprintf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)})
		}
		return string(v), false, nil
	case src.FileKeyRef != nil:
		return fileKeyValue(src.FileKeyRef, opts)
	}
	return "", false, fmt.Errorf("valueFrom names no source")
}

// notFound is the kubelet's error for a configMap or secret the
// container's environment names that does not exist (its object
// managers' NotFound: `configmap "nosuch" not found`).
func notFound(kind, name string) error {
	return &ConfigError{fmt.Sprintf("%s %q not found", kind, name)}
}

// optionalErr is err unless the reference is optional.
func optionalErr(optional *bool, err error) error {
	if isTrue(optional) {
		return nil
	}
	return err
}

func isTrue(b *bool) bool { return b != nil && *b }

// EnvSources names the configMaps and secrets a container's environment
// reads (env and envFrom), each once, in order: what the caller must fetch
// into ContainerOptions.
func EnvSources(c *corev1.Container) (configMaps, secrets []string) {
	add := func(list []string, name string) []string {
		if slices.Contains(list, name) {
			return list
		}
		return append(list, name)
	}
	for _, f := range c.EnvFrom {
		switch {
		case f.ConfigMapRef != nil:
			configMaps = add(configMaps, f.ConfigMapRef.Name)
		case f.SecretRef != nil:
			secrets = add(secrets, f.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch r := e.ValueFrom; {
		case r == nil:
		case r.ConfigMapKeyRef != nil:
			configMaps = add(configMaps, r.ConfigMapKeyRef.Name)
		case r.SecretKeyRef != nil:
			secrets = add(secrets, r.SecretKeyRef.Name)
		}
	}
	return configMaps, secrets
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
