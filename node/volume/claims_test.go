package volume_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume"
)

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// bind binds claim default/name to a new PersistentVolume of source src.
func (w *world) bind(name, pvName string, src corev1.PersistentVolumeSource) {
	w.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metaName(name)}
	pvc.UID = types.UID("uid-of-claim-" + name)
	w.api.User().PutPersistentVolume(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: src, ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name, UID: pvc.UID}}})
	pvc.Spec.VolumeName = pvName
	pvc.Status.Phase = corev1.ClaimBound
	w.api.User().PutPersistentVolumeClaim(pvc)
}

func TestClaimWaitsUntilBoundThenLinksTheLocalVolume(t *testing.T) {
	w := newWorld(t)
	_ = w.files.MkdirAll("/mnt/disks/d1")
	pod := w.pod("p", claimVolume("data", "claim"))
	w.m.AddPod(pod)
	err, done := w.wait(pod, 3*time.Minute)
	if !done || err == nil || !strings.Contains(err.Error(), `persistentvolumeclaim "default/claim" not found`) {
		t.Fatalf("WaitForPod without the claim: done=%v err=%v; want a timeout naming the claim", done, err)
	}
	w.api.User().PutPersistentVolumeClaim(&corev1.PersistentVolumeClaim{ObjectMeta: metaName("claim"), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}})
	err, done = w.wait(pod, 3*time.Minute)
	if !done || err == nil || !strings.Contains(err.Error(), `persistentvolumeclaim "default/claim" is not bound (phase "Pending"`) {
		t.Fatalf("WaitForPod with the claim unbound: done=%v err=%v; want a timeout saying it is not bound", done, err)
	}
	if n := countEvents(w.api, volume.ReasonFailedMount); n == 0 {
		t.Errorf("no %s event", volume.ReasonFailedMount)
	}
	w.bind("claim", "pv-1", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/d1/"}})
	if err, done := w.wait(pod, 5*time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod once bound: done=%v err=%v", done, err)
	}
	dir := volDir(pod, podspec.PluginLocalVolume, "data")
	if target, err := w.files.Readlink(dir); err != nil || target != "/mnt/disks/d1" {
		t.Fatalf("volume directory links to %q (%v), want /mnt/disks/d1", target, err)
	}
	// Teardown removes the link, never the PersistentVolume's data.
	w.files.WriteFile("/mnt/disks/d1/kept", []byte("x"))
	w.m.RemovePod(pod.UID)
	w.run(2 * time.Second)
	if _, err := w.files.Stat(podspec.PodDir(root, pod.UID)); err == nil {
		t.Errorf("pod directory still there after teardown")
	}
	if got := w.read("/mnt/disks/d1/kept"); got != "x" {
		t.Errorf("the PersistentVolume's file after teardown = %q, want x", got)
	}
}

func TestClaimOfHostPathAndUnsupportedVolumes(t *testing.T) {
	w := newWorld(t)
	typ := corev1.HostPathDirectoryOrCreate
	w.bind("hp", "pv-hp", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/pv", Type: &typ}})
	w.bind("nfs", "pv-nfs", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/x"}})
	ok := w.pod("ok", claimVolume("data", "hp"))
	w.m.AddPod(ok)
	if err, done := w.wait(ok, time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod: done=%v err=%v", done, err)
	}
	if info, err := w.files.Stat(volDir(ok, podspec.PluginLocalVolume, "data")); err != nil || !info.IsDir() {
		t.Errorf("hostPath PersistentVolume's DirectoryOrCreate: %v", err)
	}
	bad := w.pod("bad", claimVolume("data", "nfs"))
	w.m.AddPod(bad)
	err, done := w.wait(bad, 3*time.Minute)
	want := `persistentvolume "pv-nfs" of claim "default/nfs": volume plugin kubernetes.io/nfs is not supported by lockstep`
	if !done || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("WaitForPod: done=%v err=%v; want %q", done, err, want)
	}
	var msg string
	for _, e := range w.api.User().Events() {
		if e.Reason == volume.ReasonFailedMount && e.Object.Name == "bad" {
			msg = e.Message
		}
	}
	if !strings.Contains(msg, `MountVolume.SetUp failed for volume "data"`) || !strings.Contains(msg, want) {
		t.Errorf("FailedMount event of pod bad: %q; want it to name the volume and say %q", msg, want)
	}
}
