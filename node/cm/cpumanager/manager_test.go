package cpumanager

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// updates records UpdateContainerResources calls.
type updates struct {
	calls []string
	fail  map[string]bool
}

func (u *updates) UpdateContainerResources(_ context.Context, id string, r *runtimeapi.ContainerResources) error {
	if u.fail[id] {
		return fmt.Errorf("container %s is gone", id)
	}
	u.calls = append(u.calls, id+"="+r.GetLinux().GetCpusetCpus())
	return nil
}

type fixture struct {
	files *memfs.FS
	rt    *updates
}

func newFixture() *fixture {
	return &fixture{files: memfs.New(), rt: &updates{fail: map[string]bool{}}}
}

func (f *fixture) manager(t *testing.T, cfg Config, cpus []deps.CPUInfo) (*Manager, error) {
	t.Helper()
	cfg.RootDir = "/var/lib/lockstep"
	core := deps.Core{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return New(core, Ports{Runtime: f.rt, Files: f.files}, cfg, deps.MachineInfo{Topology: cpus})
}

func (f *fixture) mustManager(t *testing.T, cfg Config, cpus []deps.CPUInfo) *Manager {
	t.Helper()
	m, err := f.manager(t, cfg, cpus)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var static1 = Config{Policy: PolicyStatic, NumReservedCPUs: 1}

// guaranteed is a Guaranteed pod whose containers ask for the given CPUs
// ("1", "500m"); init containers are named init-N.
func guaranteed(uid string, inits []string, cpus ...string) *corev1.Pod {
	res := func(cpu string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("32Mi")}
		return corev1.ResourceRequirements{Requests: l, Limits: l}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}}
	for i, c := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init-%d", i), Resources: res(c)})
	}
	for i, c := range cpus {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Resources: res(c)})
	}
	return p
}

// pods is the reconcile loop's view.
type pods struct {
	active  []*corev1.Pod
	ready   bool
	running []Container
}

func (p pods) HoldingResources() ([]*corev1.Pod, bool) { return p.active, p.ready }
func (p pods) RunningContainers() []Container          { return p.running }

func TestAdmitAssignsAndReleases(t *testing.T) {
	f := newFixture()
	m := f.mustManager(t, static1, uniform(2, 1, 2, 2)) // CPUs 0-7; 0 reserved
	a := guaranteed("a", nil, "2", "500m")
	if rej := admit(t, m, a); rej != nil {
		t.Fatal(rej)
	}
	b := guaranteed("b", nil, "3")
	if rej := admit(t, m, b); rej != nil {
		t.Fatal(rej)
	}
	got := map[string]string{}
	for _, k := range []struct{ uid, name string }{{"a", "c0"}, {"a", "c1"}, {"b", "c0"}, {"b", "other"}} {
		got[k.uid+"/"+k.name] = m.CPUs(types.UID(k.uid), k.name)
	}
	// a/c0 takes core 1 (1,5), beside the reserved CPU 0 on the fuller
	// socket; b a whole core of the other socket (2,6), then the thread
	// left on the fullest socket (4, the reserved CPU's sibling).
	want := map[string]string{"a/c0": "1,5", "a/c1": "0,3,7", "b/c0": "2,4,6", "b/other": "0,3,7"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cpusets (-want +got):\n%s", d)
	}
	if rej := admit(t, m, guaranteed("c", nil, "3")); rej == nil || rej.Reason != topologymanager.ReasonUnexpectedAdmissionError ||
		rej.Message != "Allocate failed due to not enough cpus available to satisfy request: requested=3, available=2, which is unexpected" {
		t.Errorf("admitting past the free CPUs: %+v", rej)
	}
	m.Release(guaranteed("a", nil))
	if got := m.CPUs("b", "other"); got != "0-1,3,5,7" {
		t.Errorf("shared pool after releasing a: %q", got)
	}
}

func TestInitCPUsReusedAndSidecarsKept(t *testing.T) {
	f := newFixture()
	m := f.mustManager(t, static1, uniform(2, 1, 2, 2))
	p := guaranteed("p", []string{"2"}, "2")
	if rej := admit(t, m, p); rej != nil {
		t.Fatal(rej)
	}
	if i, c := m.CPUs("p", "init-0"), m.CPUs("p", "c0"); i != c {
		t.Errorf("init on %s, app on %s: the app reuses the init container's CPUs", i, c)
	}
	always := corev1.ContainerRestartPolicyAlways
	s := guaranteed("s", []string{"2"}, "2")
	s.Spec.InitContainers[0].RestartPolicy = &always
	if rej := admit(t, m, s); rej != nil {
		t.Fatal(rej)
	}
	i, _ := cpuset.Parse(m.CPUs("s", "init-0"))
	c, _ := cpuset.Parse(m.CPUs("s", "c0"))
	if !i.Intersection(c).IsEmpty() {
		t.Errorf("sidecar on %s, app on %s: a sidecar keeps its CPUs", i, c)
	}
}

