package scenarios

import (
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// mountOf returns the host path the running instance of container was
// given for mountPath ("" when none).
func mountOf(h *harness.Harness, uid types.UID, container, mountPath string) string {
	for _, c := range PodContainers(h, uid) {
		if c.Name != container || c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		for _, m := range h.Runtime.TrueMounts(c.ID) {
			if m.GetContainerPath() == mountPath {
				return m.GetHostPath()
			}
		}
	}
	return ""
}

func podDirExists(h *harness.Harness, uid types.UID) bool {
	_, err := h.Files.Stat(podspec.PodDir("", uid))
	return err == nil
}

func runChecked(t *testing.T, h *harness.Harness, c *Checker, d time.Duration) {
	t.Helper()
	if err := RunChecked(h, c, d, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
}

// TestVolumesEmptyDirSharedBetweenContainers: two containers of a pod
// mount the same emptyDir; both are given the same directory, below the
// pod's volumes directory, which exists while they run and is gone once
// the pod is deleted.
func TestVolumesEmptyDirSharedBetweenContainers(t *testing.T) {
	h := start(t, 71)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("shared", h.NodeName, WithVolume(emptyDir("scratch")),
		Mounts("app", "scratch", "/out"), Mounts("sidecar", "scratch", "/in")))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "shared", corev1.PodRunning, true) })
	want := path.Join(podspec.PodVolumesDir("", pod.UID), podspec.PluginEmptyDir, "scratch")
	app, sidecar := mountOf(h, pod.UID, "app", "/out"), mountOf(h, pod.UID, "sidecar", "/in")
	if app != want || sidecar != want {
		t.Fatalf("mounts: app %q, sidecar %q; want both %q", app, sidecar, want)
	}
	if info, err := h.Files.Stat(want); err != nil || !info.IsDir() {
		t.Fatalf("the emptyDir %s is not a directory: %v", want, err)
	}
	if err := h.API.User().DeletePodGracefully("default", "shared", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 40*time.Second)
	if podDirExists(h, pod.UID) {
		t.Errorf("the pod directory %s remains after the pod was deleted", podspec.PodDir("", pod.UID))
	}
}

// TestVolumesConfigMapUpdatedWhileRunning: a ConfigMap volume holds the
// ConfigMap's keys; an update reaches the running container's volume
// within the resync period, through a new ..data directory, and the
// container is not restarted.
func TestVolumesConfigMapUpdatedWhileRunning(t *testing.T) {
	h := start(t, 72)
	c := NewChecker(h)
	putConfigMap(h, "settings", map[string]string{"mode": "blue"})
	pod := mustCreate(t, h, NewPod("reader", h.NodeName, WithVolume(configMapVolume("cfg", "settings")), Mounts("app", "cfg", "/etc/app")))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "reader", corev1.PodRunning, true) })
	dir := mountOf(h, pod.UID, "app", "/etc/app")
	read := func() string {
		data, err := h.Files.ReadFile(dir + "/mode")
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	if dir == "" || read() != "blue" {
		t.Fatalf("mount %q reads %q; want blue", dir, read())
	}
	before := PodContainers(h, pod.UID)
	putConfigMap(h, "settings", map[string]string{"mode": "green"})
	runChecked(t, h, c, 70*time.Second)
	if got := read(); got != "green" {
		t.Fatalf("after the update the volume reads %q; want green", got)
	}
	if after := PodContainers(h, pod.UID); len(after) != len(before) || after[0].ID != before[0].ID {
		t.Errorf("containers changed with the update: %v → %v", before, after)
	}
}

// TestVolumesMissingConfigMapFailedMountThenStarts: a pod whose ConfigMap
// does not exist gets FailedMount events naming the volume and the cause
// and no container; once the ConfigMap is created, the pod starts.
func TestVolumesMissingConfigMapFailedMountThenStarts(t *testing.T) {
	h := start(t, 73)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("waits", h.NodeName, WithVolume(configMapVolume("cfg", "later")), Mounts("app", "cfg", "/etc/app")))
	other := mustCreate(t, h, NewPod("other", h.NodeName))
	runChecked(t, h, c, 3*time.Minute)
	if n := len(PodContainers(h, pod.UID)); n != 0 {
		t.Fatalf("%d containers started without their volume", n)
	}
	if !PodIs(h, "default", "other", corev1.PodRunning, true) {
		t.Errorf("another pod %s was held up by the missing volume", other.Name)
	}
	var mountEvent string
	for _, e := range h.API.User().Events() {
		if e.Reason == "FailedMount" && e.Object.UID == pod.UID && strings.Contains(e.Message, "unmounted volumes=[cfg]") {
			mountEvent = e.Message
		}
	}
	if !strings.Contains(mountEvent, `configmap "later" not found`) {
		t.Fatalf("no FailedMount event naming the volume and the missing configmap (last: %q)", mountEvent)
	}
	if p, _ := APIPod(h, "default", "waits"); len(p.Status.ContainerStatuses) != 1 ||
		p.Status.ContainerStatuses[0].State.Waiting == nil || p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("status while waiting: %+v; want app waiting ContainerCreating", p.Status.ContainerStatuses)
	}
	putConfigMap(h, "later", map[string]string{"k": "v"})
	runUntil(t, h, "the pod runs once its configmap exists", 5*time.Minute, func() bool {
		return PodIs(h, "default", "waits", corev1.PodRunning, true)
	})
}

