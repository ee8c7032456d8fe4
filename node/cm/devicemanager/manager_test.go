package devicemanager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/cm/devicemanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

const foo = "example.com/foo"

type world struct {
	t     *testing.T
	k     *kernel.Kernel
	files *memfs.FS
	m     *devicemanager.Manager
	ctx   context.Context
}

func newWorld(t *testing.T) *world {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	w := &world{t: t, k: k, files: memfs.New()}
	ctx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	w.ctx = ctx
	w.restart()
	return w
}

// restart makes a new manager over the same files (an agent restart).
func (w *world) restart() {
	w.m = devicemanager.New(w.k.Deps().Core, devicemanager.Ports{Files: w.files}, devicemanager.Config{Dir: "/var/lib/lockstep/device-plugins"})
}

func (w *world) plugin(cfg deviceplugin.Config) *deviceplugin.Plugin {
	p := deviceplugin.New(cfg, w.k.NewSignal)
	if err := w.m.Register(w.ctx, p.Registration(), p); err != nil {
		w.t.Fatal(err)
	}
	w.run(time.Second)
	return p
}

func (w *world) run(d time.Duration) {
	w.t.Helper()
	if err := w.k.RunFor(d); err != nil {
		w.t.Fatal(err)
	}
}

// resources are capacity and allocatable of the devices, as strings.
func (w *world) resources() (map[string]string, map[string]string, []corev1.ResourceName) {
	c, a, removed := w.m.Resources()
	str := func(l corev1.ResourceList) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			out[string(k)] = v.String()
		}
		return out
	}
	return str(c), str(a), removed
}

func pod(uid string, counts ...int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}}
	for i, n := range counts {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)),
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{foo: *resource.NewQuantity(int64(n), resource.DecimalSI)}}})
	}
	return p
}

func TestRegisterValidates(t *testing.T) {
	w := newWorld(t)
	p := deviceplugin.New(deviceplugin.Config{Resource: foo, Count: 1}, w.k.NewSignal)
	for _, tc := range []struct{ version, name, want string }{
		{"v1alpha", foo, "version"},
		{deps.DevicePluginVersion, "foo", "domain prefix"},
		{deps.DevicePluginVersion, "kubernetes.io/foo", "kubernetes.io"},
		{deps.DevicePluginVersion, "requests.example.com/foo", "requests."},
		{deps.DevicePluginVersion, "example.com/foo bar", "resource name"},
	} {
		err := w.m.Register(w.ctx, deps.DeviceRegistration{Version: tc.version, ResourceName: tc.name}, p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%q, %q) = %v, want an error about %q", tc.version, tc.name, err, tc.want)
		}
	}
	if c, _, _ := w.resources(); len(c) != 0 {
		t.Errorf("refused plugins left resources: %v", c)
	}
}

func TestCapacityFollowsHealthAndDisconnect(t *testing.T) {
	w := newWorld(t)
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 4})
	c, a, _ := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "4"}, {foo: "4"}}, []map[string]string{c, a}); diff != "" {
		t.Fatalf("after registration (-want +got):\n%s", diff)
	}
	p.SetHealthy("foo-1", false)
	w.run(time.Second)
	c, a, _ = w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "4"}, {foo: "3"}}, []map[string]string{c, a}); diff != "" {
		t.Fatalf("after a device went unhealthy (-want +got):\n%s", diff)
	}
	p.Die()
	w.run(time.Second)
	c, a, removed := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "4"}, {foo: "0"}}, []map[string]string{c, a}); diff != "" || removed != nil {
		t.Fatalf("after the plugin died (-want +got):\n%s removed %v", diff, removed)
	}
	w.run(devicemanager.DefaultGrace)
	c, a, removed = w.resources()
	if len(c) != 0 || len(a) != 0 || !cmp.Equal(removed, []corev1.ResourceName{foo}) {
		t.Fatalf("after the grace: capacity %v allocatable %v removed %v, want none, none, [%s]", c, a, removed, foo)
	}
}

