package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// call is one apiserver call the fake saw, at virtual time since the start.
type call struct {
	At   time.Duration
	Op   string // patch, delete
	Pod  string
	What string // patch: phase/message after it; delete: uid; error if any
}

// fakePods is an in-test deps.PodAPI: an object store with resource
// versions, injectable faults and latency, and a log of every call.
type fakePods struct {
	k     *kernel.Kernel
	pods  map[string]*corev1.Pod
	rv    int
	calls []call

	failures int // the next n patches fail with an internal error
	lost     int // the next n patches apply, but their reply is lost (a timeout)
	// lagging are the watch's copies of pods while it lags behind the
	// store (by UID; absent: the watch is up to date).
	lagging   map[types.UID]*corev1.Pod
	latency   time.Duration // every patch takes this long
	inFlight  int
	maxFlight int
	// superseded are the static pods no source wants any more (an
	// edited or removed manifest), by UID; every other pod is desired.
	superseded map[types.UID]bool
}

func newFakePods(k *kernel.Kernel, pods ...*corev1.Pod) *fakePods {
	f := &fakePods{k: k, pods: map[string]*corev1.Pod{}}
	for _, p := range pods {
		f.put(p)
	}
	return f
}

var podsResource = schema.GroupResource{Resource: "pods"}

// put stores p as a new version. Like a real apiserver it keeps times to
// the second: the object goes through JSON.
func (f *fakePods) put(p *corev1.Pod) {
	f.rv++
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	stored := &corev1.Pod{}
	if err := json.Unmarshal(b, stored); err != nil {
		panic(err)
	}
	stored.ResourceVersion = strconv.Itoa(f.rv)
	f.pods[p.Namespace+"/"+p.Name] = stored
}

func (f *fakePods) log(op, pod, what string) {
	f.calls = append(f.calls, call{f.k.Elapsed(), op, pod, what})
}

func (f *fakePods) ops(op string) []call {
	var out []call
	for _, c := range f.calls {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// PatchPodStatus applies a strategic-merge patch to the stored pod and
// keeps its status, with the patch's metadata.uid as precondition.
func (f *fakePods) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
	key := ns + "/" + name
	f.inFlight++
	f.maxFlight = max(f.maxFlight, f.inFlight)
	defer func() { f.inFlight-- }()
	if f.latency > 0 {
		if err := f.k.Tasks().Sleep(ctx, f.latency); err != nil {
			return nil, err
		}
	}
	cur, ok := f.pods[key]
	if !ok {
		f.log("patch", key, "notfound")
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.Pod{})
	if err != nil {
		return nil, err
	}
	next := &corev1.Pod{}
	if err := json.Unmarshal(merged, next); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%s/%s", next.Status.Phase, next.Status.Message)
	switch {
	case f.failures > 0:
		f.failures--
		f.log("patch", key, what+" error")
		return nil, apierrors.NewInternalError(errors.New("injected"))
	case next.UID != cur.UID:
		f.log("patch", key, what+" precondition")
		return nil, apierrors.NewConflict(podsResource, name, errors.New("uid precondition"))
	}
	f.log("patch", key, what)
	upd := cur.DeepCopy()
	upd.Status = next.Status
	f.put(upd)
	if f.lost > 0 {
		f.lost--
		return nil, context.DeadlineExceeded
	}
	return f.pods[key].DeepCopy(), nil
}

// GetPod reads the store (never behind).
func (f *fakePods) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	key := ns + "/" + name
	f.log("get", key, "")
	p, ok := f.pods[key]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return p.DeepCopy(), nil
}

// APIPod is the watched copy: the fake's store is a watch that is never
// behind.
func (f *fakePods) APIPod(uid types.UID) (*corev1.Pod, bool) {
	if p, ok := f.lagging[uid]; ok {
		return p.DeepCopy(), true
	}
	for _, p := range f.pods {
		if p.UID == uid {
			return p.DeepCopy(), true
		}
	}
	return nil, false
}

// Pod reports every pod desired but the superseded ones (the status
// manager asks only about static pods).
func (f *fakePods) Pod(uid types.UID) (*corev1.Pod, bool) {
	return nil, !f.superseded[uid]
}

// MirrorPod is the watched mirror pod ns/name.
func (f *fakePods) MirrorPod(ns, name string) (*corev1.Pod, bool) {
	p, ok := f.pods[ns+"/"+name]
	if !ok || !podutil.IsMirrorPod(p) {
		return nil, false
	}
	return p.DeepCopy(), true
}