// TestVolumesAgentRestartKeepsLiveAndCleansOrphans: the agent crashes
// while pods run; meanwhile one pod is force-deleted and a stray pod
// directory is left on disk. The new agent rebuilds the volumes' state
// from disk (the live pod's content is not rewritten, its containers keep
// running with their volumes: volumes-kept), and removes the directories
// of the deleted pod and the stray one.
func TestVolumesAgentRestartKeepsLiveAndCleansOrphans(t *testing.T) {
	h := start(t, 74)
	c := NewChecker(h)
	putConfigMap(h, "settings", map[string]string{"mode": "blue"})
	live := mustCreate(t, h, NewPod("live", h.NodeName, WithVolume(configMapVolume("cfg", "settings")), Mounts("app", "cfg", "/etc/app"),
		WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/scratch")))
	gone := mustCreate(t, h, NewPod("gone", h.NodeName, WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/scratch")))
	runUntil(t, h, "both pods run", time.Minute, func() bool {
		return PodIs(h, "default", "live", corev1.PodRunning, true) && PodIs(h, "default", "gone", corev1.PodRunning, true)
	})
	cfgDir := mountOf(h, live.UID, "app", "/etc/app")
	data, _ := h.Files.Readlink(cfgDir + "/..data")

	h.CrashAgent()
	zero := int64(0)
	if err := h.API.User().DeletePodGracefully("default", "gone", &zero); err != nil {
		t.Fatal(err)
	}
	stray := types.UID("stray-0000")
	_ = h.Files.MkdirAll(path.Join(podspec.PodVolumesDir("", stray), podspec.PluginEmptyDir, "x"))
	runChecked(t, h, c, 5*time.Second)
	h.StartAgent()
	runChecked(t, h, c, 2*time.Minute)

	if podDirExists(h, gone.UID) || podDirExists(h, stray) {
		t.Errorf("orphaned pod directories remain: deleted pod %v, stray %v", podDirExists(h, gone.UID), podDirExists(h, stray))
	}
	if !PodIs(h, "default", "live", corev1.PodRunning, true) || mountOf(h, live.UID, "app", "/etc/app") != cfgDir {
		t.Fatalf("the live pod does not run with its volume any more")
	}
	if now, _ := h.Files.Readlink(cfgDir + "/..data"); now != data {
		t.Errorf("the live pod's unchanged configmap volume was republished: ..data %q → %q", data, now)
	}
}

// volumePod is the property test's pod with volumes: an emptyDir shared
// by an init container and the app, and a downwardAPI volume.
func volumePod(name, node string) *corev1.Pod {
	labels := corev1.Volume{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}
	return NewPod(name, node, Init("setup", time.Second, 0), WithVolume(emptyDir("scratch")), WithVolume(labels),
		Mounts("setup", "scratch", "/scratch"), Mounts("app", "scratch", "/scratch"), Mounts("app", "labels", "/etc/podinfo"))
}

// TestVolumesSubPathSymlinkEscapeRefused: a container replaces the
// directory another container mounts by subPath with a symbolic link to
// the host's /etc (CVE-2017-1002101); the next instance of that container
// is refused (CreateContainerConfigError naming the link), never given
// the host directory.
func TestVolumesSubPathSymlinkEscapeRefused(t *testing.T) {
	h := start(t, 75)
	pod := mustCreate(t, h, NewPod("escape", h.NodeName, WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/s"),
		Exits("victim", 2*time.Second, 1), func(p *corev1.Pod) {
			c := findOrAdd(p, "victim")
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/data", SubPath: "evil"})
		}))
	runUntil(t, h, "the victim ran once", time.Minute, func() bool { return mountOf(h, pod.UID, "victim", "/data") != "" })
	sub := mountOf(h, pod.UID, "victim", "/data")
	// What a container writing into the shared volume can do.
	if err := h.Files.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := h.Files.Symlink("/etc", sub); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "the victim's restart is refused", 2*time.Minute, func() bool {
		p, _ := APIPod(h, "default", "escape")
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; cs.Name == "victim" && w != nil && w.Reason == "CreateContainerConfigError" &&
				strings.Contains(w.Message, "outside its volume") {
				return true
			}
		}
		return false
	})
	for _, c := range PodContainers(h, pod.UID) {
		for _, m := range h.Runtime.TrueMounts(c.ID) {
			if strings.HasPrefix(m.GetHostPath(), "/etc") {
				t.Fatalf("container %s was given %s", c.Name, m.GetHostPath())
			}
		}
	}
}

// TestVolumesKeptWhileAnUnseenContainerRuns: with a lagging runtime view,
// a pod is deleted just after its init container started; the agent must
// not declare the pod terminated (and tear its volumes down) while that
// container, which the view does not show yet, still runs.
func TestVolumesKeptWhileAnUnseenContainerRuns(t *testing.T) {
	h := start(t, 76)
	c := NewChecker(h)
	h.Runtime.SetListStaleness(2500 * time.Millisecond)
	pod := mustCreate(t, h, NewPod("lagging", h.NodeName, Init("setup", 10*time.Second, 0), WithVolume(emptyDir("scratch")),
		Mounts("setup", "scratch", "/scratch"), Mounts("app", "scratch", "/scratch")))
	runUntil(t, h, "the init container runs", time.Minute, func() bool {
		for _, ct := range TrueContainers(h) {
			if ct.PodUID == pod.UID && ct.Name == "setup" && ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return true
			}
		}
		return false
	})
	zero := int64(0)
	if err := h.API.User().DeletePodGracefully("default", "lagging", &zero); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 30*time.Second)
	for _, ct := range TrueContainers(h) {
		if ct.PodUID == pod.UID && ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s of the deleted pod still runs", ct.Name)
		}
	}
}