func TestReRegisterWithinGraceKeepsResource(t *testing.T) {
	w := newWorld(t)
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	p.Die()
	w.run(time.Minute)
	p.Revive()
	if err := w.m.Register(w.ctx, p.Registration(), p); err != nil {
		t.Fatal(err)
	}
	w.run(devicemanager.DefaultGrace)
	c, a, removed := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "2"}, {foo: "2"}}, []map[string]string{c, a}); diff != "" || removed != nil {
		t.Fatalf("(-want +got):\n%s removed %v", diff, removed)
	}
}

func TestAdmitCountsFreeHealthyAndReserved(t *testing.T) {
	w := newWorld(t)
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 4})
	p.SetHealthy("foo-3", false)
	w.run(time.Second)
	a, b := pod("a", 2), pod("b", 2)
	if _, msg, ok := w.m.Admit(a, nil); !ok {
		t.Fatalf("pod a refused: %s", msg)
	}
	// a is admitted but has no devices yet: 3 healthy - 2 reserved = 1.
	reason, msg, ok := w.m.Admit(b, pods(a))
	want := "Allocate failed due to requested number of devices unavailable for example.com/foo. Requested: 2, Available: 1, which is unexpected"
	if ok || reason != devicemanager.ReasonUnexpectedAdmissionError || msg != want {
		t.Fatalf("Admit(b) = %q %q %v, want %q %q false", reason, msg, ok, devicemanager.ReasonUnexpectedAdmissionError, want)
	}
	if _, _, ok := w.m.Admit(pod("c", 1), pods(a)); !ok {
		t.Fatal("pod c (1 device) refused with one free")
	}
}

func TestAllocateOncePerDevice(t *testing.T) {
	w := newWorld(t)
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 3, PreStart: true})
	a, b := pod("a", 2), pod("b", 2)
	got, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	want := &deps.DeviceAllocation{Envs: map[string]string{"FOO_DEVICE": "foo-0,foo-1"},
		Mounts: []deps.DeviceMount{{ContainerPath: "/dev/foo", HostPath: "/var/lib/lockstep-deviceplugin/foo", ReadOnly: true}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("allocation of a (-want +got):\n%s", diff)
	}
	if _, err := w.m.Allocate(w.ctx, b, &b.Spec.Containers[0]); err == nil {
		t.Fatal("b got 2 devices with one free")
	}
	// A new instance of a's container gets the same devices, without a
	// new Allocate.
	if again, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0]); err != nil || !cmp.Equal(got, again) {
		t.Fatalf("second allocation of a = %v, %v", again, err)
	}
	w.m.Free(a.UID)
	if _, err := w.m.Allocate(w.ctx, b, &b.Spec.Containers[0]); err != nil {
		t.Fatalf("b after a was freed: %v", err)
	}
	if diff := cmp.Diff([][]string{{"foo-0", "foo-1"}, {"foo-0", "foo-1"}}, p.Allocations()); diff != "" {
		t.Errorf("Allocate calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"foo-0", "foo-1"}, {"foo-0", "foo-1"}, {"foo-0", "foo-1"}}, p.PreStarts()); diff != "" {
		t.Errorf("PreStartContainer calls (-want +got):\n%s", diff)
	}
}

