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

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// call is one apiserver call the fake saw, at virtual time since the start.
type call struct {
	At   time.Duration
	Op   string // get, update, delete
	Pod  string
	What string // update: phase/message; delete: uid; error if any
}

// fakePods is an in-test deps.PodAPI: an object store with resource
// versions, injectable faults and latency, and a log of every call.
type fakePods struct {
	k     *kernel.Kernel
	pods  map[string]*corev1.Pod
	rv    int
	calls []call

	conflicts int           // the next n updates fail with a conflict
	failures  int           // the next n updates fail with an internal error
	latency   time.Duration // every update takes this long
	inFlight  int
	maxFlight int
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

func (f *fakePods) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	f.log("get", ns+"/"+name, "")
	p, ok := f.pods[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return p.DeepCopy(), nil
}

func (f *fakePods) UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	key := pod.Namespace + "/" + pod.Name
	what := fmt.Sprintf("%s/%s", pod.Status.Phase, pod.Status.Message)
	f.inFlight++
	f.maxFlight = max(f.maxFlight, f.inFlight)
	defer func() { f.inFlight-- }()
	if f.latency > 0 {
		if err := f.k.Tasks().Sleep(ctx, f.latency); err != nil {
			return nil, err
		}
	}
	cur, ok := f.pods[key]
	switch {
	case f.conflicts > 0:
		f.conflicts--
		f.log("update", key, what+" conflict")
		return nil, apierrors.NewConflict(podsResource, pod.Name, errors.New("injected"))
	case f.failures > 0:
		f.failures--
		f.log("update", key, what+" error")
		return nil, apierrors.NewInternalError(errors.New("injected"))
	case !ok:
		f.log("update", key, what+" notfound")
		return nil, apierrors.NewNotFound(podsResource, pod.Name)
	case cur.ResourceVersion != pod.ResourceVersion:
		f.log("update", key, what+" conflict")
		return nil, apierrors.NewConflict(podsResource, pod.Name, errors.New("stale resource version"))
	}
	f.log("update", key, what)
	next := cur.DeepCopy()
	next.Status = *pod.Status.DeepCopy()
	f.put(next)
	return f.pods[key].DeepCopy(), nil
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
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	api := newFakePods(k, pods...)
	d := k.Deps()
	d.API.Pods = api
	m := NewManager(d.Core, d.API.Pods, Config{})
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
	want := []call{{0, "update", "ns/web", "Running/v10"}}
	if diff := cmp.Diff(want, r.api.ops("update")); diff != "" {
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
	ups := r.api.ops("update")
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

func TestManagerConflictRetryMergesForeignConditions(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	foreign := corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(0)}
	inAPI := pod.DeepCopy()
	inAPI.Status.Conditions = []corev1.PodCondition{foreign}
	r := newRig(t, inAPI)
	r.api.conflicts = 2
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, time.Second)

	want := []call{
		{0, "update", "ns/web", "Running/v1 conflict"},
		{0, "update", "ns/web", "Running/v1 conflict"},
		{0, "update", "ns/web", "Running/v1"},
	}
	if diff := cmp.Diff(want, r.api.ops("update")); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if n := len(r.api.ops("get")); n != 3 {
		t.Errorf("%d reads, want a fresh read per attempt (3)", n)
	}
	got := r.api.pods["ns/web"].Status.Conditions
	wantConds := []corev1.PodCondition{foreign, live("").Conditions[0]}
	if diff := cmp.Diff(wantConds, got); diff != "" {
		t.Errorf("conditions in the API (-want +got):\n%s", diff)
	}
}

func TestManagerStaleResourceVersionRetries(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.api.latency = time.Second
	r.m.SetPodStatus(pod, live("v1"))
	// Someone else writes the pod while our write is in flight.
	r.k.Tasks().AfterFunc("other-writer", 500*time.Millisecond, func() {
		p := r.api.pods["ns/web"].DeepCopy()
		p.Labels = map[string]string{"touched": "yes"}
		r.api.put(p)
	})
	r.run(t, 5*time.Second)
	want := []call{
		{time.Second, "update", "ns/web", "Running/v1 conflict"},
		{2 * time.Second, "update", "ns/web", "Running/v1"},
	}
	if diff := cmp.Diff(want, r.api.ops("update")); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
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
		{0, "update", "ns/web", "Running/v1 error"},
		{time.Second, "update", "ns/web", "Running/v1 error"},
		{3 * time.Second, "update", "ns/web", "Running/v1 error"},
		{7 * time.Second, "update", "ns/web", "Running/v2"},
	}
	if diff := cmp.Diff(want, r.api.ops("update")); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

