package plugin

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// NameProjected is the projected plugin's directory name.
const NameProjected = "kubernetes.io~projected"

// DefaultTokenExpirationSeconds is the lifetime asked for a projected
// token whose source sets none (the API's default).
const DefaultTokenExpirationSeconds = 3600

// projected is the projected plugin: configMap, secret and downwardAPI
// sources, service account tokens and cluster trust bundles merged into
// one volume on a tmpfs. A podCertificate source fails the volume (the
// agent issues no pod certificates).
type projected struct{}

func (projected) Name() string                     { return NameProjected }
func (projected) CanSupport(v *corev1.Volume) bool { return v.Projected != nil }
func (projected) Storage(*corev1.Volume) Storage   { return Storage{} }
func (projected) memory() bool                     { return true }

// IgnoredFields: none (a podCertificate source fails the volume with
// FailedMount instead: running without the certificate a pod asks for is
// no option).
func (projected) IgnoredFields(*corev1.Volume) []string { return nil }

func (projected) References(v *corev1.Volume) (configMaps, secrets []string) {
	for _, s := range v.Projected.Sources {
		if s.ConfigMap != nil {
			configMaps = append(configMaps, s.ConfigMap.Name)
		}
		if s.Secret != nil {
			secrets = append(secrets, s.Secret.Name)
		}
	}
	return configMaps, secrets
}

// fetch reads the sources' objects, and the service account tokens and
// trust anchors the sources ask for.
func (p projected) fetch(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume) (sources, error) {
	cms, secs := projectedRefs(v.Projected)
	src, err := fetchObjects(ctx, h, pod, cms, secs)
	if err != nil {
		return src, err
	}
	for i, s := range v.Projected.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			tr, err := h.Tokens.Get(ctx, pod.Namespace, pod.Spec.ServiceAccountName, tokenRequest(pod, s.ServiceAccountToken))
			if err != nil {
				return src, err
			}
			src.tokens[i] = tr.Status.Token
		case s.ClusterTrustBundle != nil:
			anchors, err := trustAnchors(ctx, h, s.ClusterTrustBundle)
			if err != nil {
				return src, err
			}
			src.trustAnchors[i] = anchors
		case s.PodCertificate != nil:
			return src, errPodCertificate
		}
	}
	return src, nil
}

func (projected) payload(pod *corev1.Pod, v *corev1.Volume, src sources) (Payload, error) {
	p := Payload{}
	return p, p.projected(pod, v.Projected, src)
}

// projectedRefs are the configMaps and secrets of a projected volume's
// sources, sorted; one is optional when every source naming it is.
func projectedRefs(pv *corev1.ProjectedVolumeSource) (cms, secs []objRef) {
	cmOpt, secOpt := map[string]bool{}, map[string]bool{}
	for _, s := range pv.Sources {
		if s.ConfigMap != nil {
			opt, seen := cmOpt[s.ConfigMap.Name]
			cmOpt[s.ConfigMap.Name] = isTrue(s.ConfigMap.Optional) && (opt || !seen)
		}
		if s.Secret != nil {
			opt, seen := secOpt[s.Secret.Name]
			secOpt[s.Secret.Name] = isTrue(s.Secret.Optional) && (opt || !seen)
		}
	}
	for _, name := range sortedKeys(cmOpt) {
		cms = append(cms, objRef{name, cmOpt[name]})
	}
	for _, name := range sortedKeys(secOpt) {
		secs = append(secs, objRef{name, secOpt[name]})
	}
	return cms, secs
}

// tokenRequest is the TokenRequest of a serviceAccountToken projection:
// its audience (none: the apiserver's), its lifetime, bound to the pod.
func tokenRequest(pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	exp := int64(DefaultTokenExpirationSeconds)
	if tp.ExpirationSeconds != nil {
		exp = *tp.ExpirationSeconds
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if tp.Audience != "" {
		tr.Spec.Audiences = []string{tp.Audience}
	}
	return tr
}