func TestPreferredAllocation(t *testing.T) {
	w := newWorld(t)
	w.plugin(deviceplugin.Config{Resource: foo, Count: 4, Preferred: true})
	a := pod("a", 2)
	if _, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]map[string][]string{"c0": {foo: {"foo-2", "foo-3"}}}, w.m.Allocated(a.UID)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCheckpointSurvivesRestart(t *testing.T) {
	w := newWorld(t)
	w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	a := pod("a", 1)
	first, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	w.restart()
	// Before the plugin registers again: capacity from the checkpoint,
	// nothing allocatable, and a's container keeps its devices.
	c, al, _ := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "2"}, {foo: "0"}}, []map[string]string{c, al}); diff != "" {
		t.Fatalf("after restart (-want +got):\n%s", diff)
	}
	again, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0])
	if err != nil || !cmp.Equal(first, again) {
		t.Fatalf("a's allocation after restart = %v, %v; want %v", again, err, first)
	}
	w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	b, c2 := pod("b", 1), pod("c", 1)
	if _, err := w.m.Allocate(w.ctx, b, &b.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.m.Allocate(w.ctx, c2, &c2.Spec.Containers[0]); err == nil {
		t.Fatal("c got a device held by a before the restart")
	}
	if gone := w.m.FreeOrphans(func(uid types.UID) bool { return uid != a.UID }); !cmp.Equal(gone, []types.UID{a.UID}) {
		t.Fatalf("FreeOrphans = %v, want [a]", gone)
	}
	if _, err := w.m.Allocate(w.ctx, c2, &c2.Spec.Containers[0]); err != nil {
		t.Fatalf("c after a's devices were freed: %v", err)
	}
}

func TestCorruptCheckpointIgnored(t *testing.T) {
	w := newWorld(t)
	w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	a := pod("a", 1)
	if _, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	path := "/var/lib/lockstep/device-plugins/" + devicemanager.CheckpointName
	b, err := w.files.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.files.CreateFile(path, []byte(strings.Replace(string(b), "foo-", "bar-", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	w.restart()
	if got := w.m.Allocated(a.UID); len(got) != 0 {
		t.Fatalf("a corrupt checkpoint was believed: %v", got)
	}
}

func TestInitContainerDevicesHandedOn(t *testing.T) {
	w := newWorld(t)
	w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	p := pod("a", 2)
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: p.Spec.Containers[0].Resources}}
	if _, _, ok := w.m.Admit(p, nil); !ok {
		t.Fatal("pod needing max(2 init, 2) refused with 2 devices")
	}
	if _, err := w.m.Allocate(w.ctx, p, &p.Spec.InitContainers[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.m.Allocate(w.ctx, p, &p.Spec.Containers[0]); err != nil {
		t.Fatalf("the app container could not take the init container's devices: %v", err)
	}
}

func TestNewRegistrationReplacesLiveStream(t *testing.T) {
	w := newWorld(t)
	old := w.plugin(deviceplugin.Config{Resource: foo, Count: 4})
	w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	old.SetHealthy("foo-0", false)
	old.Die()
	w.run(time.Second)
	c, a, _ := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "2"}, {foo: "2"}}, []map[string]string{c, a}); diff != "" {
		t.Fatalf("the replaced plugin still counts (-want +got):\n%s", diff)
	}
}

func TestAdmissionAllocatableCountsHeldDevices(t *testing.T) {
	w := newWorld(t)
	w.plugin(deviceplugin.Config{Resource: foo, Count: 4})
	a := pod("a", 2)
	if _, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	w.restart() // the plugin has not registered again: every device unhealthy
	got := map[string]string{}
	for k, v := range w.m.AdmissionAllocatable() {
		got[string(k)] = v.String()
	}
	if diff := cmp.Diff(map[string]string{foo: "2"}, got); diff != "" {
		t.Errorf("admission allocatable after a restart (-want +got):\n%s", diff)
	}
	if _, msg, ok := w.m.Admit(a, nil); !ok {
		t.Errorf("pod a, holding its devices, refused: %s", msg)
	}
	if _, _, ok := w.m.Admit(pod("b", 1), pods(a)); ok {
		t.Error("pod b admitted with no healthy device")
	}
}

// pods returns the active-pods function of Admit for a fixed list.
func pods(list ...*corev1.Pod) func() []*corev1.Pod {
	return func() []*corev1.Pod { return list }
}

