package kube

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// GetConfigMap reads one configMap (a missing one is a NotFound error,
// wrapped).
func (c *Client) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := c.cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get configMap %s/%s: %w", namespace, name, err)
	}
	return cm, nil
}

// GetSecret reads one secret (a missing one is a NotFound error, wrapped).
func (c *Client) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := c.cs.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get secret %s/%s: %w", namespace, name, err)
	}
	return s, nil
}

// GetRuntimeClass reads one RuntimeClass (a missing one is a NotFound
// error, wrapped).
func (c *Client) GetRuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
	rc, err := c.cs.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get runtimeClass %q: %w", name, err)
	}
	return rc, nil
}

// CreateToken requests a service account token (TokenRequest API).
func (c *Client) CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	out, err := c.cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, tr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create token of service account %s/%s: %w", namespace, serviceAccount, err)
	}
	return out, nil
}

// GetPersistentVolumeClaim reads one claim (a missing one is a NotFound
// error, wrapped).
func (c *Client) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := c.cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get persistentVolumeClaim %s/%s: %w", namespace, name, err)
	}
	return pvc, nil
}

// GetPersistentVolume reads one PersistentVolume (a missing one is a
// NotFound error, wrapped).
func (c *Client) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	pv, err := c.cs.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get persistentVolume %q: %w", name, err)
	}
	return pv, nil
}

// GetClusterTrustBundle reads one ClusterTrustBundle (a missing one is a
// NotFound error, wrapped).
func (c *Client) GetClusterTrustBundle(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error) {
	b, err := c.cs.CertificatesV1().ClusterTrustBundles().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get clusterTrustBundle %q: %w", name, err)
	}
	return b, nil
}

// ListClusterTrustBundles lists the ClusterTrustBundles of one signer.
func (c *Client) ListClusterTrustBundles(ctx context.Context, signerName string) ([]*certificatesv1.ClusterTrustBundle, error) {
	list, err := c.cs.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", signerName).String()})
	if err != nil {
		return nil, fmt.Errorf("list clusterTrustBundles of signer %q: %w", signerName, err)
	}
	out := make([]*certificatesv1.ClusterTrustBundle, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
