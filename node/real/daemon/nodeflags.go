package daemon

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// ValidateNodeLabels checks --node-labels as the kubelet does: keys are
// qualified names and values label values, and a key in the kubernetes.io
// or k8s.io namespaces must be one the NodeRestriction admission plugin
// lets a node set on itself (kubelet.kubernetes.io/…, node.kubernetes.io/…
// or one of the well-known topology labels).
func ValidateNodeLabels(labels map[string]string) error {
	var unknown, invalid []string
	for k, v := range labels {
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			unknown = append(unknown, k)
		}
		for _, e := range validation.IsQualifiedName(k) {
			invalid = append(invalid, fmt.Sprintf("key %q: %s", k, e))
		}
		for _, e := range validation.IsValidLabelValue(v) {
			invalid = append(invalid, fmt.Sprintf("value %q of %q: %s", v, k, e))
		}
	}
	slices.Sort(unknown)
	slices.Sort(invalid)
	if len(unknown) > 0 {
		return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels %v: labels in these namespaces must begin with an allowed prefix (%s) or be one of %s",
			unknown, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	if len(invalid) > 0 {
		return fmt.Errorf("invalid labels: %s", strings.Join(invalid, "; "))
	}
	return nil
}

// isKubernetesLabel reports whether key is in the kubernetes.io or k8s.io
// namespaces (or one of their subdomains).
func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// ParseTaints parses --register-with-taints entries, each
// "<key>[=<value>]:<effect>" with effect NoSchedule, PreferNoSchedule or
// NoExecute.
func ParseTaints(specs []string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, spec := range specs {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok || strings.Contains(effect, ":") {
			return nil, fmt.Errorf("taint %q: want <key>[=<value>]:<effect>", spec)
		}
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("taint %q: effect %q must be NoSchedule, PreferNoSchedule or NoExecute", spec, effect)
		}
		key, value, _ := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("taint %q: key %q: %s", spec, key, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("taint %q: value %q: %s", spec, value, strings.Join(errs, "; "))
		}
		t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
		if slices.ContainsFunc(out, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect }) {
			return nil, fmt.Errorf("taint %q: a taint with key %q and effect %s is given twice", spec, key, effect)
		}
		out = append(out, t)
	}
	return out, nil
}

// taintString is the flag form of a taint.
func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}