func (f *fakePods) DeletePod(_ context.Context, ns, name string, uid types.UID) error {
	key := ns + "/" + name
	cur, ok := f.pods[key]
	switch {
	case !ok:
		f.log("delete", key, string(uid)+" notfound")
		return apierrors.NewNotFound(podsResource, name)
	case cur.UID != uid:
		f.log("delete", key, string(uid)+" precondition")
		return apierrors.NewConflict(podsResource, name, errors.New("uid precondition"))
	}
	f.log("delete", key, string(uid))
	delete(f.pods, key)
	return nil
}

func (f *fakePods) ListPods(context.Context, string, string) ([]*corev1.Pod, string, error) {
	return nil, "", errors.New("not used")
}

func (f *fakePods) WatchPods(context.Context, string, string) (deps.PodWatch, error) {
	return nil, errors.New("not used")
}

func (f *fakePods) CreatePod(context.Context, *corev1.Pod) (*corev1.Pod, error) {
	return nil, errors.New("not used")
}

// rig is a kernel, a fake API and a started manager.
type rig struct {
	k   *kernel.Kernel
	api *fakePods
	m   *Manager
}

func newRig(t *testing.T, pods ...*corev1.Pod) *rig {
	t.Helper()
	return newRigWith(t, Config{}, pods...)
}

func newRigWith(t *testing.T, cfg Config, pods ...*corev1.Pod) *rig {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	api := newFakePods(k, pods...)
	d := k.Deps()
	d.API.Pods = api
	m := NewManager(d.Core, d.API.Pods, api, cfg)
	m.Start(context.Background())
	return &rig{k: k, api: api, m: m}
}

func (r *rig) run(t *testing.T, d time.Duration) {
	t.Helper()
	if err := r.k.RunFor(d); err != nil {
		t.Fatal(err)
	}
}

// apiPod is a pod as it sits in the API with one container "a".
func apiPod(name string, policy corev1.RestartPolicy) *corev1.Pod {
	p := newPod(policy, "a")
	p.Name = name
	p.UID = types.UID("uid-" + name)
	return p
}

// live returns a running status carrying msg.
func live(msg string) corev1.PodStatus {
	return corev1.PodStatus{
		Phase:   corev1.PodRunning,
		Message: msg,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "a", Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(1)}},
		}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)}},
	}
}

// done returns a terminal status with the container exited with code.
func done(phase corev1.PodPhase, code int32, msg string) corev1.PodStatus {
	return corev1.PodStatus{
		Phase:   phase,
		Message: msg,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "a", Started: ptr(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: mt(2)}},
		}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonPodCompleted, LastTransitionTime: mt(2)}},
	}
}

func TestManagerCoalescesQuickUpdates(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	for i := 1; i <= 10; i++ {
		r.m.SetPodStatus(pod, live(fmt.Sprintf("v%d", i)))
	}
	r.run(t, time.Second)
	want := []call{{0, "patch", "ns/web", "Running/v10"}}
	if diff := cmp.Diff(want, r.api.ops("patch")); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

func TestManagerCoalescesWhileWriting(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.api.latency = 100 * time.Millisecond
	ts := r.k.Tasks()
	ts.Go("pod-worker", func() {
		for i := 1; i <= 10; i++ {
			r.m.SetPodStatus(pod, live(fmt.Sprintf("v%d", i)))
			ts.Sleep(context.Background(), 15*time.Millisecond)
		}
	})
	r.run(t, 5*time.Second)
	ups := r.api.ops("patch")
	if len(ups) > 3 {
		t.Errorf("%d writes for 10 quick changes, want at most 3: %v", len(ups), ups)
	}
	if got := ups[len(ups)-1].What; got != "Running/v10" {
		t.Errorf("last write %q, want Running/v10", got)
	}
	if got := r.api.pods["ns/web"].Status.Message; got != "v10" {
		t.Errorf("API holds %q, want v10", got)
	}
	if r.api.maxFlight != 1 {
		t.Errorf("%d concurrent writes, want 1", r.api.maxFlight)
	}
	if s, _ := r.m.PodStatus(pod.UID); s.Message != "v10" {
		t.Errorf("cached %q, want v10", s.Message)
	}
}

func TestManagerPatchKeepsForeignConditionsWithoutReading(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	foreign := corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(0)}
	inAPI := pod.DeepCopy()
	inAPI.Status.Conditions = []corev1.PodCondition{foreign}
	r := newRig(t, inAPI)
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, time.Second)

	want := []call{{0, "patch", "ns/web", "Running/v1"}}
	if diff := cmp.Diff(want, r.api.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	got := r.api.pods["ns/web"].Status.Conditions
	wantConds := []corev1.PodCondition{foreign, live("").Conditions[0]}
	if diff := cmp.Diff(wantConds, got); diff != "" {
		t.Errorf("conditions in the API (-want +got):\n%s", diff)
	}
}