func TestManagerResyncRewritesDrift(t *testing.T) {
	pod := apiPod("web", corev1.RestartPolicyAlways)
	r := newRig(t, pod)
	r.m.SetPodStatus(pod, live("v1"))
	r.run(t, 25*time.Second)
	if n := len(r.api.ops("update")); n != 1 {
		t.Fatalf("%d writes with nothing changed, want 1 (resync writes only differences): %v", n, r.api.ops("update"))
	}
	// Someone wipes the status at 25 s: the resync at 30 s restores it.
	p := r.api.pods["ns/web"].DeepCopy()
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	r.api.put(p)
	r.run(t, 10*time.Second)
	ups := r.api.ops("update")
	if want := (call{30 * time.Second, "update", "ns/web", "Running/v1"}); len(ups) != 2 || ups[1] != want {
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
	var got []call
	for _, c := range r.api.calls {
		if c.Op != "get" {
			got = append(got, c)
		}
	}
	want := []call{
		{0, "update", "ns/web", "Running/v1"},
		{30 * time.Second, "update", "ns/web", "Failed/"},
		{30 * time.Second, "delete", "ns/web", "uid-web"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	s, _ := r.m.PodStatus(pod.UID)
	if got := stateOf(s.ContainerStatuses[0]); got != "terminated:137:ContainerStatusUnknown" {
		t.Errorf("final container state %s, want terminated:137:ContainerStatusUnknown", got)
	}

	// Done: nothing more is read, written or deleted.
	n := len(r.api.calls)
	r.m.SetPodStatus(pod, live("v2"))
	r.run(t, 30*time.Second)
	if len(r.api.calls) != n {
		t.Errorf("calls after the delete: %v", r.api.calls[n:])
	}
}

func countGets(cs []call) int {
	n := 0
	for _, c := range cs {
		if c.Op == "get" {
			n++
		}
	}
	return n
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
	if dels := r.api.ops("delete"); len(dels) != 0 {
		t.Errorf("deletes %v, want none (the read already says gone)", dels)
	}
	if n := countGets(r.api.calls); n != 2 {
		t.Errorf("%d reads, want 2: a gone pod is not retried", n)
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
	if n := len(r.api.ops("update")) + len(r.api.ops("delete")); n != 0 {
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
	ups := r.api.ops("update")
	if len(ups) != 1 || r.api.pods["ns/etcd-node"].Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("mirror pod status not written with the final state: %v", ups)
	}
}

func TestManagerTerminalNotRegressed(t *testing.T) {
	t.Run("refused when asked", func(t *testing.T) {
		pod := apiPod("web", corev1.RestartPolicyAlways)
		r := newRig(t, pod)
		r.m.SetPodStatus(pod, done(corev1.PodSucceeded, 0, "done"))
		r.run(t, time.Second)
		r.m.SetPodStatus(pod, live("again"))
		r.m.SetPodStatus(pod, done(corev1.PodFailed, 1, "flip"))
		r.run(t, 30*time.Second)
		if diff := cmp.Diff([]call{{0, "update", "ns/web", "Succeeded/done"}}, r.api.ops("update")); diff != "" {
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
		if ups := r.api.ops("update"); len(ups) != 0 {
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
		if n := len(r.api.ops("update")); n != 1 {
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

// TestManagerDeterministicOrder: pods changed in some order are written in
// that order (FIFO), and two runs with the same seed make the same calls.
func TestManagerDeterministicOrder(t *testing.T) {
	scenario := func() []call {
		var pods []*corev1.Pod
		for _, n := range []string{"c", "a", "b"} {
			pods = append(pods, apiPod(n, corev1.RestartPolicyAlways))
		}
		r := newRig(t, pods...)
		r.api.latency = 10 * time.Millisecond
		for _, p := range pods {
			r.m.SetPodStatus(p, live("v1"))
		}
		r.k.Tasks().AfterFunc("pod-worker", 5*time.Millisecond, func() {
			r.m.SetPodStatus(pods[0], live("v2"))
			r.m.SetPodStatus(pods[2], live("v2"))
		})
		r.run(t, 15*time.Second)
		return r.api.ops("update")
	}
	first := scenario()
	want := []call{
		{10 * time.Millisecond, "update", "ns/c", "Running/v1"},
		{20 * time.Millisecond, "update", "ns/a", "Running/v1"},
		{30 * time.Millisecond, "update", "ns/b", "Running/v2"},
		{40 * time.Millisecond, "update", "ns/c", "Running/v2"},
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
	if n := len(r.api.ops("update")); n != 1 {
		t.Errorf("%d writes, want 1: %v", n, r.api.ops("update"))
	}
	// Generating again from the cache changes nothing.
	s2 := Generate(r.m.WithCachedStatus(pod), rs, nil, nil, node, kernel.DefaultEpoch.Add(50*time.Second))
	r.m.SetPodStatus(pod, s2)
	r.run(t, 15*time.Second)
	if n := len(r.api.ops("update")); n != 1 {
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
	var got []call
	for _, c := range r.api.calls {
		if c.Op != "get" {
			got = append(got, c)
		}
	}
	want := []call{
		{time.Second, "update", "ns/web", "Failed/first"},
		{2 * time.Second, "update", "ns/web", "Failed/last"},
		{2 * time.Second, "delete", "ns/web", "uid-web"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
