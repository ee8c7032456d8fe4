package volume_test

import (
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

func pemOf(ders ...string) string {
	var b strings.Builder
	for _, d := range ders {
		b.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(d)}))
	}
	return b.String()
}

func projected(name string, sources ...corev1.VolumeProjection) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// TestClusterTrustBundleProjections: a clusterTrustBundle source by name
// publishes the bundle's certificates; by signer and label selector, the
// distinct certificates of every matching bundle of that signer, sorted;
// an optional source that matches nothing publishes an empty file; a
// required one that matches nothing, and a podCertificate source, fail
// the volume with upstream's message and ours.
func TestClusterTrustBundleProjections(t *testing.T) {
	w := newWorld(t)
	put := func(name, signer string, labels map[string]string, ders ...string) {
		w.api.User().PutClusterTrustBundle(&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pemOf(ders...)}})
	}
	put("named", "", nil, "root-a")
	put("example.com:ca:1", "example.com/ca", map[string]string{"env": "prod"}, "root-c", "root-b")
	put("example.com:ca:2", "example.com/ca", map[string]string{"env": "prod"}, "root-b", "root-d")
	put("example.com:ca:3", "example.com/ca", map[string]string{"env": "dev"}, "root-x")
	put("other:1", "other.io/ca", map[string]string{"env": "prod"}, "root-y")
	yes := true
	str := func(s string) *string { return &s }
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	pod := w.pod("p", projected("bundles",
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: str("named"), Path: "named.pem"}},
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: str("example.com/ca"), LabelSelector: prod, Path: "prod.pem"}},
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: str("example.com/ca"), Path: "nil-selector.pem", Optional: &yes}},
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: str("missing"), Path: "missing.pem", Optional: &yes}},
	))
	w.m.AddPod(pod)
	if err, done := w.wait(pod, time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod: done=%v err=%v", done, err)
	}
	dir := volDir(pod, podspec.PluginProjected, "bundles")
	got := map[string]string{}
	for _, f := range []string{"named.pem", "prod.pem", "nil-selector.pem", "missing.pem"} {
		got[f] = w.read(dir + "/" + f)
	}
	want := map[string]string{"named.pem": pemOf("root-a"), "prod.pem": pemOf("root-b", "root-c", "root-d"), "nil-selector.pem": "", "missing.pem": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("published trust anchors (-want +got):\n%s", d)
	}

	for name, tc := range map[string]struct {
		src  corev1.VolumeProjection
		want string
	}{
		"nomatch": {corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: str("example.com/ca"),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "staging"}}, Path: "x.pem"}},
			"combination of signerName and labelSelector matched zero ClusterTrustBundles"},
		"nobundle": {corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: str("missing"), Path: "x.pem"}},
			`while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "missing" not found`},
		"podcert": {corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/ca", CredentialBundlePath: "c.pem"}},
			"podCertificate projected volume sources (PodCertificateRequest) are not supported by lockstep"},
	} {
		bad := w.pod(name, projected("v", tc.src))
		w.m.AddPod(bad)
		err, done := w.wait(bad, 3*time.Minute)
		if !done || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WaitForPod done=%v err=%v; want an error saying %q", name, done, err, tc.want)
		}
	}
}
