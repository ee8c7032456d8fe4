package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/devicemanager"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

func startDevices(t *testing.T, seed uint64) *harness.Harness {
	t.Helper()
	h := harness.New(harness.Config{
		Seed:          seed,
		Replay:        func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		DevicePlugins: []deviceplugin.Config{{Resource: DeviceResource, Count: DeviceCount}},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	return h
}

// nodeDevices is the Node's capacity and allocatable of DeviceResource
// ("" when absent).
func nodeDevices(h *harness.Harness) (capacity, allocatable string) {
	for _, n := range h.API.User().Nodes() {
		if n.Name != h.NodeName {
			continue
		}
		if q, ok := n.Status.Capacity[DeviceResource]; ok {
			capacity = q.String()
		}
		if q, ok := n.Status.Allocatable[DeviceResource]; ok {
			allocatable = q.String()
		}
	}
	return capacity, allocatable
}

// deviceConfig is the device env and mounts of the running container
// name of pod (namespace default).
func deviceConfig(t *testing.T, h *harness.Harness, pod, name string) (string, []*runtimeapi.Mount) {
	t.Helper()
	p, ok := APIPod(h, "default", pod)
	if !ok {
		t.Fatalf("pod %s not in the API", pod)
	}
	for _, ct := range TrueContainers(h) {
		if ct.PodUID != p.UID || ct.Name != name || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		cfg, _ := h.Runtime.TrueContainerConfig(ct.ID)
		env := ""
		for _, kv := range cfg.GetEnvs() {
			if kv.GetKey() == "FOO_DEVICE" {
				env = string(kv.GetValue())
			}
		}
		var mounts []*runtimeapi.Mount
		for _, m := range cfg.GetMounts() {
			if m.GetContainerPath() == "/dev/foo" {
				mounts = append(mounts, m)
			}
		}
		return env, mounts
	}
	t.Fatalf("no running container %s of pod %s", name, pod)
	return "", nil
}

// TestDevicePluginLifecycle: the plugin's devices become node capacity
// and allocatable; pods get their devices' env and mount, each device
// once; a pod asking for more than is free is refused
// (UnexpectedAdmissionError); the allocations survive an agent crash; a
// deleted pod's devices go to the next pod; the plugin's death makes
// allocatable 0 and, after the grace, removes the resource (capacity 0).
func TestDevicePluginLifecycle(t *testing.T) {
	h := startDevices(t, 21)
	c := NewChecker(h)
	runUntil(t, h, "devices in the node status", time.Minute, func() bool { c, a := nodeDevices(h); return c == "4" && a == "4" })
	mustCreate(t, h, NewPod("a", h.NodeName, Devices("app", DeviceResource, 2)))
	runUntil(t, h, "pod a running", time.Minute, func() bool { return PodIs(h, "default", "a", corev1.PodRunning, true) })
	mustCreate(t, h, NewPod("b", h.NodeName, Devices("app", DeviceResource, 3)))
	runUntil(t, h, "pod b failed", time.Minute, func() bool { return PodIs(h, "default", "b", corev1.PodFailed, false) })
	// As the kubelet: its device manager (the topology manager's admit
	// handler) refuses it before the resource check against allocatable
	// (kubelet.go adds it first).
	b, _ := APIPod(h, "default", "b")
	if want := "Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/foo. Requested: 3, Available: 2, which is unexpected"; b.Status.Reason != "UnexpectedAdmissionError" || b.Status.Message != want {
		t.Errorf("pod b status = %q %q, want UnexpectedAdmissionError %q", b.Status.Reason, b.Status.Message, want)
	}
	mustCreate(t, h, NewPod("c", h.NodeName, Devices("app", DeviceResource, 1), Devices("web", DeviceResource, 1)))
	runUntil(t, h, "pod c running", time.Minute, func() bool { return PodIs(h, "default", "c", corev1.PodRunning, true) })

	envA, mounts := deviceConfig(t, h, "a", "app")
	wantMount := []*runtimeapi.Mount{{ContainerPath: "/dev/foo", HostPath: "/var/lib/lockstep-deviceplugin/foo", Readonly: true}}
	if diff := cmp.Diff(wantMount, mounts, protocmp.Transform()); diff != "" {
		t.Errorf("pod a's device mount (-want +got):\n%s", diff)
	}
	envC1, _ := deviceConfig(t, h, "c", "app")
	envC2, _ := deviceConfig(t, h, "c", "web")
	if diff := cmp.Diff([]string{"foo-0,foo-1", "foo-2", "foo-3"}, []string{envA, envC1, envC2}); diff != "" {
		t.Errorf("FOO_DEVICE of a/app, c/app, c/web (-want +got):\n%s", diff)
	}

	// The agent restarts while the plugin is down: the running pods,
	// admitted before, are admitted again on the devices the checkpoint
	// says they hold, and keep running.
	containers := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"a", "c"} {
			p, _ := APIPod(h, "default", name)
			for _, cs := range p.Status.ContainerStatuses {
				out[name+"/"+cs.Name] = fmt.Sprintf("%s ready=%v", cs.ContainerID, cs.Ready)
			}
		}
		return out
	}
	before := containers()
	h.DevicePlugins()[0].Die()
	h.CrashAgent()
	if err := RunChecked(h, c, 5*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	if err := RunChecked(h, c, 30*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, containers()); diff != "" {
		t.Fatalf("containers after an agent restart with the plugin down (-before +after):\n%s", diff)
	}
	h.RestartDevicePlugin(h.DevicePlugins()[0])
	runUntil(t, h, "allocatable back", time.Minute, func() bool { c, a := nodeDevices(h); return c == "4" && a == "4" })
	if err := h.API.User().DeletePodGracefully("default", "a", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "pod a gone", 2*time.Minute, func() bool { _, ok := APIPod(h, "default", "a"); return !ok })
	mustCreate(t, h, NewPod("d", h.NodeName, Devices("app", DeviceResource, 2)))
	runUntil(t, h, "pod d running", time.Minute, func() bool { return PodIs(h, "default", "d", corev1.PodRunning, true) })
	if env, _ := deviceConfig(t, h, "d", "app"); env != "foo-0,foo-1" {
		t.Errorf("pod d got %q, want a's freed foo-0,foo-1", env)
	}

	h.DevicePlugins()[0].Die()
	start := h.K.Elapsed()
	runUntil(t, h, "allocatable 0", time.Minute, func() bool { c, a := nodeDevices(h); return c == "4" && a == "0" })
	if took := h.K.Elapsed() - start; took > 15*time.Second {
		t.Errorf("allocatable dropped to 0 after %v, want within a status period", took)
	}
	// Removed after the grace, the resource stays at 0, as upstream's.
	runUntil(t, h, "resource removed", 10*time.Minute, func() bool { c, a := nodeDevices(h); return c == "0" && a == "0" })
	if took := h.K.Elapsed() - start; took < devicemanager.DefaultGrace {
		t.Errorf("resource removed after %v, before the %v grace", took, devicemanager.DefaultGrace)
	}
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestDevicesInvariantCatchesViolations: devices-once reports a device in
// two running containers, a container running with fewer devices than it
// requested and one holding devices the plugin never allocated together.
func TestDevicesInvariantCatchesViolations(t *testing.T) {
	h := startDevices(t, 22)
	c := NewChecker(h)
	// Created once the Node shows the resource, pod a may not run
	// without its devices.
	runUntil(t, h, "devices in the node status", time.Minute, func() bool { c, a := nodeDevices(h); return c == "4" && a == "4" })
	mustCreate(t, h, NewPod("a", h.NodeName, Devices("app", DeviceResource, 2)))
	runUntil(t, h, "pod a running", time.Minute, func() bool { return PodIs(h, "default", "a", corev1.PodRunning, true) })
	c.Check()
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations before tampering: %v", v)
	}
	// Containers made behind the agent's back: one labelled as pod a's
	// "app" holding one device of the two it requests, one of an unknown
	// pod holding a's foo-0.
	ctx := context.Background()
	intrude := func(uid, env string) {
		meta := &runtimeapi.PodSandboxMetadata{Name: "intruder-" + uid, Namespace: "default", Uid: uid}
		sb, err := h.Runtime.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: meta}, "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := h.Runtime.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:latest"},
			Labels: map[string]string{podstate.LabelPodUID: uid, podstate.LabelContainerName: "app"},
			Envs:   []*runtimeapi.KeyValue{{Key: "FOO_DEVICE", Value: []byte(env)}},
		}, &runtimeapi.PodSandboxConfig{Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Runtime.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := APIPod(h, "default", "a")
	intrude(string(a.UID), "foo-1")
	intrude("other-uid", "foo-0")
	c.Check()
	var got []string
	for _, v := range c.Violations() {
		if v.Invariant == "devices-once" {
			got = append(got, v.Detail)
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"runs with 1 devices", "in two running containers", "[foo-0] of example.com/foo that the plugin never allocated"} {
		if !strings.Contains(all, want) {
			t.Errorf("devices-once violations = %q, want one saying %q", got, want)
		}
	}
}

// TestDevicePluginFailuresAsUpstreamE2E follows upstream's node e2e
// "Device Plugin Failures" specs through the whole agent and its node
// status: a plugin whose GetDevicePluginOptions fails is never on the
// node and gets that one call; one whose ListAndWatch fails at once is
// shown 0/0 and never listed again; one whose stream fails after listing
// 2 devices, and one that stops, are shown allocatable 0 with capacity 2,
// then 0/0 after the 5 min grace; device-plugin-down sees nothing wrong.
func TestDevicePluginFailuresAsUpstreamE2E(t *testing.T) {
	const (
		optsRes, listRes, afterRes, stopRes = "test.device/opts", "test.device/list", "test.device/after", "test.device/stop"
	)
	h := harness.New(harness.Config{Seed: 23,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		DevicePlugins: []deviceplugin.Config{{Resource: optsRes, Count: 1, FailOptions: true}, {Resource: listRes, Count: 1},
			{Resource: afterRes, Count: 2}, {Resource: stopRes, Count: 2}}})
	t.Cleanup(h.Close)
	plugins := h.DevicePlugins()
	plugins[1].FailListAndWatch(true)
	h.StartAgent()
	c := NewChecker(h)
	node := func() map[string]string {
		out := map[string]string{}
		for _, res := range []string{optsRes, listRes, afterRes, stopRes} {
			capacity, capOK, alloc, allocOK := c.nodeResource(res)
			out[res] = quantityText(alloc, allocOK) + "/" + quantityText(capacity, capOK)
		}
		return out
	}
	methods := func(p *deviceplugin.Plugin) []string {
		var out []string
		for _, call := range p.Calls() {
			out = append(out, call.Method)
		}
		return out
	}
	runUntil(t, h, "devices listed", time.Minute, func() bool { return node()[afterRes] == "2/2" && node()[stopRes] == "2/2" })
	if err := RunChecked(h, c, time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{optsRes: "absent/absent", listRes: "0/0", afterRes: "2/2", stopRes: "2/2"}
	if diff := cmp.Diff(want, node()); diff != "" {
		t.Fatalf("allocatable/capacity after a minute (-want +got):\n%s", diff)
	}
	plugins[2].FailListAndWatch(true)
	plugins[3].Die()
	if err := RunChecked(h, c, time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{optsRes: "absent/absent", listRes: "0/0", afterRes: "0/2", stopRes: "0/2"}
	if diff := cmp.Diff(want, node()); diff != "" {
		t.Fatalf("allocatable/capacity a minute after the failures (-want +got):\n%s", diff)
	}
	if err := RunChecked(h, c, 5*time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{optsRes: "absent/absent", listRes: "0/0", afterRes: "0/0", stopRes: "0/0"}
	if diff := cmp.Diff(want, node()); diff != "" {
		t.Errorf("allocatable/capacity past the grace (-want +got):\n%s", diff)
	}
	got := [][]string{methods(plugins[0]), methods(plugins[1]), methods(plugins[2]), methods(plugins[3])}
	two := []string{"GetDevicePluginOptions", "ListAndWatch"}
	if diff := cmp.Diff([][]string{{"GetDevicePluginOptions"}, two, two, two}, got); diff != "" {
		t.Errorf("calls of each plugin (-want +got):\n%s", diff)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestDeviceAdmissionAsUpstream: what upstream's admission does with a
// pod asking for devices after an agent restart (kubelet.go adds the
// device manager's admit handler before the predicates'): a resource
// whose plugin was removed past its grace, which the restarted agent no
// longer knows, is refused by the Node's own allocatable, 0 (predicate.go
// keeps a request of a resource the Node lists): OutOf<resource>; one
// whose plugin stopped within the grace, known from the checkpoint with
// no healthy device, is refused by the device manager
// (devicesToAllocate): UnexpectedAdmissionError, as upstream's e2e
// "device manager … kubelet restart … UnexpectedAdmissionError"; one no
// plugin ever offered, which the Node lacks, is dropped
// (removeMissingExtendedResources) and the pod runs without devices.
// devices-once finds nothing wrong.
func TestDeviceAdmissionAsUpstream(t *testing.T) {
	const gone, stopped, never = "example.com/gone", "example.com/stopped", "example.com/never"
	h := harness.New(harness.Config{Seed: 24,
		Replay:        func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		DevicePlugins: []deviceplugin.Config{{Resource: gone, Count: 2}, {Resource: stopped, Count: 2}}})
	t.Cleanup(h.Close)
	h.StartAgent()
	c := NewChecker(h)
	node := func(res string) string {
		capacity, capOK, alloc, allocOK := c.nodeResource(res)
		return quantityText(alloc, allocOK) + "/" + quantityText(capacity, capOK)
	}
	runUntil(t, h, "devices listed", time.Minute, func() bool { return node(gone) == "2/2" && node(stopped) == "2/2" })
	plugins := h.DevicePlugins()
	plugins[0].Die()
	if err := RunChecked(h, c, 4*time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	plugins[1].Die()
	if err := RunChecked(h, c, 90*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0/0", "0/2"}, []string{node(gone), node(stopped)}); diff != "" {
		t.Fatalf("allocatable/capacity of %s (past the grace) and %s (within it) (-want +got):\n%s", gone, stopped, diff)
	}
	h.CrashAgent()
	h.StartAgent()
	mustCreate(t, h, NewPod("gone", h.NodeName, Devices("app", gone, 1)))
	mustCreate(t, h, NewPod("stopped", h.NodeName, Devices("app", stopped, 1)))
	mustCreate(t, h, NewPod("never", h.NodeName, Devices("app", never, 1)))
	runUntil(t, h, "pods decided", time.Minute, func() bool {
		return PodIs(h, "default", "gone", corev1.PodFailed, false) && PodIs(h, "default", "stopped", corev1.PodFailed, false) &&
			PodIs(h, "default", "never", corev1.PodRunning, true)
	})
	got := map[string]string{}
	for _, name := range []string{"gone", "stopped"} {
		p, _ := APIPod(h, "default", name)
		got[name] = p.Status.Reason + ": " + p.Status.Message
	}
	want := map[string]string{
		"gone":    "OutOfexample.com/gone: Pod was rejected: Node didn't have enough resource: example.com/gone, requested: 1, used: 0, capacity: 0",
		"stopped": "UnexpectedAdmissionError: Pod was rejected: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/stopped, which is unexpected",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}
