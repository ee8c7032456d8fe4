//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
)

// podDir is a pod's directory under lockstep's --root-dir (run.sh).
func (e *env) podDir(uid string) string { return filepath.Join(e.dir, "lockstep", "pods", uid) }

func mount(name, path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, MountPath: path}
}

// waitLogs waits until a container's log holds want.
func (e *env) waitLogs(t *testing.T, p *corev1.Pod, container, want string, d time.Duration) {
	t.Helper()
	poll(t, d, fmt.Sprintf("%q in the log of %s/%s", want, p.Name, container), func() (bool, error) {
		code, body := e.logs(t, p, container, e.adminTok)
		return code == 200 && strings.Contains(body, want), fmt.Errorf("%d %q", code, body)
	})
}

// TestVolumesEmptyDirSharedAndCleanedUp: two containers share an
// emptyDir (one writes, the other reads); once the pod is deleted its
// directory under the root dir is gone.
func TestVolumesEmptyDirSharedAndCleanedUp(t *testing.T) {
	e := setup(t)
	p := e.pod("shared", false, `echo shared-hello > /data/f; `+sleeper)
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("scratch", "/data")}
	reader := p.Spec.Containers[0]
	reader.Name = "reader"
	reader.Command = []string{"sh", "-c", `until cat /in/f; do sleep 0.2; done; ` + sleeper}
	reader.VolumeMounts = []corev1.VolumeMount{mount("scratch", "/in")}
	p.Spec.Containers = append(p.Spec.Containers, reader)
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	e.waitLogs(t, p, "reader", "shared-hello", 20*time.Second)
	dir := e.podDir(string(p.UID))
	if _, err := os.Stat(filepath.Join(dir, "volumes", "kubernetes.io~empty-dir", "scratch", "f")); err != nil {
		t.Fatalf("the emptyDir's file on the host: %v", err)
	}
	e.deleteAndWait(t, p, 60*time.Second)
	poll(t, 30*time.Second, "pod directory "+dir+" removed", func() (bool, error) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), err
	})
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mi), dir) {
		t.Errorf("something of the pod is still mounted: %s", dir)
	}
}

// TestVolumesConfigMapAndSecretReadableAndUpdated: a container reads a
// ConfigMap volume and a Secret volume; an update of the ConfigMap
// reaches the running container.
func TestVolumesConfigMapAndSecretReadableAndUpdated(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	suffix := rand.String(5)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings-" + suffix, Namespace: "default"}, Data: map[string]string{"mode": "blue"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds-" + suffix, Namespace: "default"}, Data: map[string][]byte{"pw": []byte("hunter2")}}
	if _, err := e.admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.admin.CoreV1().ConfigMaps("default").Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
	if _, err := e.admin.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.admin.CoreV1().Secrets("default").Delete(ctx, sec.Name, metav1.DeleteOptions{}) })
	p := e.pod("apidata", false, `trap "exit 0" TERM; while :; do echo "cm=$(cat /cfg/mode) sec=$(cat /sec/pw)"; sleep 1; done`)
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sec.Name}}},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("cfg", "/cfg"), mount("sec", "/sec")}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	e.waitLogs(t, p, "c", "cm=blue sec=hunter2", 20*time.Second)
	cm.Data["mode"] = "green"
	if _, err := e.admin.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitLogs(t, p, "c", "cm=green sec=hunter2", 100*time.Second)
	if got := e.get(t, p); got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the container restarted (%d) with the update", got.Status.ContainerStatuses[0].RestartCount)
	}
}