func TestAdmitIsAllOrNothing(t *testing.T) {
	f := newFixture()
	m := f.mustManager(t, static1, uniform(1, 1, 4, 1)) // CPUs 0-3
	before := m.State()
	if rej := admit(t, m, guaranteed("p", nil, "2", "2")); rej == nil {
		t.Fatal("admitted 4 CPUs with 3 free")
	}
	if d := cmp.Diff(before.Default.String(), m.State().Default.String()); d != "" || len(m.State().Assignments) != 0 {
		t.Errorf("a refused pod kept CPUs: %v %s", m.State().Assignments, d)
	}
}

func TestNonePolicyPinsNothing(t *testing.T) {
	f := newFixture()
	m := f.mustManager(t, Config{}, nil)
	if rej := admit(t, m, guaranteed("p", nil, "2")); rej != nil || m.CPUs("p", "c0") != "" {
		t.Errorf("none policy: %v, cpuset %q", rej, m.CPUs("p", "c0"))
	}
	state, _ := f.files.ReadFile("/var/lib/lockstep/cpu_manager_state")
	if !strings.Contains(string(state), `"policyName": "none"`) {
		t.Errorf("checkpoint %s", state)
	}
}

func TestCheckpointRestoredAndValidated(t *testing.T) {
	cpus := uniform(2, 1, 2, 2)
	f := newFixture()
	m := f.mustManager(t, static1, cpus)
	if rej := admit(t, m, guaranteed("a", nil, "2")); rej != nil {
		t.Fatal(rej)
	}
	again := f.mustManager(t, static1, cpus)
	if d := cmp.Diff(m.CPUs("a", "c0"), again.CPUs("a", "c0")); d != "" {
		t.Errorf("restored assignment (-before +after):\n%s", d)
	}
	path := "/var/lib/lockstep/cpu_manager_state"
	for _, tc := range []struct {
		name string
		cfg  Config
		cpus []deps.CPUInfo
		edit func(string) string
		want string
	}{
		{"another policy", Config{Policy: PolicyNone}, cpus, nil, `configured policy "none" differs from state checkpoint policy "static"`},
		{"another machine", static1, uniform(1, 1, 2, 2), nil, `current set of available CPUs "0-3" doesn't match with CPUs in state "0-7"`},
		{"reserved CPU taken", Config{Policy: PolicyStatic, ReservedCPUs: cpuset.New(1)}, cpus, nil, `not all reserved cpus: "1" are present in defaultCpuSet: "0,2-4,6-7"`},
		{"corrupted", static1, cpus, func(s string) string { return strings.Replace(s, `"0,2-4,6-7"`, `"0,2-7"`, 1) }, "checkpoint is corrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, _ := f.files.ReadFile(path)
			defer f.files.WriteFile(path, orig)
			if tc.edit != nil {
				f.files.WriteFile(path, []byte(tc.edit(string(orig))))
			}
			_, err := f.manager(t, tc.cfg, tc.cpus)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one saying %q and naming %s", err, tc.want, path)
			}
		})
	}
}

func TestStaticNeedsAReservation(t *testing.T) {
	_, err := newFixture().manager(t, Config{Policy: PolicyStatic}, uniform(1, 1, 2, 1))
	if err == nil || !strings.Contains(err.Error(), "greater than zero") {
		t.Errorf("error %v", err)
	}
}

func TestReconcileUpdatesChangedCPUSets(t *testing.T) {
	f := newFixture()
	m := f.mustManager(t, static1, uniform(1, 1, 4, 1)) // CPUs 0-3
	be := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "be"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	v := pods{active: []*corev1.Pod{be}, ready: true, running: []Container{{PodUID: "be", Name: "c", ID: "be1"}}}
	m.Reconcile(context.Background(), v)
	m.Reconcile(context.Background(), v) // nothing changed: no call
	g := guaranteed("g", nil, "2")
	if rej := admit(t, m, g); rej != nil {
		t.Fatal(rej)
	}
	v.active = append(v.active, g)
	v.running = append(v.running, Container{PodUID: "g", Name: "c0", ID: "g1"})
	m.Reconcile(context.Background(), v)
	f.rt.fail["be1"] = true
	m.Release(g)
	v.active, v.running = v.active[:1], v.running[:1]
	m.Reconcile(context.Background(), v) // fails: retried next time
	delete(f.rt.fail, "be1")
	m.Reconcile(context.Background(), v)
	// A pod gone from the active ones loses its CPUs once sources are seen.
	if rej := admit(t, m, guaranteed("h", nil, "1")); rej != nil {
		t.Fatal(rej)
	}
	m.Reconcile(context.Background(), pods{active: v.active, ready: false, running: v.running})
	m.Reconcile(context.Background(), v)
	want := []string{"be1=0-3", "be1=0,3", "g1=1-2", "be1=0-3", "be1=0,2-3", "be1=0-3"}
	if d := cmp.Diff(want, f.rt.calls); d != "" {
		t.Errorf("UpdateContainerResources calls (-want +got):\n%s", d)
	}
}

// admit admits pod through a topology manager of policy none.
func admit(t *testing.T, m *Manager, pod *corev1.Pod) *admission.Decision {
	t.Helper()
	tm, err := topologymanager.New(topologymanager.PolicyNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := tm.Admit(pod, m); !d.Admitted() {
		return &d
	}
	return nil
}