// TestVolumesSecretAndMemoryEmptyDirOnTmpfs: a Secret volume and an
// emptyDir of medium Memory are tmpfs mounts (the latter sized by its
// sizeLimit), unmounted before the pod's directory is removed.
func TestVolumesSecretAndMemoryEmptyDirOnTmpfs(t *testing.T) {
	h := start(t, 77)
	c := NewChecker(h)
	h.API.User().PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"pw": []byte("x")}})
	limit := resource.MustParse("8Mi")
	pod := mustCreate(t, h, NewPod("tmpfs", h.NodeName,
		WithVolume(corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}),
		WithVolume(corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: &limit}}}),
		Mounts("app", "sec", "/sec"), Mounts("app", "mem", "/mem")))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "tmpfs", corev1.PodRunning, true) })
	sec, mem := mountOf(h, pod.UID, "app", "/sec"), mountOf(h, pod.UID, "app", "/mem")
	if _, ok := h.Mounts.Size(sec); !ok {
		t.Errorf("the secret volume %s is not a tmpfs", sec)
	}
	if size, ok := h.Mounts.Size(mem); !ok || size != 8<<20 {
		t.Errorf("the memory emptyDir %s: tmpfs %v of %d bytes; want one of 8Mi", mem, ok, size)
	}
	if data, err := h.Files.ReadFile(sec + "/pw"); err != nil || string(data) != "x" {
		t.Errorf("secret content %q, %v", data, err)
	}
	if err := h.API.User().DeletePodGracefully("default", "tmpfs", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 40*time.Second)
	for _, dir := range []string{sec, mem} {
		if mnt, _ := h.Mounts.IsMountPoint(dir); mnt {
			t.Errorf("%s is still mounted after the pod was deleted", dir)
		}
	}
	if podDirExists(h, pod.UID) {
		t.Errorf("the pod directory remains")
	}
}