func TestManagerOtherWriterMeanwhileNoConflict(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.api.latency = time.Second
	r.m.SetPodStatus(pod, live("v1"))
	// Someone else writes the pod while our patch is in flight: a patch
	// carries no resource version, so it applies over their write.
	r.k.Tasks().AfterFunc("other-writer", 500*time.Millisecond, func() {
		p := r.api.pods["ns/web"].DeepCopy()
		p.Labels = map[string]string{"touched": "yes"}
		r.api.put(p)
	})
	r.run(t, 5*time.Second)
	want := []call{{time.Second, "patch", "ns/web", "Running/v1"}}
	if diff := cmp.Diff(want, r.api.ops("patch")); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	if p := r.api.pods["ns/web"]; p.Labels["touched"] != "yes" || p.Status.Message != "v1" {
		t.Errorf("API pod labels %v message %q", p.Labels, p.Status.Message)
	}
}

func TestManagerErrorBackoff(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.api.failures = 3
	r.m.SetPodStatus(pod, live("v1"))
	// A change during the back-off waits for it.
	r.k.Tasks().AfterFunc("pod-worker", 3500*time.Millisecond, func() { r.m.SetPodStatus(pod, live("v2")) })
	r.run(t, 30*time.Second)
	want := []call{
		{0, "patch", "ns/web", "Running/v1 error"},
		{time.Second, "patch", "ns/web", "Running/v1 error"},
		{3 * time.Second, "patch", "ns/web", "Running/v1 error"},
		{7 * time.Second, "patch", "ns/web", "Running/v2"},
	}
	if diff := cmp.Diff(want, r.api.ops("patch")); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

func TestManagerResyncRewritesDrift(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, 25*time.Second)
	if n := len(r.api.ops("patch")); n != 1 {
		t.Fatalf("%d writes with nothing changed, want 1 (resync writes only differences): %v", n, r.api.ops("patch"))
	}
	// Someone wipes the status at 25 s: the resync at 30 s restores it.
	p := r.api.pods["ns/web"].DeepCopy()
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	r.api.put(p)
	r.run(t, 10*time.Second)
	ups := r.api.ops("patch")
	if want := (call{30 * time.Second, "patch", "ns/web", "Running/v1"}); len(ups) != 2 || ups[1] != want {
		t.Errorf("updates %v, want a second one: %v", ups, want)
	}
}

func TestManagerDeletesOnlyWhenDeletable(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	now := metav1.NewTime(kernel.DefaultEpoch)
	pod.DeletionTimestamp = &now
	r := newRig(t, pod)
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, 30*time.Second)
	if dels := r.api.ops("delete"); len(dels) != 0 {
		t.Fatalf("deleted before SetPodDeletable: %v", dels)
	}

	r.m.TerminatePod(pod)
	r.m.SetPodDeletable(pod.UID)
	r.run(t, time.Second)
	got := r.api.calls
	want := []call{
		{0, "patch", "ns/web", "Running/v1"},
		{30 * time.Second, "patch", "ns/web", "Failed/"},
		{30 * time.Second, "delete", "ns/web", "uid-web"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	s, _ := r.m.PodStatus(pod.UID)
	if got := stateOf(s.ContainerStatuses[0]); got != "terminated:137:ContainerStatusUnknown" {
		t.Errorf("final container state %s, want terminated:137:ContainerStatusUnknown", got)
	}

	// Done: nothing more is written or deleted.
	n := len(r.api.calls)
	r.m.SetPodStatus(pod, live("v2"))
	r.run(t, 30*time.Second)
	if len(r.api.calls) != n {
		t.Errorf("calls after the delete: %v", r.api.calls[n:])
	}
}

func TestManagerDeleteOfGonePodIsDone(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyNever)
	r := newRig(t, pod)
	r.m.SetPodStatus(pod, done(corev1.PodSucceeded, 0, ""))
	r.run(t, time.Second)
	// The pod is deleted by someone else, then the agent says deletable.
	delete(r.api.pods, "ns/web")
	r.m.SetPodDeletable(pod.UID)
	r.run(t, 60*time.Second)
	if calls := r.api.calls; len(calls) != 1 {
		t.Errorf("calls %v, want only the first patch (the watch already says gone; nothing is retried)", calls)
	}
}