// TestVolumesHostPath: a hostPath DirectoryOrCreate volume is created on
// the host and what the container writes lands there; a hostPath of type
// File that does not exist gives a FailedMount event and no container.
func TestVolumesHostPath(t *testing.T) {
	e := setup(t)
	hostDir := filepath.Join(e.dir, "hostpath-"+rand.String(5))
	t.Cleanup(func() { _ = os.RemoveAll(hostDir) })
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	p := e.pod("hostpath", false, `echo from-container > /host/out; `+sleeper)
	p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("host", "/host")}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	poll(t, 20*time.Second, "the container's file on the host", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(hostDir, "out"))
		return strings.TrimSpace(string(b)) == "from-container", err
	})

	file := corev1.HostPathFile
	bad := e.pod("hostpath-missing", false, sleeper)
	missing := filepath.Join(e.dir, "no-such-file-"+rand.String(5))
	bad.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: missing, Type: &file}}}}
	bad.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("host", "/host")}
	bad = e.create(t, bad)
	poll(t, 30*time.Second, "a FailedMount event for "+bad.Name, func() (bool, error) {
		evs, err := e.admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(bad.UID)).String()})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "FailedMount" && strings.Contains(ev.Message, missing+" does not exist") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
	if _, cs := e.criOf(t, string(bad.UID)); len(cs) != 0 {
		t.Errorf("%d containers created without their volume", len(cs))
	}
}

// TestVolumesSecretAndMemoryOnTmpfs: a Secret volume and an emptyDir of
// medium Memory are tmpfs inside the container, and nothing of the pod
// stays mounted on the host after its deletion.
func TestVolumesSecretAndMemoryOnTmpfs(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tmpfs-" + rand.String(5), Namespace: "default"}, Data: map[string][]byte{"pw": []byte("s3cret")}}
	if _, err := e.admin.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.admin.CoreV1().Secrets("default").Delete(ctx, sec.Name, metav1.DeleteOptions{}) })
	p := e.pod("tmpfs", false, `echo "fs: $(awk '$2=="/sec"{print $3}' /proc/mounts) $(awk '$2=="/mem"{print $3}' /proc/mounts) pw=$(cat /sec/pw)"; `+sleeper)
	p.Spec.Volumes = []corev1.Volume{
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sec.Name}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("sec", "/sec"), mount("mem", "/mem")}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	e.waitLogs(t, p, "c", "fs: tmpfs tmpfs pw=s3cret", 20*time.Second)
	dir := e.podDir(string(p.UID))
	e.deleteAndWait(t, p, 60*time.Second)
	poll(t, 30*time.Second, "pod directory "+dir+" removed and unmounted", func() (bool, error) {
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return false, err
		}
		_, serr := os.Stat(dir)
		return os.IsNotExist(serr) && !strings.Contains(string(mi), dir), fmt.Errorf("stat: %v; mounted: %v", serr, strings.Contains(string(mi), dir))
	})
}

// TestVolumesServiceAccountTokenReviewed: a pod gets the kube-api-access
// volume from the ServiceAccount admission plugin (run.sh turns it on and
// creates the objects a controller manager would); its container reads a
// token that the apiserver's TokenReview accepts as the pod's service
// account, bound to the pod, with the namespace and the CA beside it on a
// tmpfs.
func TestVolumesServiceAccountTokenReviewed(t *testing.T) {
	e := setup(t)
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
	p := e.pod("satoken", false, `echo "ns=$(cat `+dir+`/namespace) fs=$(awk '$2=="`+dir+`"{print $3}' /proc/mounts) ca=$(grep -c CERTIFICATE `+dir+`/ca.crt)"; `+
		`echo "token=$(cat `+dir+`/token)"; `+sleeper)
	p = e.create(t, p)
	injected := ""
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			injected = v.Name
		}
	}
	if injected == "" {
		t.Fatalf("the apiserver did not inject a kube-api-access volume (ServiceAccount admission off?): %+v", p.Spec.Volumes)
	}
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	e.waitLogs(t, p, "c", "ns=default fs=tmpfs ca=2", 20*time.Second)
	e.waitLogs(t, p, "c", "token=", 20*time.Second)
	_, body := e.logs(t, p, "c", e.adminTok)
	tok := field(body, "token=")
	if tok == "" {
		t.Fatalf("no token in the log: %q", body)
	}
	review, err := e.admin.AuthenticationV1().TokenReviews().Create(context.Background(),
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := review.Status
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:default" {
		t.Fatalf("TokenReview of the pod's token: %+v", st)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(p.UID) {
		t.Errorf("the token is bound to pod %v, want %s", got, p.UID)
	}
}

