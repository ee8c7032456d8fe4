package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumesObjectsWatched: the configMap and secret of a pod's volumes
// are watched (one single-object watch each, shared by two pods) instead
// of read every minute: after set-up no GET is made in ten virtual
// minutes, an update reaches the volume within seconds, a dropped watch
// is opened again and still delivers updates, and the watches close with
// the last pod referencing them.
func TestVolumesObjectsWatched(t *testing.T) {
	h := start(t, 96)
	c := NewChecker(h)
	putConfigMap(h, "settings", map[string]string{"mode": "blue"})
	h.API.User().PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Data: map[string][]byte{"pw": []byte("1")}})
	secretVol := corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}
	a := mustCreate(t, h, NewPod("a", h.NodeName, WithVolume(configMapVolume("cfg", "settings")), Mounts("app", "cfg", "/etc/app"),
		WithVolume(secretVol), Mounts("app", "sec", "/sec")))
	mustCreate(t, h, NewPod("b", h.NodeName, WithVolume(configMapVolume("cfg", "settings")), Mounts("app", "cfg", "/etc/app")))
	runUntil(t, h, "the pods run", time.Minute, func() bool {
		return PodIs(h, "default", "a", corev1.PodRunning, true) && PodIs(h, "default", "b", corev1.PodRunning, true)
	})
	runChecked(t, h, c, 5*time.Second)
	before := h.API.User().ObjectRequests()
	if got := h.API.User().OpenObjectWatches(); got != 2 {
		t.Errorf("%d object watches open, want 2 (one configMap shared by both pods, one secret)", got)
	}
	runChecked(t, h, c, 10*time.Minute)
	if diff := cmp.Diff(before, h.API.User().ObjectRequests()); diff != "" {
		t.Errorf("requests about configMaps and secrets in 10 minutes of steady state (-before +after):\n%s", diff)
	}
	readCfg := func() string {
		data, _ := h.Files.ReadFile(mountOf(h, a.UID, "app", "/etc/app") + "/mode")
		return string(data)
	}
	putConfigMap(h, "settings", map[string]string{"mode": "green"})
	runChecked(t, h, c, 3*time.Second)
	if got := readCfg(); got != "green" {
		t.Errorf("3 s after the update the volume reads %q, want green", got)
	}
	h.API.DropWatches()
	runChecked(t, h, c, 5*time.Second)
	putConfigMap(h, "settings", map[string]string{"mode": "red"})
	runChecked(t, h, c, 3*time.Second)
	if got := readCfg(); got != "red" {
		t.Errorf("after a dropped watch, 3 s after the update the volume reads %q, want red", got)
	}
	for _, name := range []string{"a", "b"} {
		if err := h.API.User().DeletePodGracefully("default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	runChecked(t, h, c, 45*time.Second)
	if got := h.API.User().OpenObjectWatches(); got != 0 {
		t.Errorf("%d object watches still open after the pods were deleted", got)
	}
	t.Logf("requests about configMaps and secrets: %v", h.API.User().ObjectRequests())
}