func TestManagerDeleteUIDPrecondition(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyNever)
	r := newRig(t, pod)
	r.m.SetPodStatus(pod, done(corev1.PodSucceeded, 0, ""))
	r.m.SetPodDeletable(pod.UID)
	// A pod of the same name but another UID replaced ours before the write.
	other := pod.DeepCopy()
	other.UID = "uid-other"
	r.api.put(other)
	r.run(t, 30*time.Second)
	if n := len(r.api.ops("patch")) + len(r.api.ops("delete")); n != 0 {
		t.Errorf("wrote or deleted another pod of the same name: %v", r.api.calls)
	}
}

func TestManagerStaticPodNeverDeleted(t *testing.T) {
	static := apiPod("etcd-node", corev1.RestartPolicyAlways)
	static.UID = "hash123"
	static.Annotations = map[string]string{podutil.AnnotationConfigSource: "file", podutil.AnnotationConfigHash: "hash123"}
	mirror := static.DeepCopy()
	mirror.UID = "uid-mirror"
	mirror.Annotations = map[string]string{podutil.AnnotationConfigMirror: "hash123"}
	r := newRig(t, mirror)
	r.m.SetPodStatus(static, live("v1"))
	r.m.TerminatePod(static)
	r.m.SetPodDeletable(static.UID)
	r.run(t, 30*time.Second)
	if dels := r.api.ops("delete"); len(dels) != 0 {
		t.Errorf("static pod deleted: %v", dels)
	}
	ups := r.api.ops("patch")
	if len(ups) != 1 || r.api.pods["ns/etcd-node"].Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("mirror pod status not written with the final state: %v", ups)
	}
}

func TestManagerTerminalNotRegressed(t *testing.T) {
	t.Run("refused when asked", func(t *testing.T) {
		pod := apiPod("web", corev1.RestartPolicyAlways)
		r := newRig(t, pod)
		r.m.SetPodStatus(pod, done(corev1.PodSucceeded, 0, "done"))
		r.m.ContainersStopped(pod.UID)
		r.run(t, time.Second)
		r.m.SetPodStatus(pod, live("again"))
		r.m.SetPodStatus(pod, done(corev1.PodFailed, 1, "flip"))
		r.run(t, 30*time.Second)
		if diff := cmp.Diff([]call{{0, "patch", "ns/web", "Succeeded/done"}}, r.api.ops("patch")); diff != "" {
			t.Errorf("updates (-want +got):\n%s", diff)
		}
		if s, _ := r.m.PodStatus(pod.UID); s.Phase != corev1.PodSucceeded {
			t.Errorf("cached phase %s, want Succeeded", s.Phase)
		}
	})
	t.Run("refused against the pod's own status", func(t *testing.T) {
		pod := apiPod("web", corev1.RestartPolicyNever)
		pod.Status = done(corev1.PodFailed, 1, "")
		r := newRig(t, pod)
		r.m.SetPodStatus(pod, done(corev1.PodSucceeded, 0, "flip"))
		r.run(t, time.Second)
		if ups := r.api.ops("patch"); len(ups) != 0 {
			t.Errorf("updates %v, want none", ups)
		}
	})
	t.Run("API holds terminal", func(t *testing.T) {
		pod := apiPod("web", corev1.RestartPolicyAlways)
		inAPI := pod.DeepCopy()
		inAPI.Status = done(corev1.PodFailed, 1, "evicted")
		r := newRig(t, inAPI)
		// A fresh agent that never saw the API's status says Running.
		r.m.SetPodStatus(pod, live("v1"))
		r.run(t, 30*time.Second)
		got := r.api.pods["ns/web"].Status
		if got.Phase != corev1.PodFailed {
			t.Errorf("API phase %s, want Failed kept", got.Phase)
		}
		if st := stateOf(got.ContainerStatuses[0]); st != "terminated:137:ContainerStatusUnknown" {
			t.Errorf("API container state %s, want terminated:137:ContainerStatusUnknown", st)
		}
		if s, _ := r.m.PodStatus(pod.UID); s.Phase != corev1.PodFailed {
			t.Errorf("cached phase %s, want Failed adopted", s.Phase)
		}
		if n := len(r.api.ops("patch")); n != 1 {
			t.Errorf("%d writes, want 1", n)
		}
	})
}