// methods are the methods of p's calls, in order.
func methods(p *deviceplugin.Plugin) []string {
	var out []string
	for _, c := range p.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// TestOptionsFailureRefusesPlugin: as upstream's e2e "when
// GetDevicePluginOptions fails, device plugin will not be used": the
// registration fails with "failed to get device plugin options" and the
// plugin's error, the plugin sees that one call only, and its resource
// never appears.
func TestOptionsFailureRefusesPlugin(t *testing.T) {
	w := newWorld(t)
	p := deviceplugin.New(deviceplugin.Config{Resource: foo, Count: 1, FailOptions: true}, w.k.NewSignal)
	err := w.m.Register(w.ctx, p.Registration(), p)
	if err == nil || !strings.Contains(err.Error(), "failed to get device plugin options") || !strings.Contains(err.Error(), deviceplugin.ErrOptions.Error()) {
		t.Fatalf("Register = %v, want failed to get device plugin options: %v", err, deviceplugin.ErrOptions)
	}
	w.run(time.Minute)
	if diff := cmp.Diff([]string{"GetDevicePluginOptions"}, methods(p)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if c, a, removed := w.resources(); len(c) != 0 || len(a) != 0 || removed != nil {
		t.Errorf("a refused plugin's resource: capacity %v allocatable %v removed %v", c, a, removed)
	}
	w.restart()
	if c, _, _ := w.resources(); len(c) != 0 {
		t.Errorf("a refused plugin's resource came back from the checkpoint: %v", c)
	}
}

// TestOptionsAreThePluginsAnswer: the options the plugin answers count,
// not those of its registration request.
func TestOptionsAreThePluginsAnswer(t *testing.T) {
	w := newWorld(t)
	p := deviceplugin.New(deviceplugin.Config{Resource: foo, Count: 2, PreStart: true}, w.k.NewSignal)
	req := p.Registration()
	req.Options = deps.DevicePluginOptions{}
	if err := w.m.Register(w.ctx, req, p); err != nil {
		t.Fatal(err)
	}
	w.run(time.Second)
	a := pod("a", 1)
	if _, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	if len(p.PreStarts()) != 1 {
		t.Errorf("PreStartContainer calls %v, want one: the plugin's options ask for it", p.PreStarts())
	}
}

// TestListAndWatchFailingAtOnceIsNotRetried: as upstream's e2e "when
// ListAndWatch fails immediately…": the resource is registered with
// nothing (capacity and allocatable 0), the plugin sees its options call
// and one ListAndWatch however long we wait, and the resource stays.
func TestListAndWatchFailingAtOnceIsNotRetried(t *testing.T) {
	w := newWorld(t)
	p := deviceplugin.New(deviceplugin.Config{Resource: foo, Count: 1}, w.k.NewSignal)
	p.FailListAndWatch(true)
	if err := w.m.Register(w.ctx, p.Registration(), p); err != nil {
		t.Fatal(err)
	}
	w.run(time.Minute)
	c, a, removed := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "0"}, {foo: "0"}}, []map[string]string{c, a}); diff != "" || removed != nil {
		t.Fatalf("after the stream failed (-want +got):\n%s removed %v", diff, removed)
	}
	if diff := cmp.Diff([]string{"GetDevicePluginOptions", "ListAndWatch"}, methods(p)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if _, _, ok := w.m.Admit(pod("a", 1), nil); ok {
		t.Error("a pod was admitted to a plugin that never listed a device")
	}
}

