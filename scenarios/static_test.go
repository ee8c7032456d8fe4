package scenarios

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

const manifestDir = "/etc/kubernetes/manifests"

func manifest(image, env string) []byte {
	return []byte(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    image: ` + image + `
    imagePullPolicy: IfNotPresent
    env:
    - {name: VERSION, value: "` + env + `"}
`)
}

// mirrorOf returns the mirror pod of the static pod named etcd.
func mirrorOf(h *harness.Harness) (*corev1.Pod, bool) {
	p, ok := APIPod(h, "kube-system", "etcd-"+h.NodeName)
	if !ok || !podsource.IsMirrorPod(p) {
		return nil, false
	}
	return p, true
}

func TestStaticPodLifecycle(t *testing.T) {
	h := start(t, 11)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	h.Files.WriteFile(manifestDir+"/broken.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec:\n  containers: []\n"))

	runUntil(t, h, "static pod running with a Running mirror pod", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodRunning && IsReady(m)
	})
	first, _ := mirrorOf(h)
	oldUID := first.Annotations[podsource.AnnotationConfigMirror]
	if refs := first.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].Name != h.NodeName || refs[0].UID == "" {
		t.Errorf("mirror pod owner references %+v, want the node (NodeRestriction admits nothing else)", refs)
	}
	running := Containers(h)
	if len(running) != 1 || string(running[0].PodUID) != oldUID {
		t.Fatalf("runtime containers %+v, want the one static container of pod %s", running, oldUID)
	}
	reported := false
	for _, e := range h.API.User().Events() {
		if e.Reason == "FailedStaticPodManifest" && strings.Contains(e.Message, "broken.yaml") {
			reported = true
		}
	}
	if !reported {
		t.Errorf("the broken manifest was not reported as an event: %+v", h.API.User().Events())
	}

	// Editing the manifest makes a new pod: the old one is replaced.
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "2"))
	runUntil(t, h, "the edited static pod replaces the old one", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		if !ok || m.Annotations[podsource.AnnotationConfigMirror] == oldUID || m.Status.Phase != corev1.PodRunning {
			return false
		}
		cs := Containers(h)
		return len(cs) == 1 && string(cs[0].PodUID) == m.Annotations[podsource.AnnotationConfigMirror]
	})

	// Removing it stops it and deletes the mirror pod.
	h.Files.Remove(manifestDir + "/etcd.yaml")
	runUntil(t, h, "static pod gone", 2*time.Minute, func() bool {
		_, ok := mirrorOf(h)
		return !ok && len(Containers(h)) == 0
	})

	// Adding the same manifest back runs it again (upstream #104648).
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "2"))
	runUntil(t, h, "re-added static pod running", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodRunning && len(Containers(h)) == 1
	})
}

// TestStaticManifestWithoutExtension: every non-hidden file of the manifest
// directory is a manifest, whatever its name, as with the kubelet; a hidden
// file is not read.
func TestStaticManifestWithoutExtension(t *testing.T) {
	h := start(t, 12)
	h.Files.WriteFile(manifestDir+"/etcd", manifest("busybox:latest", "1"))
	h.Files.WriteFile(manifestDir+"/.etcd.swp", []byte("editor junk"))
	runUntil(t, h, "the static pod of a manifest named without an extension running", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodRunning && len(Containers(h)) == 1
	})
	for _, e := range h.API.User().Events() {
		if e.Reason == "FailedStaticPodManifest" {
			t.Errorf("unexpected manifest error: %s", e.Message)
		}
	}
}