func TestManagerRemovePodStopsWrites(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.api.failures = 100
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, 2*time.Second)
	r.m.RemovePod(pod.UID)
	n := len(r.api.calls)
	r.run(t, time.Minute)
	if len(r.api.calls) != n {
		t.Errorf("calls after RemovePod: %v", r.api.calls[n:])
	}
	if _, ok := r.m.PodStatus(pod.UID); ok {
		t.Errorf("status still cached after RemovePod")
	}
}

// TestManagerDeterministicOrder: with one writer, pods changed in some order
// are written in that order (FIFO), and two runs with the same seed make
// the same calls.
func TestManagerDeterministicOrder(t *testing.T) {
	scenario := func() []call {
		var pods []*corev1.Pod
		for _, n := range []string{"c", "a", "b"} {
			pods = append(pods, apiPod(n, corev1.RestartPolicyAlways))
		}
		r := newRigWith(t, Config{Writers: 1}, pods...)
		r.api.latency = 10 * time.Millisecond
		for _, p := range pods {
			r.m.SetPodStatus(p, live("v1"))
		}
		r.k.Tasks().AfterFunc("pod-worker", 5*time.Millisecond, func() {
			r.m.SetPodStatus(pods[0], live("v2"))
			r.m.SetPodStatus(pods[2], live("v2"))
		})
		r.run(t, 15*time.Second)
		return r.api.ops("patch")
	}
	first := scenario()
	want := []call{
		{10 * time.Millisecond, "patch", "ns/c", "Running/v1"},
		{20 * time.Millisecond, "patch", "ns/a", "Running/v1"},
		{30 * time.Millisecond, "patch", "ns/b", "Running/v2"},
		{40 * time.Millisecond, "patch", "ns/c", "Running/v2"},
	}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(first, scenario()); diff != "" {
		t.Errorf("second run differs (-first +second):\n%s", diff)
	}
}

func TestManagerGenerateRoundTrip(t *testing.T) {
	// What Generate makes, written and read back, compares equal: no
	// endless rewrites from sub-second times.
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	rs := world(true, running("a", "ca", 0, 1))
	rs.Containers[0].StartedAt = rs.Containers[0].StartedAt.Add(123 * time.Millisecond)
	s := Generate(r.m.WithCachedStatus(pod), rs, nil, nil, node, kernel.DefaultEpoch.Add(1500*time.Millisecond))
	r.m.SetPodStatus(pod, s)
	r.run(t, 45*time.Second)
	if n := len(r.api.ops("patch")); n != 1 {
		t.Errorf("%d writes, want 1: %v", n, r.api.ops("patch"))
	}
	// Generating again from the cache changes nothing.
	s2 := Generate(r.m.WithCachedStatus(pod), rs, nil, nil, node, kernel.DefaultEpoch.Add(50*time.Second))
	r.m.SetPodStatus(pod, s2)
	r.run(t, 15*time.Second)
	if n := len(r.api.ops("patch")); n != 1 {
		t.Errorf("%d writes after an unchanged generation, want 1", n)
	}
}