// TestListAndWatchFailingAfterListingIsNotRetried: as upstream's e2e
// "when ListAndWatch fails after provisioning devices…": allocatable 0,
// capacity kept for the grace, no second ListAndWatch, then the resource
// is removed (the node shows 0) and forgotten across a restart.
func TestListAndWatchFailingAfterListingIsNotRetried(t *testing.T) {
	w := newWorld(t)
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	c, a, _ := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "2"}, {foo: "2"}}, []map[string]string{c, a}); diff != "" {
		t.Fatalf("after listing (-want +got):\n%s", diff)
	}
	p.FailListAndWatch(true)
	w.run(time.Second)
	c, a, removed := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "2"}, {foo: "0"}}, []map[string]string{c, a}); diff != "" || removed != nil {
		t.Fatalf("after the stream failed (-want +got):\n%s removed %v", diff, removed)
	}
	w.run(devicemanager.DefaultGrace - 2*time.Second)
	if c, _, removed := w.resources(); c[foo] != "2" || removed != nil {
		t.Fatalf("before the grace ended: capacity %v removed %v, want 2 devices kept", c, removed)
	}
	if diff := cmp.Diff([]string{"GetDevicePluginOptions", "ListAndWatch"}, methods(p)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	w.run(2 * time.Second)
	if c, a, removed := w.resources(); len(c) != 0 || len(a) != 0 || !cmp.Equal(removed, []corev1.ResourceName{foo}) {
		t.Fatalf("after the grace: capacity %v allocatable %v removed %v, want none, none, [%s]", c, a, removed, foo)
	}
	w.restart()
	if c, _, removed := w.resources(); len(c) != 0 || removed != nil {
		t.Errorf("a removed resource came back from the checkpoint: capacity %v removed %v", c, removed)
	}
}

// TestStoppedPluginKeepsCapacityForTheGrace: as upstream's e2e "when
// device plugin is stopped after provisioning devices…": allocatable 0 at
// once, capacity 2 until the grace, then removed; no pod gets its devices
// meanwhile; a plugin registering after the removal starts from nothing.
func TestStoppedPluginKeepsCapacityForTheGrace(t *testing.T) {
	w := newWorld(t)
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	p.Die()
	w.run(time.Second)
	c, a, removed := w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "2"}, {foo: "0"}}, []map[string]string{c, a}); diff != "" || removed != nil {
		t.Fatalf("after the plugin stopped (-want +got):\n%s removed %v", diff, removed)
	}
	b := pod("b", 1)
	if _, _, ok := w.m.Admit(b, nil); ok {
		t.Error("a pod was admitted to a stopped plugin's devices")
	}
	if _, err := w.m.Allocate(w.ctx, b, &b.Spec.Containers[0]); err == nil {
		t.Error("a container was given a stopped plugin's devices")
	}
	w.run(devicemanager.DefaultGrace)
	if _, _, removed := w.resources(); !cmp.Equal(removed, []corev1.ResourceName{foo}) {
		t.Fatalf("after the grace: removed %v, want [%s]", removed, foo)
	}
	if diff := cmp.Diff([]string{"GetDevicePluginOptions", "ListAndWatch"}, methods(p)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	// Back after the removal, with a stream that fails at once: nothing
	// of the old devices is left (upstream forgot them).
	p.Heal()
	p.FailListAndWatch(true)
	if err := w.m.Register(w.ctx, p.Registration(), p); err != nil {
		t.Fatal(err)
	}
	w.run(time.Second)
	c, a, removed = w.resources()
	if diff := cmp.Diff([]map[string]string{{foo: "0"}, {foo: "0"}}, []map[string]string{c, a}); diff != "" || removed != nil {
		t.Errorf("re-registered after the removal (-want +got):\n%s removed %v", diff, removed)
	}
}

// admissionAllocatable is AdmissionAllocatable as strings.
func (w *world) admissionAllocatable() map[string]string {
	got := map[string]string{}
	for k, v := range w.m.AdmissionAllocatable() {
		got[string(k)] = v.String()
	}
	return got
}