// TestVolumesClaimWaitsUntilBoundThenStarts: a pod whose claim is not
// bound gets FailedMount events naming the claim and no container (the
// node's other pods run); once the claim is bound to a local
// PersistentVolume the pod starts with the volume's path mounted (a
// subPath that links inside the PersistentVolume is no escape), after
// one GET of the claim and one of the volume per attempt; its deletion
// removes the pod's directory and leaves the volume's data.
func TestVolumesClaimWaitsUntilBoundThenStarts(t *testing.T) {
	t.Parallel()
	h := start(t, 75)
	c := NewChecker(h)
	h.API.User().PutPersistentVolumeClaim(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}})
	pod := mustCreate(t, h, NewPod("db", h.NodeName, WithVolume(claimVolume("store", "data")), Mounts("app", "store", "/var/db"),
		func(p *corev1.Pod) {
			c := findOrAdd(p, "app")
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "store", MountPath: "/var/sub", SubPath: "sub"})
		}))
	mustCreate(t, h, NewPod("other", h.NodeName))
	runChecked(t, h, c, 2*time.Minute)
	if n := len(PodContainers(h, pod.UID)); n != 0 {
		t.Fatalf("%d containers started without their claim", n)
	}
	if !PodIs(h, "default", "other", corev1.PodRunning, true) {
		t.Errorf("another pod was held up by the unbound claim")
	}
	var mountEvent string
	for _, e := range h.API.User().Events() {
		if e.Reason == "FailedMount" && e.Object.UID == pod.UID && strings.Contains(e.Message, `volume "store"`) {
			mountEvent = e.Message
		}
	}
	if !strings.Contains(mountEvent, `persistentvolumeclaim "default/data" is not bound (phase "Pending"`) {
		t.Fatalf("no FailedMount event naming the unbound claim (last: %q)", mountEvent)
	}
	// A subPath that is a link to an absolute path inside the
	// PersistentVolume stays inside the volume.
	_ = h.Files.MkdirAll("/mnt/disks/ssd1/real")
	if err := h.Files.Symlink("/mnt/disks/ssd1/real", "/mnt/disks/ssd1/sub"); err != nil {
		t.Fatal(err)
	}
	bindLocalClaim(h, "data", "local-pv-1", "/mnt/disks/ssd1")
	runUntil(t, h, "the pod runs once its claim is bound", 3*time.Minute, func() bool {
		return PodIs(h, "default", "db", corev1.PodRunning, true)
	})
	dir := mountOf(h, pod.UID, "app", "/var/db")
	if want := path.Join(podspec.PodVolumesDir("", pod.UID), podspec.PluginLocalVolume, "store"); dir != want {
		t.Fatalf("mount /var/db from %q, want %q", dir, want)
	}
	if target, err := h.Files.Readlink(dir); err != nil || target != "/mnt/disks/ssd1" {
		t.Fatalf("%s links to %q (%v), want /mnt/disks/ssd1", dir, target, err)
	}
	h.Files.WriteFile("/mnt/disks/ssd1/table", []byte("rows"))
	runChecked(t, h, c, 3*time.Minute) // resyncs do not read the claim again
	if n := h.API.Requests()[apiserver.Request{Verb: "get", Resource: "persistentvolumes"}]; n != 1 {
		t.Errorf("%d GETs of the PersistentVolume, want 1 (the claim is resolved once)", n)
	}
	if err := h.API.User().DeletePodGracefully("default", "db", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 40*time.Second)
	if podDirExists(h, pod.UID) {
		t.Errorf("the pod directory remains after the pod was deleted")
	}
	if data, err := h.Files.ReadFile("/mnt/disks/ssd1/table"); err != nil || string(data) != "rows" {
		t.Errorf("the PersistentVolume's data after the pod's deletion: %q, %v", data, err)
	}
}

// TestVolumesClusterTrustBundleAndPodCertificate: a projected volume with
// a clusterTrustBundle source (by signer and label selector) is set up
// and the pod runs with the bundle's certificates mounted; a pod with a
// podCertificate source, which lockstep does not issue, waits with a
// FailedMount event saying so instead of running without its
// certificate.
func TestVolumesClusterTrustBundleAndPodCertificate(t *testing.T) {
	h := start(t, 76)
	c := NewChecker(h)
	signer := "example.com/ca"
	h.API.User().PutClusterTrustBundle(&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:ca:1", Labels: map[string]string{"env": "prod"}},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n"}})
	ctb := corev1.Volume{Name: "anchors", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: &signer, LabelSelector: &metav1.LabelSelector{}, Path: "ca.pem"}}}}}}
	cert := corev1.Volume{Name: "cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{PodCertificate: &corev1.PodCertificateProjection{SignerName: signer, KeyType: "ED25519", CredentialBundlePath: "creds.pem"}}}}}}
	trusting := mustCreate(t, h, NewPod("trusting", h.NodeName, WithVolume(ctb), Mounts("app", "anchors", "/etc/ca")))
	certified := mustCreate(t, h, NewPod("certified", h.NodeName, WithVolume(cert), Mounts("app", "cert", "/etc/cert")))
	runUntil(t, h, "trusting Running", time.Minute, func() bool { return PodIs(h, "default", "trusting", corev1.PodRunning, true) })
	data, err := h.Files.ReadFile(mountOf(h, trusting.UID, "app", "/etc/ca") + "/ca.pem")
	if err != nil || string(data) != "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n" {
		t.Errorf("ca.pem = %q (%v); want the bundle's certificate", data, err)
	}
	runChecked(t, h, c, time.Minute)
	if n := len(PodContainers(h, certified.UID)); n != 0 {
		t.Errorf("%d containers of the podCertificate pod started", n)
	}
	if ev := eventsAbout(h, "default", "certified"); !hasEvent(ev, "Warning FailedMount: ", "podCertificate projected volume sources (PodCertificateRequest) are not supported by lockstep") {
		t.Errorf("no FailedMount event naming the podCertificate source; events %q", ev)
	}
}