// TestVolumesFSGroupOwnership: with fsGroup, a non-root container finds
// its emptyDir owned by that group, setgid and writable, and a file it
// creates there belongs to the group.
func TestVolumesFSGroupOwnership(t *testing.T) {
	e := setup(t)
	uid, gid := int64(1000), int64(2000)
	p := e.pod("fsgroup", false, `echo "dir=$(stat -c '%g %a' /data)"; touch /data/f && echo "file=$(stat -c '%u %g' /data/f)"; `+sleeper)
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, FSGroup: &gid}
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("scratch", "/data")}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	e.waitLogs(t, p, "c", "dir=2000 2777", 20*time.Second)
	e.waitLogs(t, p, "c", "file=1000 2000", 20*time.Second)
}

// TestVolumesClaimBoundToLocalPV: a pod whose claim is not bound waits
// with a FailedMount event naming the claim and no container; once the
// claim is bound (by hand: the e2e control plane runs no binder) to a
// local PersistentVolume with node affinity to this node, the pod starts
// and what it writes lands in the volume's host directory, which the
// pod's deletion leaves in place.
func TestVolumesClaimBoundToLocalPV(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	suffix := rand.String(5)
	hostDir := filepath.Join(e.dir, "local-pv-"+suffix)
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(hostDir) })
	claimName, pvName := "claim-"+suffix, "local-pv-"+suffix
	fs, noClass := corev1.PersistentVolumeFilesystem, ""
	pvc, err := e.admin.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &fs,
			StorageClassName: &noClass,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claimName, metav1.DeleteOptions{})
	})

	p := e.pod("claim", false, `echo from-claim > /data/out; `+sleeper)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("data", "/data")}
	p = e.create(t, p)
	want := fmt.Sprintf(`persistentvolumeclaim "default/%s" is not bound`, claimName)
	poll(t, 30*time.Second, "a FailedMount event naming the unbound claim", func() (bool, error) {
		evs := e.events(t, p)
		for _, ev := range evs {
			if strings.HasPrefix(ev, "FailedMount: ") && strings.Contains(ev, want) {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %q", evs)
	})
	if _, cs := e.criOf(t, string(p.UID)); len(cs) != 0 {
		t.Fatalf("%d containers created before the claim was bound", len(cs))
	}

	// Bind: the PersistentVolume points at the claim, the claim at the
	// volume, and the claim's status says Bound.
	_, err = e.admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:                    &fs,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: hostDir}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "default", Name: claimName, UID: pvc.UID},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{e.node}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.admin.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{}) })
	pvc.Spec.VolumeName = pvName
	if pvc, err = e.admin.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	if _, err = e.admin.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The volume manager retries under its back-off (at most about 2 min).
	e.waitPod(t, p, 150*time.Second, "Ready", podReady)
	poll(t, 20*time.Second, "the container's file in the local volume", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(hostDir, "out"))
		return strings.TrimSpace(string(b)) == "from-claim", err
	})
	e.deleteAndWait(t, p, 60*time.Second)
	if b, err := os.ReadFile(filepath.Join(hostDir, "out")); err != nil || strings.TrimSpace(string(b)) != "from-claim" {
		t.Errorf("the volume's data after the pod's deletion: %q, %v", b, err)
	}
}

// selfSignedCA returns a new CA certificate as PEM.
func selfSignedCA(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestVolumesClusterTrustBundle: projected clusterTrustBundle sources, one
// by name and one by signer and label selector, put the bundles' CA
// certificates in the container (certificates.k8s.io/v1 is served by the
// e2e apiserver, as it is GA in v1.37; nodes read bundles through the
// node authorizer's node rules).
func TestVolumesClusterTrustBundle(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	suffix := rand.String(5)
	named, signed := selfSignedCA(t, "named-"+suffix), selfSignedCA(t, "signed-"+suffix)
	signer := "example.com/e2e-" + suffix
	bundles := []*certificatesv1.ClusterTrustBundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "e2e-named-" + suffix}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: named}},
		{ObjectMeta: metav1.ObjectMeta{Name: "example.com:e2e-" + suffix + ":1", Labels: map[string]string{"e2e": suffix}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: signed}},
	}
	for _, b := range bundles {
		if _, err := e.admin.CertificatesV1().ClusterTrustBundles().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.admin.CertificatesV1().ClusterTrustBundles().Delete(ctx, b.Name, metav1.DeleteOptions{}) })
	}
	name := bundles[0].Name
	p := e.pod("ctb", false, report(`cat /ca/named.pem /ca/signed.pem`))
	p.Spec.Volumes = []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: &name, Path: "named.pem"}},
		{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: &signer, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e": suffix}}, Path: "signed.pem"}},
	}}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{mount("ca", "/ca")}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	if got, want := e.logLines(t, p), named+signed+"END\n"; got != want {
		t.Errorf("the container read %q, want %q", got, want)
	}
}