// TestAdmitRefusesAsUpstreamsAllocate: the refusals of upstream's
// devicesToAllocate, with the kubelet's UnexpectedAdmissionError message:
// a known resource with no healthy device (its plugin stopped, or not
// registered again since a restart); a resource no plugin offers that a
// pod holds devices of ("unregistered"). A resource the manager does not
// know at all is not its to refuse: AdmissionAllocatable leaves it to the
// Node, or reports 0 for one removed past its grace in this life.
func TestAdmitRefusesAsUpstreamsAllocate(t *testing.T) {
	const noHealthy = "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/foo, which is unexpected"
	const unregistered = "Allocate failed due to cannot allocate unregistered device example.com/foo, which is unexpected"
	type verdict struct {
		Reason, Message string
		OK              bool
		Allocatable     map[string]string
	}
	admit := func(w *world, p *corev1.Pod) verdict {
		reason, msg, ok := w.m.Admit(p, nil)
		return verdict{reason, msg, ok, w.admissionAllocatable()}
	}
	refused := func(msg string, alloc map[string]string) verdict {
		return verdict{devicemanager.ReasonUnexpectedAdmissionError, msg, false, alloc}
	}
	for _, tc := range []struct {
		name  string
		setup func(w *world) *corev1.Pod // returns a pod holding devices, or nil
		want  verdict
	}{
		{"stopped plugin", func(w *world) *corev1.Pod {
			w.plugin(deviceplugin.Config{Resource: foo, Count: 2}).Die()
			w.run(time.Second)
			return nil
		}, refused(noHealthy, map[string]string{foo: "0"})},
		{"restarted, plugin not back", func(w *world) *corev1.Pod {
			w.plugin(deviceplugin.Config{Resource: foo, Count: 2}).Die()
			w.run(time.Second)
			w.restart()
			return nil
		}, refused(noHealthy, map[string]string{foo: "0"})},
		{"removed past the grace", func(w *world) *corev1.Pod {
			w.plugin(deviceplugin.Config{Resource: foo, Count: 2}).Die()
			w.run(devicemanager.DefaultGrace + time.Second)
			return nil
		}, verdict{OK: true, Allocatable: map[string]string{foo: "0"}}},
		{"removed past the grace, then restarted", func(w *world) *corev1.Pod {
			w.plugin(deviceplugin.Config{Resource: foo, Count: 2}).Die()
			w.run(devicemanager.DefaultGrace + time.Second)
			w.restart()
			return nil
		}, verdict{OK: true, Allocatable: map[string]string{}}},
		{"removed past the grace while a pod holds devices, then restarted", func(w *world) *corev1.Pod {
			_, a := heldThenGone(w)
			return a
		}, refused(unregistered, map[string]string{foo: "1"})},
		// device-faults seed 26: the held device still counts once the
		// plugin is back with a stream that failed before listing it, so
		// the holder fits the node's count at the next restart, as
		// upstream raises the allocatable to the devices allocated.
		{"removed past the grace while a pod holds devices, restarted, back with no listing", func(w *world) *corev1.Pod {
			p, a := heldThenGone(w)
			p.Heal()
			p.FailListAndWatch(true)
			if err := w.m.Register(w.ctx, p.Registration(), p); err != nil {
				w.t.Fatal(err)
			}
			w.run(time.Second)
			w.restart()
			return a
		}, refused(noHealthy, map[string]string{foo: "1"})},
		{"never registered", func(*world) *corev1.Pod { return nil }, verdict{OK: true, Allocatable: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			holder := tc.setup(w)
			if diff := cmp.Diff(tc.want, admit(w, pod("b", 1))); diff != "" {
				t.Errorf("a new pod asking for 1 device (-want +got):\n%s", diff)
			}
			if holder != nil {
				if _, msg, ok := w.m.Admit(holder, nil); !ok {
					t.Errorf("the pod holding its devices refused: %s", msg)
				}
			}
		})
	}
}

// heldThenGone registers a plugin of two devices, gives one to a pod,
// stops the plugin past its grace and restarts the agent: the plugin and
// the pod holding its device.
func heldThenGone(w *world) (*deviceplugin.Plugin, *corev1.Pod) {
	p := w.plugin(deviceplugin.Config{Resource: foo, Count: 2})
	a := pod("a", 1)
	if _, err := w.m.Allocate(w.ctx, a, &a.Spec.Containers[0]); err != nil {
		w.t.Fatal(err)
	}
	p.Die()
	w.run(devicemanager.DefaultGrace + time.Second)
	w.restart()
	return p, a
}
