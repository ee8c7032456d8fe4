package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podutil"
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
	if !ok || !podutil.IsMirrorPod(p) {
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

// slowManifest is a hostNetwork static pod whose container ignores SIGTERM
// and has 10 s of grace: stopping a version of it takes 10 s.
func slowManifest(version string) []byte {
	return []byte(`apiVersion: v1
kind: Pod
metadata:
  name: apiserver
  namespace: kube-system
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  containers:
  - name: apiserver
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    env:
    - {name: FAKECRI_IGNORE_SIGTERM, value: "true"}
    - {name: VERSION, value: "` + version + `"}
`)
}

// TestStaticEditSerialised: an edited static pod (a new UID under the same
// full name) starts only after the old version has fully stopped, as the
// kubelet serialises static pods by full name; two hostNetwork versions
// never run together (static-exclusive).
func TestStaticEditSerialised(t *testing.T) {
	h := start(t, 13)
	c := NewChecker(h)
	h.Files.WriteFile(manifestDir+"/apiserver.yaml", slowManifest("1"))
	runUntil(t, h, "first version running", 2*time.Minute, func() bool { return len(runningUIDs(h)) == 1 })
	old := runningUIDs(h)[0]
	h.Files.WriteFile(manifestDir+"/apiserver.yaml", slowManifest("2"))
	if err := RunChecked(h, c, time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if now := runningUIDs(h); len(now) != 1 || now[0] == old {
		t.Errorf("running static pods a minute after the edit: %v, want one new version (old %s)", now, old)
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
}

// runningUIDs lists the pods with a running container, sorted.
func runningUIDs(h *harness.Harness) []types.UID {
	var out []types.UID
	for _, c := range TrueContainers(h) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING && !slices.Contains(out, c.PodUID) {
			out = append(out, c.PodUID)
		}
	}
	slices.Sort(out)
	return out
}

// TestStaticEditWhileAgentDown: a manifest edited while the agent is down
// leaves the old version running as an orphan the new agent has no worker
// for; the new version still waits until it has stopped.
func TestStaticEditWhileAgentDown(t *testing.T) {
	h := start(t, 14)
	c := NewChecker(h)
	h.Files.WriteFile(manifestDir+"/apiserver.yaml", slowManifest("1"))
	runUntil(t, h, "first version running", 2*time.Minute, func() bool { return len(runningUIDs(h)) == 1 })
	old := runningUIDs(h)[0]
	h.CrashAgent()
	h.Files.WriteFile(manifestDir+"/apiserver.yaml", slowManifest("2"))
	h.StartAgent()
	if err := RunChecked(h, c, time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if now := runningUIDs(h); len(now) != 1 || now[0] == old {
		t.Errorf("running static pods a minute after the edit: %v, want one new version (old %s)", now, old)
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
}

// mirrorSettled waits until the static pod etcd runs with a mirror pod
// that carries its hash and is not being deleted, and returns the mirror.
func mirrorSettled(t *testing.T, h *harness.Harness, what string) *corev1.Pod {
	t.Helper()
	var m *corev1.Pod
	runUntil(t, h, what, 2*time.Minute, func() bool {
		var ok bool
		m, ok = mirrorOf(h)
		uids := runningUIDs(h)
		return ok && m.DeletionTimestamp == nil && len(uids) == 1 && m.Annotations[podsource.AnnotationConfigMirror] == string(uids[0])
	})
	return m
}

// TestUserDeletedMirrorRecreated: a mirror pod a user deletes (gracefully,
// or forced) is created again, while the static pod keeps running.
func TestUserDeletedMirrorRecreated(t *testing.T) {
	for _, grace := range []int64{30, 0} {
		h := start(t, 15)
		h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
		first := mirrorSettled(t, h, "static pod running with its mirror pod")
		running := runningUIDs(h)
		if err := h.API.User().DeletePodGracefully(first.Namespace, first.Name, &grace); err != nil {
			t.Fatal(err)
		}
		again := mirrorSettled(t, h, "mirror pod created again")
		if again.UID == first.UID {
			t.Errorf("grace %d: the deleted mirror pod %s is still there", grace, first.UID)
		}
		if now := runningUIDs(h); !slices.Equal(now, running) {
			t.Errorf("grace %d: running pods %v after the mirror's deletion, want %v untouched", grace, now, running)
		}
	}
}

// TestStaleMirrorReplaced: a mirror pod whose hash annotation no longer
// matches the static pod is replaced by one that does.
func TestStaleMirrorReplaced(t *testing.T) {
	h := start(t, 16)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	first := mirrorSettled(t, h, "static pod running with its mirror pod")
	stale := first.DeepCopy()
	stale.Annotations[podsource.AnnotationConfigMirror] = "0123456789abcdef0123456789abcdef"
	if _, err := h.API.User().UpdatePod(stale); err != nil {
		t.Fatal(err)
	}
	again := mirrorSettled(t, h, "stale mirror pod replaced")
	if again.UID == first.UID {
		t.Errorf("the stale mirror pod %s was not replaced", first.UID)
	}
}

// TestMirrorAcrossAgentRestarts: an unchanged static pod keeps its mirror
// pod across an agent restart (no churn); the mirror of a static pod whose
// manifest was removed while the agent was down is deleted.
func TestMirrorAcrossAgentRestarts(t *testing.T) {
	h := start(t, 17)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	first := mirrorSettled(t, h, "static pod running with its mirror pod")
	h.CrashAgent()
	h.StartAgent()
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if m, ok := mirrorOf(h); !ok || m.UID != first.UID {
		t.Errorf("mirror pod after an agent restart: %v (present %v), want the same %s", m.GetUID(), ok, first.UID)
	}
	h.CrashAgent()
	h.Files.Remove(manifestDir + "/etcd.yaml")
	h.StartAgent()
	runUntil(t, h, "the removed static pod stopped and its mirror pod deleted", 2*time.Minute, func() bool {
		_, ok := mirrorOf(h)
		return !ok && len(runningUIDs(h)) == 0
	})
}

// TestStaticManifestSeenAtOnce: a manifest written, edited or removed
// between two periodic scans (every 20 s) is acted on at once, as the
// kubelet's inotify watch of the directory makes it — issue 27 cause N1
// (lockstep's mirror pods came 5–6 s after the kubelet's).
func TestStaticManifestSeenAtOnce(t *testing.T) {
	h := start(t, 13)
	runChecked(t, h, NewChecker(h), 7*time.Second) // mid-period: the next scan is 13 s away
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	runUntil(t, h, "the static pod's container runs", 3*time.Second, func() bool { return len(Containers(h)) == 1 })
	running := Containers(h)[0]
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "2"))
	runUntil(t, h, "the edited manifest's pod replaces it", 3*time.Second+30*time.Second, func() bool {
		cs := Containers(h)
		return len(cs) == 1 && cs[0].PodUID != running.PodUID
	})
	if err := h.Files.Remove(manifestDir + "/etcd.yaml"); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "the removed manifest's pod stopped", 3*time.Second+30*time.Second, func() bool { return len(Containers(h)) == 0 })
}

// TestStaticManifestRemovedAndWrittenBack: a manifest removed and written
// back unchanged at once (the same UID) stops the pod and starts it again
// — restart count 1 — with its mirror pod Running, as upstream's node e2e
// "should successfully recreate when file is removed and recreated"
// expects within 2 minutes; it stays running, and removing the manifest
// then deletes the mirror pod.
func TestStaticManifestRemovedAndWrittenBack(t *testing.T) {
	h := start(t, 18)
	c := NewChecker(h)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	first := mirrorSettled(t, h, "static pod running with its mirror pod")
	runChecked(t, h, c, 2*time.Second) // the watch is up
	h.Files.Remove(manifestDir + "/etcd.yaml")
	c.ManifestRemoved("etcd")
	h.Files.WriteFile(manifestDir+"/etcd.yaml", manifest("busybox:latest", "1"))
	restarted := func() bool {
		m, ok := mirrorOf(h)
		if !ok || m.Status.Phase != corev1.PodRunning || len(m.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := m.Status.ContainerStatuses[0]
		return cs.State.Running != nil && cs.RestartCount == 1
	}
	if err := h.K.RunUntil(restarted, 2*time.Minute); err != nil {
		m, _ := mirrorOf(h)
		t.Fatalf("mirror pod not Running with restart count 1 within 2 minutes: %v\nmirror status: %+v", err, m.Status)
	}
	runChecked(t, h, c, 30*time.Second)
	if !restarted() {
		m, _ := mirrorOf(h)
		t.Errorf("mirror pod did not stay Running with restart count 1: %+v", m.Status)
	}
	if m, _ := mirrorOf(h); m.Annotations[podsource.AnnotationConfigMirror] != first.Annotations[podsource.AnnotationConfigMirror] {
		t.Errorf("mirror hash %s, want the unchanged manifest's %s", m.Annotations[podsource.AnnotationConfigMirror], first.Annotations[podsource.AnnotationConfigMirror])
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
	h.Files.Remove(manifestDir + "/etcd.yaml")
	runUntil(t, h, "the mirror pod deleted", 2*time.Minute, func() bool { _, ok := mirrorOf(h); return !ok })
}

// An updated static pod's old mirror pod stays (same UID) while the old
// version lives out its grace period, and is replaced only once the new
// version may start, as the kubelet replaces a mirror pod when the new
// version syncs (the node suite's "mirror pod termination should satisfy
// grace period when static pod is updated": the mirror's UID unchanged
// for 19 s after the update).
func TestStaticUpdateKeepsOldMirrorThroughGrace(t *testing.T) {
	h := start(t, 12)
	slow := func(version string) []byte {
		return []byte(strings.Replace(string(manifest("busybox:latest", version)), "spec:\n",
			"spec:\n  terminationGracePeriodSeconds: 20\n", 1) +
			"    - {name: FAKECRI_IGNORE_SIGTERM, value: \"true\"}\n")
	}
	h.Files.WriteFile(manifestDir+"/etcd.yaml", slow("1"))
	runUntil(t, h, "the first version's mirror pod Running", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodRunning
	})
	first, _ := mirrorOf(h)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", slow("2"))
	updated := h.K.Now()
	for h.K.Now().Sub(updated) < 19*time.Second {
		if err := h.K.RunFor(200 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		m, ok := mirrorOf(h)
		if !ok || m.UID != first.UID {
			t.Fatalf("%v after the update the mirror pod is %v (present %v); want the first version's %s until its grace period is over",
				h.K.Now().Sub(updated), func() types.UID {
					if m == nil {
						return ""
					}
					return m.UID
				}(), ok, first.UID)
		}
	}
	runUntil(t, h, "the second version's mirror pod Running", 2*time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.UID != first.UID && m.Status.Phase == corev1.PodRunning
	})
}

// gracefulManifest is the node suite's graceful static pod (mirror pod
// grace period tests): a container that ignores SIGTERM, 20 s of grace.
func gracefulManifest() []byte {
	return []byte(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: m-test
    image: busybox:latest
    env:
    - {name: FAKECRI_IGNORE_SIGTERM, value: "true"}
`)
}

// imageManifest is the node suite's createStaticPod: one container of
// image, restartPolicy Always, the default grace; version is the
// checker's name for it (staticVersionAnnotation).
func imageManifest(image string, version int) []byte {
	return []byte(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
  annotations: {` + staticVersionAnnotation + `: "` + fmt.Sprint(version) + `"}
spec:
  restartPolicy: Always
  containers:
  - name: test
    image: ` + image + `
`)
}

// TestStaticUpdatedManyTimesDuringGrace is the node suite's "should update
// a static pod when the static pod is updated multiple times during the
// graceful termination period": 300 versions 100 ms apart (30 s, longer
// than the running version's 20 s of grace), each of an image no registry
// has, then the pause image. The mirror pod recreated and Running must
// mirror the pause image's version; no intermediate version may run.
func TestStaticUpdatedManyTimesDuringGrace(t *testing.T) {
	h := start(t, 19)
	c := NewChecker(h)
	h.Files.WriteFile(manifestDir+"/etcd.yaml", gracefulManifest())
	c.ManifestWritten("etcd", 0)
	first := mirrorSettled(t, h, "the graceful static pod running with its mirror pod")
	runUntil(t, h, "the mirror pod Running", time.Minute, func() bool {
		m, ok := mirrorOf(h)
		return ok && m.Status.Phase == corev1.PodRunning
	})
	for i := range 300 {
		image := fmt.Sprintf("image-%d", i)
		if err := h.Runtime.FailPull(image, "", 0); err != nil {
			t.Fatal(err)
		}
		h.Files.WriteFile(manifestDir+"/etcd.yaml", imageManifest(image, i+1))
		c.ManifestWritten("etcd", i+1)
		if err := RunChecked(h, c, 100*time.Millisecond, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	const pause = "registry.k8s.io/pause:3.10"
	h.Files.WriteFile(manifestDir+"/etcd.yaml", imageManifest(pause, 301))
	c.ManifestWritten("etcd", 301)
	var seen *corev1.Pod
	for deadline := h.K.Now().Add(3 * time.Minute); h.K.Now().Before(deadline); {
		if err := RunChecked(h, c, 4*time.Second, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if m, ok := mirrorOf(h); ok && m.UID != first.UID && m.Status.Phase == corev1.PodRunning {
			seen = m
			break
		}
	}
	if seen == nil {
		t.Fatal("the mirror pod was not recreated and Running within 3 minutes")
	}
	if len(seen.Spec.Containers) != 1 || seen.Spec.Containers[0].Image != pause {
		t.Errorf("the recreated Running mirror pod has containers %+v, want the one of image %s", seen.Spec.Containers, pause)
	}
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
}