// TestVolumesFiveObjectsStartFigure: a pod with five API data volumes
// (three configMaps, two secrets; plus the kube-api-access volume the
// ServiceAccount admission plugin adds) goes from creation to Ready, as
// seen by a watch; the figure is logged for docs/benchmarks.md, with
// lockstep's requests during the start.
func TestVolumesFiveObjectsStartFigure(t *testing.T) {
	e := setup(t)
	ctx := ctxT(t, 3*time.Minute)
	suffix := rand.String(5)
	p := e.pod("five", false, sleeper)
	p.Labels = map[string]string{"five": suffix}
	for i := range 5 {
		name := fmt.Sprintf("five-%s-%d", suffix, i)
		var src corev1.VolumeSource
		if i < 3 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": name}}
			if _, err := e.admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = e.admin.CoreV1().ConfigMaps("default").Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			src.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		} else {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"k": []byte(name)}}
			if _, err := e.admin.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = e.admin.CoreV1().Secrets("default").Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			src.Secret = &corev1.SecretVolumeSource{SecretName: name}
		}
		vol := fmt.Sprintf("v%d", i)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: src})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, mount(vol, "/"+vol))
	}
	w, err := e.admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "five=" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	reqStart := e.lockstepRequests(t)
	created := time.Now()
	p = e.create(t, p)
	for {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("watch closed before the pod was Ready")
		}
		if got, isPod := ev.Object.(*corev1.Pod); isPod && podReady(got) {
			break
		}
	}
	took := time.Since(created)
	t.Logf("FIGURE pod with 5 configMap/secret volumes, create -> Ready via watch: %v; lockstep's API requests meanwhile: %v",
		took.Round(time.Millisecond), perPod(reqStart, e.lockstepRequests(t), 1))
}

// TestVolumeMissingSecretStatusThenDelete: a pod whose secret volume
// names a secret that does not exist (the node suite's "Terminate Pods"
// and pod conditions specs) gets FailedMount events and, while its sync
// waits for the volume, the status the kubelet writes before that wait:
// Pending, PodScheduled True, PodReadyToStartContainers False,
// Initialized True, ContainersReady and Ready False, the container
// waiting in ContainerCreating; deleted, it is gone within 10 s.
func TestVolumeMissingSecretStatusThenDelete(t *testing.T) {
	e := setup(t)
	p := e.pod("missing-secret", false, "sleep 3600")
	p.Spec.Volumes = []corev1.Volume{{Name: "vol1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "non-existent-" + rand.String(8)}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "vol1", MountPath: "/mnt/vol1"}}
	p = e.create(t, p)
	want := map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReadyToStartContainers: corev1.ConditionFalse,
		corev1.PodInitialized: corev1.ConditionTrue, corev1.ContainersReady: corev1.ConditionFalse, corev1.PodReady: corev1.ConditionFalse,
	}
	got := e.waitPod(t, p, 20*time.Second, "waiting for its volume with its conditions written", func(p *corev1.Pod) bool {
		for ty, st := range want {
			if podCondition(p, ty) != st {
				return false
			}
		}
		return p.Status.Phase == corev1.PodPending
	})
	if cs := got.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("container statuses %+v; want c waiting in ContainerCreating", cs)
	}
	poll(t, 30*time.Second, "a FailedMount event", func() (bool, error) {
		evs := strings.Join(e.events(t, p), "\n")
		return strings.Contains(evs, "FailedMount: MountVolume.SetUp failed for volume \"vol1\""), fmt.Errorf("events:\n%s", evs)
	})
	start := time.Now()
	e.deleteAndWait(t, p, 10*time.Second)
	t.Logf("gone %v after the delete", time.Since(start).Round(100*time.Millisecond))
}
