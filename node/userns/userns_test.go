package userns_test

import (
	"fmt"
	"path"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/userns"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

func TestHandlerSupport(t *testing.T) {
	handlers := func(hs ...*runtimeapi.RuntimeHandler) *runtimeapi.StatusResponse {
		return &runtimeapi.StatusResponse{RuntimeHandlers: hs}
	}
	h := func(name string, userns bool) *runtimeapi.RuntimeHandler {
		return &runtimeapi.RuntimeHandler{Name: name, Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: userns}}
	}
	// Expected messages: upstream's HandlerSupportsUserNamespaces and
	// GetOrCreateUserNamespaceMappings (pkg/kubelet/kubelet_getters.go,
	// pkg/kubelet/userns/userns_manager.go, v1.37).
	tests := []struct {
		name    string
		status  *runtimeapi.StatusResponse
		handler string
		want    string
	}{
		{"no handlers reported (containerd 1.6)", handlers(), "", "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{"no handlers, a RuntimeClass handler", handlers(), "kata", "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces"},
		{"default handler with the feature", handlers(h("", true), h("runc", false)), "", ""},
		{"default handler without", handlers(h("", false)), "", "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{"named handler with", handlers(h("", false), h("crun", true)), "crun", ""},
		{"unknown handler", handlers(h("", true)), "kata", "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces: the handler \"kata\" is not known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := userns.HandlerSupport(tt.status, tt.handler); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("HandlerSupport = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAllocateCheckpointReleaseAndReload(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 5})
	t.Cleanup(k.Close)
	files := memfs.New()
	const root = "/var/lib/lockstep"
	// Two ranges only: FirstID 65536, length 2×65536.
	cfg := userns.Config{RootDir: root, FirstID: 65536, Length: 2 * 65536}
	m, err := userns.New(k.Deps().Core, files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Allocate("pod-a")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.Allocate("pod-a")
	if d := cmp.Diff(a.String(), again.String()); d != "" {
		t.Errorf("a second Allocate changed the mapping:\n%s", d)
	}
	if a.GetMode() != runtimeapi.NamespaceMode_POD || a.GetUids()[0].String() != a.GetGids()[0].String() || a.GetUids()[0].GetLength() != 65536 {
		t.Errorf("mapping %v; want mode POD, the same 65536-ID range for users and groups", a)
	}
	b, err := m.Allocate("pod-b")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]bool{a.GetUids()[0].GetHostId(): true, b.GetUids()[0].GetHostId(): true}
	if d := cmp.Diff(map[uint32]bool{65536: true, 131072: true}, ids); d != "" {
		t.Errorf("the two ranges (-want +got):\n%s", d)
	}
	if _, err := m.Allocate("pod-c"); err == nil {
		t.Errorf("a third pod got a range from a node range of two")
	}
	data, err := files.ReadFile(path.Join(podspec.PodDir(root, "pod-a"), "userns"))
	want := `{"uidMappings":[{"hostId":` + fmt.Sprint(a.GetUids()[0].GetHostId()) + `,"containerId":0,"length":65536}],"gidMappings":[{"hostId":` + fmt.Sprint(a.GetUids()[0].GetHostId()) + `,"containerId":0,"length":65536}]}`
	if err != nil || string(data) != want {
		t.Errorf("checkpoint %q (%v), want %q (upstream's format)", data, err, want)
	}

	// A restarted agent reads the checkpoints back; an orphan's range is
	// freed by CleanupOrphans, a released pod's file goes.
	m2, err := userns.New(k.Deps().Core, files, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[types.UID]uint32{"pod-a": a.GetUids()[0].GetHostId(), "pod-b": b.GetUids()[0].GetHostId()}, m2.Allocated()); d != "" {
		t.Errorf("ranges after a restart (-want +got):\n%s", d)
	}
	m2.CleanupOrphans(func(uid types.UID) bool { return uid == "pod-a" })
	if _, err := files.Stat(path.Join(podspec.PodDir(root, "pod-b"), "userns")); err == nil {
		t.Errorf("the orphan's checkpoint remains")
	}
	c, err := m2.Allocate("pod-c")
	if err != nil || c.GetUids()[0].GetHostId() != b.GetUids()[0].GetHostId() {
		t.Errorf("pod-c got %v (%v); want the orphan's freed range %d", c, err, b.GetUids()[0].GetHostId())
	}
}

func TestConfigChecks(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 5})
	t.Cleanup(k.Close)
	for _, cfg := range []userns.Config{
		{IDsPerPod: 1000},
		{FirstID: 1000, Length: 65536},
		{FirstID: 65536, Length: 1000},
		{FirstID: 65536, Length: 65536, MaxPods: 2},
	} {
		if _, err := userns.New(k.Deps().Core, memfs.New(), cfg); err == nil {
			t.Errorf("New(%+v) succeeded; want upstream's refusal", cfg)
		}
	}
	if _, err := userns.New(k.Deps().Core, memfs.New(), userns.Config{MaxPods: 110}); err != nil {
		t.Errorf("the default range: %v", err)
	}
}