// TestManagerDeleteWaitsForNewestStatus: a status that arrives while the
// final write is in flight is written before the pod is deleted.
func TestManagerDeleteWaitsForNewestStatus(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyNever)
	r := newRig(t, pod)
	r.api.latency = time.Second
	r.m.SetPodStatus(pod, done(corev1.PodFailed, 1, "first"))
	r.m.SetPodDeletable(pod.UID)
	r.k.Tasks().AfterFunc("pod-worker", 500*time.Millisecond, func() {
		r.m.SetPodStatus(pod, done(corev1.PodFailed, 1, "last"))
	})
	r.run(t, 10*time.Second)
	got := r.api.calls
	want := []call{
		{time.Second, "patch", "ns/web", "Failed/first"},
		{2 * time.Second, "patch", "ns/web", "Failed/last"},
		{2 * time.Second, "delete", "ns/web", "uid-web"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestManagerConcurrentWritersKeepPerPodOrder: writes of different pods
// overlap up to Config.Writers; one pod's writes never overlap and its
// newest status is written last; each pod's terminal status is written
// once, then the pod is deleted once.
func TestManagerConcurrentWritersKeepPerPodOrder(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 12 {
		pods = append(pods, apiPod(fmt.Sprintf("p%02d", i), corev1.RestartPolicyNever))
	}
	r := newRigWith(t, Config{Writers: 4}, pods...)
	r.api.latency = 100 * time.Millisecond
	ts := r.k.Tasks()
	for _, p := range pods {
		ts.Go("pod-worker-"+p.Name, func() {
			for i := 1; i <= 5; i++ {
				r.m.SetPodStatus(p, live(fmt.Sprintf("v%d", i)))
				ts.Sleep(context.Background(), 30*time.Millisecond)
			}
			r.m.SetPodStatus(p, done(corev1.PodSucceeded, 0, "end"))
			r.m.SetPodDeletable(p.UID)
			r.m.SetPodStatus(p, done(corev1.PodSucceeded, 0, "end")) // again: no second write
			r.m.SetPodDeletable(p.UID)
		})
	}
	r.run(t, time.Minute)
	if r.api.maxFlight != 4 {
		t.Errorf("%d writes in flight at most, want 4", r.api.maxFlight)
	}
	byPod := map[string][]string{}
	for _, c := range r.api.calls {
		byPod[c.Pod] = append(byPod[c.Pod], c.Op+" "+c.What)
	}
	for _, p := range pods {
		got := byPod["ns/"+p.Name]
		n := len(got)
		if n < 2 {
			t.Errorf("%s: calls %v", p.Name, got)
			continue
		}
		want := []string{"patch Succeeded/end", "delete uid-" + p.Name}
		if diff := cmp.Diff(want, got[n-2:]); diff != "" {
			t.Errorf("%s: last calls (-want +got):\n%s\nall: %v", p.Name, diff, got)
		}
		for _, c := range got[:n-2] {
			if c == want[0] || c == want[1] {
				t.Errorf("%s: %q twice: %v", p.Name, c, got)
			}
		}
		// Running versions are written in increasing order.
		last := 0
		for _, c := range got[:n-2] {
			var v int
			if _, err := fmt.Sscanf(c, "patch Running/v%d", &v); err != nil || v <= last {
				t.Errorf("%s: out of order or unexpected: %v", p.Name, got)
				break
			}
			last = v
		}
	}
}

// TestManagerIdleResyncWritesNothing: with nothing changing, resyncs
// compare with the watched copy and send no request at all.
func TestManagerIdleResyncWritesNothing(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 50 {
		pods = append(pods, apiPod(fmt.Sprintf("p%02d", i), corev1.RestartPolicyAlways))
	}
	r := newRig(t, pods...)
	for _, p := range pods {
		r.m.SetPodStatus(p, live("v1"))
	}
	r.run(t, time.Second)
	n := len(r.api.calls)
	if n != 50 {
		t.Fatalf("%d calls for 50 new statuses, want 50", n)
	}
	r.run(t, 10*time.Minute)
	if extra := r.api.calls[n:]; len(extra) != 0 {
		t.Errorf("calls while idle for 10 minutes: %v", extra)
	}
}

// A patch whose reply was lost may have applied: the next write must not
// be computed against the watch's older copy, or its patch leaves fields
// of the lost write in place (a waiting container still running, a pod
// still Ready). The manager reads the pod before that write.
func TestManagerReadsThePodAfterALostReply(t *testing.T) {
	waiting := corev1.PodStatus{
		Phase:   corev1.PodRunning,
		Message: "v2",
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "a", Started: ptr(false), RestartCount: 1,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: mt(2)}},
	}
	pod := apiPod("web", corev1.RestartPolicyAlways)
	pod.Status.Conditions = waiting.Conditions // not ready before, as after
	r := newRig(t, pod)
	r.api.lost = 1
	r.api.lagging = map[types.UID]*corev1.Pod{pod.UID: r.api.pods["ns/web"].DeepCopy()} // the watch never sees the lost write
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, 100*time.Millisecond)
	r.m.SetPodStatus(pod, waiting)
	r.run(t, 10*time.Second)

	want := []call{{0, "patch", "ns/web", "Running/v1"}, {time.Second, "get", "ns/web", ""}, {time.Second, "patch", "ns/web", "Running/v2"}}
	if diff := cmp.Diff(want, r.api.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	got := r.api.pods["ns/web"].Status
	if diff := cmp.Diff(waiting.ContainerStatuses, got.ContainerStatuses); diff != "" {
		t.Errorf("container statuses in the API (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(waiting.Conditions, got.Conditions); diff != "" {
		t.Errorf("conditions in the API (-want +got):\n%s", diff)
	}
}

// A terminal phase is withheld from the API while the pod's containers
// may still run (a sidecar stopping after the failed init container), as
// the kubelet's mergePodStatus delays it: the API keeps Running with the
// new container states, and shows Failed once the agent says the
// containers stopped.
func TestManagerWithholdsTerminalPhaseUntilStopped(t *testing.T) {
	pod := apiPod("job", corev1.RestartPolicyNever)
	r := newRig(t, pod)
	r.m.SetPodStatus(pod, live("up"))
	r.run(t, time.Second)
	r.m.SetPodStatus(pod, done(corev1.PodFailed, 1, "init failed"))
	r.run(t, 5*time.Second)
	got := r.api.pods["ns/job"].Status
	if got.Phase != corev1.PodRunning || got.Message != "up" || got.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("before the containers stopped the API holds %s %q (containers %+v), want Running \"up\" with the container terminated",
			got.Phase, got.Message, got.ContainerStatuses)
	}
	if s, _ := r.m.PodStatus(pod.UID); s.Phase != corev1.PodFailed {
		t.Errorf("cached phase %s, want Failed (only the API write waits)", s.Phase)
	}
	r.m.ContainersStopped(pod.UID)
	r.run(t, time.Second)
	if diff := cmp.Diff([]call{{0, "patch", "ns/job", "Running/up"}, {time.Second, "patch", "ns/job", "Running/up"}, {6 * time.Second, "patch", "ns/job", "Failed/init failed"}},
		r.api.ops("patch")); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
}

