package plugin

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// errPodCertificate is the set-up error of a volume with a podCertificate
// projection: the agent does not issue pod certificates (see
// docs/architecture.md).
var errPodCertificate = errors.New("podCertificate projected volume sources (PodCertificateRequest) are not supported by lockstep")

// trustAnchors returns the PEM trust anchors a clusterTrustBundle
// projection publishes, as upstream's ClusterTrustBundle manager: the
// named bundle's, or those of every bundle of the signer that the label
// selector matches (a nil selector matches none, an empty one all); a
// missing bundle, or no match, is an error unless the source is optional
// (then the file is empty). The certificates are deduplicated and sorted
// (upstream shuffles them once per kubelet start; sorting keeps the file
// unchanged across restarts, so no needless republication).
func trustAnchors(ctx context.Context, h *Host, src *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	optional := src.Optional != nil && *src.Optional
	if h.TrustBundles == nil {
		return nil, errors.New("clusterTrustBundle: the agent has no apiserver to read it from")
	}
	var bundles []*certificatesv1.ClusterTrustBundle
	switch {
	case src.Name != nil:
		b, err := h.TrustBundles.GetClusterTrustBundle(ctx, *src.Name)
		switch {
		case apierrors.IsNotFound(err) && optional:
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
		}
		bundles = append(bundles, b)
	case src.SignerName != nil:
		selector, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("while parsing label selector: %w", err)
		}
		all, err := h.TrustBundles.ListClusterTrustBundles(ctx, *src.SignerName)
		if err != nil {
			return nil, fmt.Errorf("while listing ClusterTrustBundles of signer %q: %w", *src.SignerName, err)
		}
		for _, b := range all {
			if b.Spec.SignerName == *src.SignerName && selector.Matches(labels.Set(b.Labels)) {
				bundles = append(bundles, b)
			}
		}
		if len(bundles) == 0 {
			if optional {
				return nil, nil
			}
			return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
		}
	default:
		return nil, errors.New("ClusterTrustBundle projection requires either name or signerName to be set")
	}
	return normalizeAnchors(bundles), nil
}

// normalizeAnchors returns the distinct certificates of bundles, sorted by
// their DER bytes, re-encoded as PEM CERTIFICATE blocks.
func normalizeAnchors(bundles []*certificatesv1.ClusterTrustBundle) []byte {
	var ders [][]byte
	for _, b := range bundles {
		rest := []byte(b.Spec.TrustBundle)
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			ders = append(ders, block.Bytes)
		}
	}
	slices.SortFunc(ders, bytes.Compare)
	ders = slices.CompactFunc(ders, bytes.Equal)
	var out []byte
	for _, der := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return out
}