// TestVolumesCompletedPodKeepsItsDirectoryUntilDeleted: a pod that ran to
// completion and stays in the API has its volumes torn down, but its
// directory keeps the files behind its containers' other mounts (the
// hosts file) until the pod is deleted, as the kubelet's does (it
// removes pod directories only for pods it no longer has); then the
// directory goes (issue 27 cause F1).
func TestVolumesCompletedPodKeepsItsDirectoryUntilDeleted(t *testing.T) {
	h := start(t, 72)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("done", h.NodeName, Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 0),
		WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/out")))
	runUntil(t, h, "the pod succeeds", time.Minute, func() bool { return PodIs(h, "default", "done", corev1.PodSucceeded, false) })
	runChecked(t, h, c, 30*time.Second)
	hosts := podspec.HostsFilePath("", pod.UID)
	exists := func(p string) bool { _, err := h.Files.Stat(p); return err == nil }
	vols, _ := h.Files.ReadDir(podspec.PodVolumesDir("", pod.UID))
	got := map[string]bool{"hosts file": exists(hosts), "volumes": len(vols) > 0}
	if diff := cmp.Diff(map[string]bool{"hosts file": true, "volumes": false}, got); diff != "" {
		t.Errorf("30 s after the pod completed, present (-want +got):\n%s", diff)
	}
	if err := h.API.User().DeletePodGracefully("default", "done", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 30*time.Second)
	if podDirExists(h, pod.UID) {
		t.Errorf("the pod directory %s remains after the pod was deleted", podspec.PodDir("", pod.UID))
	}
}

// TestVolumesDownwardAnnotationsIncludeTheAgentsOwn: a downwardAPI volume
// of metadata.annotations holds, beside the pod's own annotations, the two
// the kubelet adds to every pod it receives: kubernetes.io/config.source
// ("api") and kubernetes.io/config.seen (when it first saw the pod,
// RFC 3339 with nanoseconds) — issue 27 cause F3.
func TestVolumesDownwardAnnotationsIncludeTheAgentsOwn(t *testing.T) {
	h := start(t, 73)
	info := corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}}}
	created := h.K.Now()
	pod := mustCreate(t, h, NewPod("annotated", h.NodeName, WithVolume(info), Mounts("app", "info", "/etc/podinfo"), func(p *corev1.Pod) {
		p.Annotations = map[string]string{"team": "a"}
	}))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "annotated", corev1.PodRunning, true) })
	data, err := h.Files.ReadFile(path.Join(podspec.PodVolumesDir("", pod.UID), podspec.PluginDownwardAPI, "info", "annotations"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	seen, err := time.Parse(time.RFC3339Nano, strings.Trim(got["kubernetes.io/config.seen"], `"`))
	if err != nil || seen.Before(created) || seen.After(created.Add(10*time.Second)) {
		t.Errorf("config.seen %q (%v): want the first sighting, within 10 s of the creation at %v", got["kubernetes.io/config.seen"], err, created)
	}
	delete(got, "kubernetes.io/config.seen")
	if diff := cmp.Diff(map[string]string{"team": `"a"`, "kubernetes.io/config.source": `"api"`}, got); diff != "" {
		t.Errorf("annotations file (-want +got):\n%s\n%s", diff, data)
	}
}

// TestVolumesDownwardLabelsFollowAnUpdate: a label change reaches a
// running pod's downwardAPI volume within a few seconds (the kubelet
// remounts such volumes at every sync of the pod), not at the next
// minute's resync — issue 27 cause F3, second half.
func TestVolumesDownwardLabelsFollowAnUpdate(t *testing.T) {
	h := start(t, 74)
	pod := mustCreate(t, h, volumePod("relabel", h.NodeName))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "relabel", corev1.PodRunning, true) })
	runChecked(t, h, NewChecker(h), 20*time.Second) // well inside the minute's resync
	p, err := h.API.User().GetPod("default", "relabel")
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"tier": "api"}
	if _, err := h.API.User().UpdatePod(p); err != nil {
		t.Fatal(err)
	}
	file := path.Join(podspec.PodVolumesDir("", pod.UID), podspec.PluginDownwardAPI, "labels", "labels")
	var data []byte
	runUntil(t, h, "the new label in the volume", 5*time.Second, func() bool {
		data, _ = h.Files.ReadFile(file)
		return string(data) == `tier="api"`
	})
}