// The status of a static pod that is no longer desired (its manifest was
// edited: a new UID) is not written to the mirror pod of its name, even
// one that still carries its hash: the mirror shows only the desired
// version, as the kubelet's status manager skips a status whose mirror
// translates to another pod.
func TestManagerSkipsSupersededStaticPod(t *testing.T) {
	static := apiPod("etcd-node", corev1.RestartPolicyAlways)
	static.UID = "hash1"
	static.Annotations = map[string]string{podutil.AnnotationConfigSource: "file", podutil.AnnotationConfigHash: "hash1"}
	mirror := static.DeepCopy()
	mirror.UID = "uid-mirror"
	mirror.Annotations = map[string]string{podutil.AnnotationConfigMirror: "hash1"}
	r := newRig(t, mirror)
	r.m.SetPodStatus(static, live("v1"))
	r.run(t, time.Second)
	r.api.superseded = map[types.UID]bool{"hash1": true}
	r.m.SetPodStatus(static, live("killed"))
	r.run(t, 30*time.Second)
	if diff := cmp.Diff([]call{{0, "patch", "ns/etcd-node", "Running/v1"}}, r.api.ops("patch")); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	// Written back unchanged (the same UID desired again): written again.
	r.api.superseded = nil
	r.m.SetPodStatus(static, live("back"))
	r.run(t, time.Second)
	if got := r.api.pods["ns/etcd-node"].Status.Message; got != "back" {
		t.Errorf("mirror status message %q once the pod is desired again, want \"back\"", got)
	}
}

// ContainersStopped before any status (a pod killed before its first
// sync) writes nothing, survives the resync, and lets the terminal status
// set after it be written.
func TestManagerContainersStoppedBeforeAnyStatus(t *testing.T) {
	pod := apiPod("early", corev1.RestartPolicyNever)
	r := newRigWith(t, Config{ResyncPeriod: time.Second}, pod)
	r.m.ContainersStopped(pod.UID)
	r.run(t, 3*time.Second)
	if ups := r.api.ops("patch"); len(ups) != 0 {
		t.Errorf("patches %v with no status set, want none", ups)
	}
	r.m.SetPodStatus(pod, done(corev1.PodFailed, 1, "killed"))
	r.run(t, time.Second)
	if got := r.api.pods["ns/early"].Status.Phase; got != corev1.PodFailed {
		t.Errorf("API phase %s, want Failed (the containers were said stopped before)", got)
	}
}
