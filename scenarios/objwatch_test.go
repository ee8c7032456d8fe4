package scenarios

import (
	"fmt"
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
	t.Parallel()
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

// TestVolumesFiveObjectsStartFigure: a pod with five API data volumes
// (three configMaps, two secrets) and one env var from each of two of
// them is Running and Ready within 5 s of virtual time from its creation;
// per referenced object the agent makes at most one GET (the volume's
// set-up, when it comes before the watch's first report) and one watch,
// shared by volumes and environment. The figure is in docs/benchmarks.md.
func TestVolumesFiveObjectsStartFigure(t *testing.T) {
	h := start(t, 97)
	opts := []PodOption{}
	for i := range 3 {
		name := fmt.Sprintf("cfg%d", i)
		putConfigMap(h, name, map[string]string{"k": name})
		opts = append(opts, WithVolume(configMapVolume(name, name)), Mounts("app", name, "/etc/"+name))
	}
	for i := range 2 {
		name := fmt.Sprintf("sec%d", i)
		h.API.User().PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"k": []byte(name)}})
		opts = append(opts, WithVolume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}),
			Mounts("app", name, "/etc/"+name))
	}
	opts = append(opts, func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "CFG", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg0"}, Key: "k"}}},
			corev1.EnvVar{Name: "SEC", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec0"}, Key: "k"}}})
	})
	created := h.K.Now()
	mustCreate(t, h, NewPod("five", h.NodeName, opts...))
	runUntil(t, h, "five Running and Ready", time.Minute, func() bool { return PodIs(h, "default", "five", corev1.PodRunning, true) })
	took := h.K.Now().Sub(created)
	t.Logf("creation to Running and Ready: %v of virtual time", took)
	if took > 5*time.Second {
		t.Errorf("creation to Running took %v, want at most 5 s", took)
	}
	runChecked(t, h, NewChecker(h), 5*time.Second)
	got := h.API.User().ObjectRequests()
	t.Logf("requests about the five objects: %v", got)
	if got["watch configmaps"] != 3 || got["watch secrets"] != 2 || got["get configmaps"] > 3 || got["get secrets"] > 2 {
		t.Errorf("requests about the five objects: %v; want one watch each and at most one GET each", got)
	}
}