// TestVolumesMissingSourceStatusWhileWaiting: a pod whose Secret (with an
// init container) or ConfigMap (without) volume does not exist gets its
// status written while its sync waits for the volume, as the kubelet's
// SyncPod writes it before WaitForAttachAndMount: Pending, PodScheduled
// True, PodReadyToStartContainers False, Initialized True only without
// init containers (else False, ContainersNotInitialized), ContainersReady
// and Ready False, every container waiting (ContainerCreating, or
// PodInitializing with init containers); then deleted, it is gone from
// the API within seconds (upstream's "should not hang when terminating
// pods mounting non-existent volumes": 10 s).
func TestVolumesMissingSourceStatusWhileWaiting(t *testing.T) {
	h := start(t, 74)
	c := NewChecker(h)
	secret := corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nosuch"}}}
	cm := mustCreate(t, h, NewPod("cm", h.NodeName, WithVolume(configMapVolume("cfg", "nosuch")), Mounts("app", "cfg", "/etc/app")))
	sec := mustCreate(t, h, NewPod("sec", h.NodeName, WithVolume(secret), Mounts("app", "creds", "/creds"), Init("setup", time.Second, 0)))
	runChecked(t, h, c, 10*time.Second)
	want := map[string]summary{
		"cm": {Phase: corev1.PodPending, Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{
			corev1.PodScheduled: "True", corev1.PodReadyToStartContainers: "False", corev1.PodInitialized: "True",
			corev1.ContainersReady: "False", corev1.PodReady: "False"},
			Containers: map[string]string{"app": "waiting:ContainerCreating"}, Restarts: map[string]int32{"app": 0}},
		"sec": {Phase: corev1.PodPending, Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{
			corev1.PodScheduled: "True", corev1.PodReadyToStartContainers: "False", corev1.PodInitialized: "False",
			corev1.ContainersReady: "False", corev1.PodReady: "False"},
			Containers: map[string]string{"setup": "waiting:PodInitializing", "app": "waiting:PodInitializing"},
			Restarts:   map[string]int32{"setup": 0, "app": 0}},
	}
	got := map[string]summary{}
	for _, p := range []*corev1.Pod{cm, sec} {
		ap, ok := APIPod(h, "default", p.Name)
		if !ok {
			t.Fatalf("pod %s gone", p.Name)
		}
		got[p.Name] = summarize(ap)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status 10 s after creation, volumes missing (-want +got):\n%s", diff)
	}
	reasons := func(name string) map[corev1.PodConditionType]string {
		ap, _ := APIPod(h, "default", name)
		out := map[corev1.PodConditionType]string{}
		for _, cd := range ap.Status.Conditions {
			out[cd.Type] = cd.Reason
		}
		return out
	}
	if diff := cmp.Diff(map[corev1.PodConditionType]string{
		corev1.PodScheduled: "", corev1.PodReadyToStartContainers: "PodSandboxNotReady", corev1.PodInitialized: "ContainersNotInitialized",
		corev1.ContainersReady: "ContainersNotReady", corev1.PodReady: "ContainersNotReady"}, reasons("sec")); diff != "" {
		t.Errorf("condition reasons of sec (-want +got):\n%s", diff)
	}
	if testing.Verbose() {
		ap, _ := APIPod(h, "default", "sec")
		t.Logf("status of sec: %+v", ap.Status)
	}
	if err := h.API.User().DeletePodGracefully("default", "cm", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "the deleted pod gone from the API", 10*time.Second, func() bool {
		_, ok := APIPod(h, "default", "cm")
		return !ok
	})
	c.Check()
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
