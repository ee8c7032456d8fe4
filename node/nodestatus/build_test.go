package nodestatus

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ndfeatures "k8s.io/component-helpers/nodedeclaredfeatures/features"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// quantities renders a resource list as strings, for readable diffs.
func quantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, q := range l {
		out[string(k)] = q.String()
	}
	return out
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestGoArch(t *testing.T) {
	for in, want := range map[string]string{
		"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386",
		"amd64": "amd64", "arm64": "arm64", "s390x": "s390x", "ppc64le": "ppc64le",
	} {
		if got := goArch(in); got != want {
			t.Errorf("goArch(%q) = %q, want %q", in, got, want)
		}
	}
	if goArch("") == "" {
		t.Error(`goArch("") is empty, want this binary's GOARCH`)
	}
}

func TestAllocatable(t *testing.T) {
	capacity := rl("cpu", "4", "memory", "8Gi", "pods", "110")
	for _, tc := range []struct {
		name     string
		reserved corev1.ResourceList
		want     map[string]string
	}{
		{"nil reserved", nil, map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"}},
		{"cpu and memory reserved", rl("cpu", "500m", "memory", "1Gi"),
			map[string]string{"cpu": "3500m", "memory": "7Gi", "pods": "110"}},
		{"more reserved than there is", rl("cpu", "5", "memory", "9Gi"),
			map[string]string{"cpu": "0", "memory": "0", "pods": "110"}},
		{"reserved resource the node lacks is ignored", rl("example.com/gpu", "1"),
			map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Allocatable(capacity, tc.reserved)
			if diff := cmp.Diff(tc.want, quantities(got)); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110"}, quantities(capacity)); diff != "" {
				t.Errorf("capacity was modified (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHugePages: each pool is capacity hugepages-<size> (pages × size),
// allocatable as reserved, and memory in pools is not allocatable memory.
func TestHugePages(t *testing.T) {
	info := deps.MachineInfo{CPUs: 2, MemoryBytes: 8 << 30, HugePages: []deps.HugePagePool{
		{PageSizeBytes: 2 << 20, Pages: 512}, {PageSizeBytes: 1 << 30, Pages: 0},
	}}
	c := Capacity(info, 0, 110)
	want := map[string]string{"cpu": "2", "memory": "8Gi", "pods": "110", "hugepages-2Mi": "1Gi", "hugepages-1Gi": "0"}
	if diff := cmp.Diff(want, quantities(c)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	want = map[string]string{"cpu": "2", "memory": "6Gi", "pods": "110", "hugepages-2Mi": "1Gi", "hugepages-1Gi": "0"}
	if diff := cmp.Diff(want, quantities(Allocatable(c, rl("memory", "1Gi")))); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
}

type health struct {
	ok  bool
	err error
}

func (h health) PLEGHealthy() (bool, error) { return h.ok, h.err }

func TestComputeReadiness(t *testing.T) {
	fresh := runtimeHealth{lastOK: at(95)}
	unhealthy := health{false, errors.New("pleg: last successful relist was 3m0s ago; the threshold is 3m0s")}
	for _, tc := range []struct {
		name   string
		rt     runtimeHealth
		health Health
		want   readiness
	}{
		{"fresh check, nil health", fresh, nil, readiness{true, MessageReady}},
		{"fresh check, healthy PLEG", fresh, health{ok: true}, readiness{true, MessageReady}},
		{"no check yet", runtimeHealth{}, nil,
			readiness{false, "container runtime status check may not have completed yet"}},
		{"last check 29 s old", runtimeHealth{lastOK: at(71)}, nil, readiness{true, MessageReady}},
		{"last check 30 s old", runtimeHealth{lastOK: at(70)}, nil, readiness{false, "container runtime is down"}},
		{"PLEG unhealthy", fresh, unhealthy,
			readiness{false, "PLEG is not healthy: pleg: last successful relist was 3m0s ago; the threshold is 3m0s"}},
		{"network not ready", runtimeHealth{lastOK: at(95), networkErr: "container runtime network not ready: x"}, nil,
			readiness{false, "container runtime network not ready: x"}},
		{"everything wrong, in order", runtimeHealth{lastOK: at(10), runtimeErr: "container runtime not ready: r", networkErr: "container runtime network not ready: n"}, unhealthy,
			readiness{false, "[container runtime is down, PLEG is not healthy: pleg: last successful relist was 3m0s ago; the threshold is 3m0s, container runtime not ready: r, container runtime network not ready: n]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computeReadiness(at(100), tc.rt, 30*time.Second, tc.health)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(readiness{})); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyRuntimeStatus(t *testing.T) {
	cond := func(typ string, ok bool, reason, msg string) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: typ, Status: ok, Reason: reason, Message: msg}
	}
	resp := func(cs ...*runtimeapi.RuntimeCondition) *runtimeapi.StatusResponse {
		return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: cs}}
	}
	prev := runtimeHealth{lastOK: at(50), runtimeErr: "old", networkErr: "old"}
	for _, tc := range []struct {
		name string
		resp *runtimeapi.StatusResponse
		want runtimeHealth
	}{
		{"all ready", resp(cond(runtimeapi.RuntimeReady, true, "", ""), cond(runtimeapi.NetworkReady, true, "", "")),
			runtimeHealth{lastOK: at(100)}},
		{"runtime not ready keeps the last good check", resp(cond(runtimeapi.RuntimeReady, false, "Boom", "it broke"), cond(runtimeapi.NetworkReady, true, "", "")),
			runtimeHealth{lastOK: at(50), runtimeErr: "container runtime not ready: RuntimeReady=false reason:Boom message:it broke"}},
		{"network not ready", resp(cond(runtimeapi.RuntimeReady, true, "", ""), cond(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "cni plugin not initialized")),
			runtimeHealth{lastOK: at(100), networkErr: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"}},
		{"no conditions", &runtimeapi.StatusResponse{},
			runtimeHealth{lastOK: at(50), runtimeErr: "container runtime not ready: RuntimeReady condition missing", networkErr: "container runtime network not ready: NetworkReady condition missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := applyRuntimeStatus(prev, at(100), tc.resp)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(runtimeHealth{})); diff != "" {
				t.Errorf("runtime health (-want +got):\n%s", diff)
			}
		})
	}
}

var testCfg = Config{
	NodeName: "node-a", NodeIP: "10.0.0.7", Labels: map[string]string{"tier": "edge", "kubernetes.io/os": "plan9"},
	Reserved: rl("cpu", "500m", "memory", "1Gi"), KubeletVersion: "lockstep v0.1.0",
}.withDefaults()

var testInfo = deps.MachineInfo{
	MachineID: "mid", SystemUUID: "EC2A-UUID", BootID: "bid", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04 LTS",
	Architecture: "aarch64", CPUs: 4, MemoryBytes: 8 << 30,
}

func TestNewNode(t *testing.T) {
	f := facts{now: at(12.7), info: testInfo, fsCapacity: 100 << 30, runtimeVersion: "containerd://2.0.0", ready: readiness{true, MessageReady}}
	n := newNode(testCfg, f)
	wantLabels := map[string]string{
		"tier": "edge", "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64",
	}
	if diff := cmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "107374182400"}, quantities(n.Status.Capacity)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "3500m", "memory": "7Gi", "pods": "110", "ephemeral-storage": "107374182400"}, quantities(n.Status.Allocatable)); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
	wantInfo := corev1.NodeSystemInfo{
		MachineID: "mid", SystemUUID: "EC2A-UUID", BootID: "bid", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04 LTS",
		ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "lockstep v0.1.0",
		OperatingSystem: "linux", Architecture: "arm64",
	}
	if diff := cmp.Diff(wantInfo, n.Status.NodeInfo); diff != "" {
		t.Errorf("nodeInfo (-want +got):\n%s", diff)
	}
	wantAddrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}, {Type: corev1.NodeHostName, Address: "node-a"}}
	if diff := cmp.Diff(wantAddrs, n.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	now := metav1.NewTime(at(12))
	cond := func(typ corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	wantConds := []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
	if diff := cmp.Diff(wantConds, n.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	wantDeclared := []string{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}
	if diff := cmp.Diff(wantDeclared, n.Status.DeclaredFeatures); diff != "" {
		t.Errorf("declaredFeatures (-want +got):\n%s", diff)
	}
}

// TestDeclaredFeaturesAreKnown: every declared feature is one the
// apiserver and the scheduler know (the registry they infer a pod's
// needs from), in the sorted order the kubelet publishes them in.
func TestDeclaredFeaturesAreKnown(t *testing.T) {
	known := map[string]bool{}
	for _, f := range ndfeatures.AllFeatures {
		known[f.Name()] = true
	}
	got := DeclaredFeatures()
	for _, name := range got {
		if !known[name] {
			t.Errorf("declared feature %q is not in the node-declared-features registry", name)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("declared features %q not sorted", got)
	}
}

func TestNewNodeWithoutOptionalFacts(t *testing.T) {
	cfg := testCfg
	cfg.NodeIP = ""
	n := newNode(cfg, facts{now: at(0), info: testInfo})
	if _, ok := n.Status.Capacity[corev1.ResourceEphemeralStorage]; ok {
		t.Error("ephemeral-storage capacity set with the filesystem size unknown")
	}
	if diff := cmp.Diff([]corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-a"}}, n.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if got := n.Status.NodeInfo.ContainerRuntimeVersion; got != "" {
		t.Errorf("containerRuntimeVersion = %q with the version unknown, want empty", got)
	}
}

func TestBuildStatusOnExisting(t *testing.T) {
	f := facts{now: at(100), info: testInfo, fsCapacity: 100 << 30, ready: readiness{true, MessageReady}}
	old := newNode(testCfg, facts{now: at(10), info: testInfo, runtimeVersion: "containerd://1.7.0", ready: readiness{message: "container runtime is down"}}).Status
	old.Capacity["example.com/gpu"] = resource.MustParse("2")
	old.Allocatable["example.com/gpu"] = resource.MustParse("2")
	old.Conditions = append([]corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"}}, old.Conditions...)
	old.Images = []corev1.ContainerImage{{Names: []string{"busybox"}, SizeBytes: 1}}
	oldCopy := old.DeepCopy()

	s := buildStatus(testCfg, &old, f)
	if diff := cmp.Diff(oldCopy, &old); diff != "" {
		t.Errorf("old status was modified (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "107374182400", "example.com/gpu": "2"}, quantities(s.Capacity)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(old.Images, s.Images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	if got := s.NodeInfo.ContainerRuntimeVersion; got != "containerd://1.7.0" {
		t.Errorf("containerRuntimeVersion = %q, want the known one kept", got)
	}
	type times struct {
		Type                  corev1.NodeConditionType
		Status                corev1.ConditionStatus
		Heartbeat, Transition time.Time
	}
	var got []times
	for _, c := range s.Conditions {
		got = append(got, times{c.Type, c.Status, c.LastHeartbeatTime.Time, c.LastTransitionTime.Time})
	}
	want := []times{
		{corev1.NodeNetworkUnavailable, corev1.ConditionFalse, time.Time{}, time.Time{}}, // not ours: untouched
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, at(100), at(10)},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, at(100), at(10)},
		{corev1.NodePIDPressure, corev1.ConditionFalse, at(100), at(10)},
		{corev1.NodeReady, corev1.ConditionTrue, at(100), at(100)}, // flipped
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

type pressure struct{ memory, disk, pid bool }

func TestPressureConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    pressure
		want map[corev1.NodeConditionType]string
	}{
		{"none", pressure{}, map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "False KubeletHasSufficientMemory", corev1.NodeDiskPressure: "False KubeletHasNoDiskPressure", corev1.NodePIDPressure: "False KubeletHasSufficientPID",
		}},
		{"all", pressure{true, true, true}, map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "True KubeletHasInsufficientMemory", corev1.NodeDiskPressure: "True KubeletHasDiskPressure", corev1.NodePIDPressure: "True KubeletHasInsufficientPID",
		}},
		{"disk only", pressure{disk: true}, map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "False KubeletHasSufficientMemory", corev1.NodeDiskPressure: "True KubeletHasDiskPressure", corev1.NodePIDPressure: "False KubeletHasSufficientPID",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := buildStatus(testCfg, nil, facts{now: at(0), info: testInfo, memoryPressure: tc.p.memory, diskPressure: tc.p.disk, pidPressure: tc.p.pid})
			got := map[corev1.NodeConditionType]string{}
			for _, c := range s.Conditions {
				if c.Type != corev1.NodeReady {
					got[c.Type] = string(c.Status) + " " + c.Reason
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pressure conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusChanged(t *testing.T) {
	base := buildStatus(testCfg, nil, facts{now: at(0), info: testInfo, ready: readiness{true, MessageReady}})
	for _, tc := range []struct {
		name string
		f    facts
		want bool
	}{
		{"only heartbeats moved", facts{now: at(10), info: testInfo, ready: readiness{true, MessageReady}}, false},
		{"ready flipped", facts{now: at(10), info: testInfo, ready: readiness{message: "container runtime is down"}}, true},
		{"capacity grew", facts{now: at(10), info: deps.MachineInfo{MachineID: "mid", BootID: "bid", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04 LTS", Architecture: "aarch64", CPUs: 8, MemoryBytes: 8 << 30}, ready: readiness{true, MessageReady}}, true},
		{"runtime version learnt", facts{now: at(10), info: testInfo, runtimeVersion: "x://1", ready: readiness{true, MessageReady}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := buildStatus(testCfg, &base, tc.f)
			if got := statusChanged(&base, &next); got != tc.want {
				t.Errorf("statusChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDualStackNodeAddresses(t *testing.T) {
	cfg := testCfg
	cfg.SecondaryNodeIP = "fd00::7"
	n := newNode(cfg, facts{now: at(0), info: testInfo})
	want := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
		{Type: corev1.NodeInternalIP, Address: "fd00::7"},
		{Type: corev1.NodeHostName, Address: "node-a"},
	}
	if diff := cmp.Diff(want, n.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
}

func TestNodeImages(t *testing.T) {
	img := func(id string, size uint64, tags, digests []string) *runtimeapi.Image {
		return &runtimeapi.Image{Id: id, Size: size, RepoTags: tags, RepoDigests: digests}
	}
	imgs := []*runtimeapi.Image{
		img("sha256:small", 10, []string{"busybox:1.36"}, []string{"busybox@sha256:b1"}),
		img("sha256:big", 300, []string{"nginx:1.27", "nginx:latest"}, []string{"nginx@sha256:n1"}),
		img("sha256:tie-b", 50, []string{"b:1"}, nil),
		img("sha256:tie-a", 50, []string{"a:1"}, nil),
		img("sha256:many", 20, []string{"m:1", "m:2", "m:3", "m:4"}, []string{"m@sha256:1", "m@sha256:2"}),
		img("sha256:untagged", 5, nil, []string{"u@sha256:1"}),
	}
	all := []corev1.ContainerImage{
		{Names: []string{"nginx@sha256:n1", "nginx:1.27", "nginx:latest"}, SizeBytes: 300},
		{Names: []string{"a:1"}, SizeBytes: 50},
		{Names: []string{"b:1"}, SizeBytes: 50},
		{Names: []string{"m@sha256:1", "m@sha256:2", "m:1", "m:2", "m:3"}, SizeBytes: 20},
		{Names: []string{"busybox@sha256:b1", "busybox:1.36"}, SizeBytes: 10},
		{Names: []string{"u@sha256:1"}, SizeBytes: 5},
	}
	for _, tc := range []struct {
		name string
		max  int
		want []corev1.ContainerImage
	}{
		{"largest first, ties by ID, five names at most", 50, all},
		{"capped to the largest", 2, all[:2]},
		{"no cap", -1, all},
		{"none", 0, []corev1.ContainerImage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nodeImages(imgs, tc.max)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
	if got := nodeImages(nil, 50); got == nil {
		t.Error("nodeImages(nil) = nil, want an empty list (a node without images reports none)")
	}
}

func TestRuntimeHandlersAndFeatures(t *testing.T) {
	resp := &runtimeapi.StatusResponse{
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{
			{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
			{Name: "runc"},
		},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}
	yes, no := true, false
	want := []corev1.NodeRuntimeHandler{
		{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &yes}},
		{Name: "runc", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &no}},
	}
	if diff := cmp.Diff(want, runtimeHandlers(resp)); diff != "" {
		t.Errorf("runtime handlers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&corev1.NodeFeatures{SupplementalGroupsPolicy: &yes}, runtimeFeatures(resp)); diff != "" {
		t.Errorf("features (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&corev1.NodeFeatures{SupplementalGroupsPolicy: &no}, runtimeFeatures(&runtimeapi.StatusResponse{})); diff != "" {
		t.Errorf("features of a runtime that reports none (-want +got):\n%s", diff)
	}
}

func TestNewNodeTaintsAnnotationAndLists(t *testing.T) {
	cfg := testCfg
	cfg.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	cfg.AgentVersion = "lockstep v0.1.0"
	cfg.KubeletPort = 10250
	yes := true
	f := facts{
		now: at(0), info: testInfo,
		images:   []corev1.ContainerImage{{Names: []string{"busybox:1.36"}, SizeBytes: 10}},
		handlers: []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &yes, UserNamespaces: &yes}}},
		features: &corev1.NodeFeatures{SupplementalGroupsPolicy: &yes},
	}
	n := newNode(cfg, f)
	type view struct {
		Taints      []corev1.Taint
		Annotations map[string]string
		Port        int32
		Images      []corev1.ContainerImage
		Handlers    []corev1.NodeRuntimeHandler
		Features    *corev1.NodeFeatures
	}
	want := view{cfg.Taints, map[string]string{"lockstep.dev/version": "lockstep v0.1.0"}, 10250, f.images, f.handlers, f.features}
	got := view{n.Spec.Taints, n.Annotations, n.Status.DaemonEndpoints.KubeletEndpoint.Port, n.Status.Images, n.Status.RuntimeHandlers, n.Status.Features}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}

	// Unknown lists keep what the status had.
	s := buildStatus(cfg, &n.Status, facts{now: at(10), info: testInfo})
	if diff := cmp.Diff(f.images, s.Images); diff != "" {
		t.Errorf("images with the listing unknown (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(f.handlers, s.RuntimeHandlers); diff != "" {
		t.Errorf("handlers with the runtime status unknown (-want +got):\n%s", diff)
	}
}

// TestNewNodeUnschedulable: --register-schedulable=false registers the
// node cordoned, spec.unschedulable and the unschedulable taint, once
// even when --register-with-taints already names it.
func TestNewNodeUnschedulable(t *testing.T) {
	unsched := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name          string
		unschedulable bool
		taints        []corev1.Taint
		want          corev1.NodeSpec
	}{
		{"schedulable", false, []corev1.Taint{dedicated}, corev1.NodeSpec{Taints: []corev1.Taint{dedicated}}},
		{"unschedulable", true, []corev1.Taint{dedicated}, corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{dedicated, unsched}}},
		{"taint already asked for", true, []corev1.Taint{unsched}, corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{unsched}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg
			cfg.Taints, cfg.Unschedulable = tc.taints, tc.unschedulable
			n := newNode(cfg, facts{now: at(0), info: testInfo})
			if diff := cmp.Diff(tc.want, n.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildStatusDeviceResources(t *testing.T) {
	old := newNode(testCfg, facts{now: at(10), info: testInfo, ready: readiness{true, MessageReady}}).Status
	old.Capacity["example.com/gone"] = resource.MustParse("2")
	old.Allocatable["example.com/gone"] = resource.MustParse("2")
	old.Capacity["example.com/other"] = resource.MustParse("1")
	f := facts{now: at(100), info: testInfo, ready: readiness{true, MessageReady},
		devCapacity:    corev1.ResourceList{"example.com/foo": resource.MustParse("4")},
		devAllocatable: corev1.ResourceList{"example.com/foo": resource.MustParse("3")},
		devRemoved:     []corev1.ResourceName{"example.com/gone"}}
	s := buildStatus(testCfg, &old, f)
	// A removed resource stays at 0, as the kubelet shows it.
	if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/foo": "4", "example.com/other": "1", "example.com/gone": "0"}, quantities(s.Capacity)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "3500m", "memory": "7Gi", "pods": "110", "example.com/foo": "3", "example.com/gone": "0"}, quantities(s.Allocatable)); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
}
