package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// staticNames are the static pods the property scenario writes manifests
// for.
var staticNames = []string{"etcd", "apiserver"}

// propManifest is version v of a hostNetwork static pod whose container
// ignores SIGTERM with 3 s of grace, so that versions overlap unless the
// agent serialises them.
func propManifest(name string, v int) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: kube-system
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    env:
    - {name: FAKECRI_IGNORE_SIGTERM, value: "true"}
    - {name: VERSION, value: "%d"}
`, name, v)
}

// shortenGrace deletes the API pod name with a grace of 120 s (unless it
// is being deleted already), lets some time pass, and deletes it again
// with a shorter grace period, or forced (grace 0).
func shortenGrace(rt *rapid.T, h *harness.Harness, c *Checker, name string, force bool) {
	p, ok := APIPod(h, "default", name)
	if !ok {
		return
	}
	if p.DeletionTimestamp == nil {
		long := int64(120)
		if err := h.API.User().DeletePodGracefully("default", name, &long); err != nil {
			rt.Fatal(err)
		}
	}
	wait := time.Duration(rapid.IntRange(0, 20000).Draw(rt, "before-shorter-ms")) * time.Millisecond
	if err := RunChecked(h, c, wait, 100*time.Millisecond); err != nil {
		rt.Fatal(err)
	}
	grace := int64(0)
	if !force {
		grace = int64(rapid.IntRange(1, 10).Draw(rt, "shorter-grace"))
	}
	if _, ok := APIPod(h, "default", name); ok {
		if err := h.API.User().DeletePodGracefully("default", name, &grace); err != nil {
			rt.Fatal(err)
		}
	}
}

// editManifest adds, edits or removes one of the static pods' manifests.
func editManifest(rt *rapid.T, h *harness.Harness, manifests map[string]bool, step int) {
	name := staticNames[rapid.IntRange(0, len(staticNames)-1).Draw(rt, "manifest")]
	path := manifestDir + "/" + name + ".yaml"
	if rapid.IntRange(0, 2).Draw(rt, "manifest-op") == 0 {
		h.Files.Remove(path)
		delete(manifests, name)
		return
	}
	h.Files.WriteFile(path, propManifest(name, step))
	manifests[name] = true
}

// deleteMirror deletes one of the mirror pods in the API as a user would,
// gracefully or forced.
func deleteMirror(rt *rapid.T, h *harness.Harness) {
	name := staticNames[rapid.IntRange(0, len(staticNames)-1).Draw(rt, "mirror")] + "-" + h.NodeName
	grace := int64(rapid.SampledFrom([]int{0, 30}).Draw(rt, "mirror-grace"))
	if _, ok := APIPod(h, "kube-system", name); ok {
		if err := h.API.User().DeletePodGracefully("kube-system", name, &grace); err != nil {
			rt.Fatal(err)
		}
	}
}

// checkStaticConverged is the liveness half for static pods: exactly the
// static pods whose manifest is present run, one instance each, and
// mirror-present holds.
func checkStaticConverged(rt *rapid.T, h *harness.Harness, c *Checker, manifests map[string]bool) {
	static := staticSandboxes(h.Runtime.TrueSandboxes())
	running := map[string]int{}
	counted := map[string]bool{}
	for _, ct := range TrueContainers(h) {
		name, ok := static[ct.PodUID]
		if !ok || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING || counted[string(ct.PodUID)] {
			continue
		}
		counted[string(ct.PodUID)] = true
		running[name]++
	}
	want := map[string]int{}
	for name := range manifests {
		want["kube-system/"+name+"-"+h.NodeName] = 1
	}
	if !maps.Equal(want, running) {
		rt.Errorf("converges: running static pods %v, want %v (manifests %v)", running, want, slices.Sorted(maps.Keys(manifests)))
	}
	for _, m := range c.MirrorsMissing() {
		rt.Errorf("%s", m)
	}
}
