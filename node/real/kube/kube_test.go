package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func newClient(t *testing.T, objs ...runtime.Object) (*Client, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	c := New(cs, Options{NodeName: "node-1"})
	t.Cleanup(c.Shutdown)
	return c, cs
}

func pod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// actionsOf returns the recorded actions on resource with verb.
func actionsOf(cs *fake.Clientset, verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

func TestListPodsSelectsNodeInAllNamespaces(t *testing.T) {
	c, cs := newClient(t)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &corev1.PodList{
			ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items:    []corev1.Pod{*pod("a", "p1", "node-1"), *pod("b", "p2", "node-1")},
		}, nil
	})
	pods, rv, err := c.ListPods(context.Background(), "node-1", "")
	if err != nil {
		t.Fatalf("ListPods: %v", err)
	}
	if rv != "42" {
		t.Errorf("resource version = %q, want 42", rv)
	}
	want := []*corev1.Pod{pod("a", "p1", "node-1"), pod("b", "p2", "node-1")}
	if d := cmp.Diff(want, pods); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}
	lists := actionsOf(cs, "list", "pods")
	if len(lists) != 1 {
		t.Fatalf("got %d list actions, want 1", len(lists))
	}
	la := lists[0].(k8stesting.ListActionImpl)
	if got := la.GetListRestrictions().Fields.String(); got != "spec.nodeName=node-1" {
		t.Errorf("field selector = %q, want spec.nodeName=node-1", got)
	}
	if la.GetNamespace() != "" {
		t.Errorf("namespace = %q, want all namespaces", la.GetNamespace())
	}
}

func TestListPodsErrorNamesNode(t *testing.T) {
	c, cs := newClient(t)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	_, _, err := c.ListPods(context.Background(), "node-1", "")
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want forbidden passed through", err)
	}
}

// watchWith makes the fake serve pod watches from fw and opens one.
func watchWith(t *testing.T, fw *watch.FakeWatcher) (deps.PodWatch, *fake.Clientset) {
	t.Helper()
	c, cs := newClient(t)
	cs.PrependWatchReactor("pods", k8stesting.DefaultWatchReactor(fw, nil))
	w, err := c.WatchPods(context.Background(), "node-1", "7")
	if err != nil {
		t.Fatalf("WatchPods: %v", err)
	}
	t.Cleanup(w.Stop)
	return w, cs
}

func TestWatchPodsRestrictions(t *testing.T) {
	_, cs := watchWith(t, watch.NewFakeWithChanSize(1, false))
	watches := actionsOf(cs, "watch", "pods")
	if len(watches) != 1 {
		t.Fatalf("got %d watch actions, want 1", len(watches))
	}
	wa := watches[0].(k8stesting.WatchActionImpl)
	r := wa.GetWatchRestrictions()
	if got := r.Fields.String(); got != "spec.nodeName=node-1" {
		t.Errorf("field selector = %q, want spec.nodeName=node-1", got)
	}
	if r.ResourceVersion != "7" {
		t.Errorf("resource version = %q, want 7", r.ResourceVersion)
	}
	if wa.GetNamespace() != "" {
		t.Errorf("namespace = %q, want all namespaces", wa.GetNamespace())
	}
}

func TestWatchPodsEvents(t *testing.T) {
	fw := watch.NewFakeWithChanSize(10, false)
	w, _ := watchWith(t, fw)
	p := pod("ns", "p", "node-1")
	fw.Add(p)
	fw.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}})
	fw.Modify(p)
	fw.Delete(p)

	var got []deps.PodEvent
	for range 3 {
		ev, err := w.Next(context.Background())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, ev)
	}
	want := []deps.PodEvent{{Type: deps.PodAdded, Pod: p}, {Type: deps.PodModified, Pod: p}, {Type: deps.PodDeleted, Pod: p}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestWatchPodsErrors(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		fw := watch.NewFakeWithChanSize(1, false)
		w, _ := watchWith(t, fw)
		gone := apierrors.NewResourceExpired("too old resource version: 7 (12)")
		fw.Error(&gone.ErrStatus)
		_, err := w.Next(context.Background())
		if !apierrors.IsResourceExpired(err) {
			t.Errorf("err = %v, want resource expired (410)", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		fw := watch.NewFakeWithChanSize(1, false)
		w, _ := watchWith(t, fw)
		fw.Stop()
		if _, err := w.Next(context.Background()); !errors.Is(err, errWatchClosed) {
			t.Errorf("err = %v, want %v", err, errWatchClosed)
		}
	})
	t.Run("not a pod", func(t *testing.T) {
		fw := watch.NewFakeWithChanSize(1, false)
		w, _ := watchWith(t, fw)
		fw.Add(&corev1.Node{})
		if _, err := w.Next(context.Background()); err == nil {
			t.Error("Next of a non-pod object succeeded")
		}
	})
	t.Run("context", func(t *testing.T) {
		w, _ := watchWith(t, watch.NewFakeWithChanSize(1, false))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := w.Next(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("stop", func(t *testing.T) {
		fw := watch.NewFakeWithChanSize(1, false)
		w, _ := watchWith(t, fw)
		w.Stop()
		if !fw.IsStopped() {
			t.Error("Stop did not stop the underlying watch")
		}
	})
}

func TestPatchPodStatus(t *testing.T) {
	p := pod("ns", "p", "node-1")
	c, cs := newClient(t, p)
	patch := []byte(`{"metadata":{"uid":"p-uid"},"status":{"phase":"Running"}}`)
	if _, err := c.PatchPodStatus(context.Background(), "ns", "p", patch); err != nil {
		t.Fatalf("PatchPodStatus: %v", err)
	}
	got, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %q, want Running", got.Status.Phase)
	}
	patches := actionsOf(cs, "patch", "pods")
	if len(patches) != 1 || patches[0].GetSubresource() != "status" {
		t.Fatalf("patch actions = %v, want one on the status subresource", patches)
	}
	if pt := patches[0].(k8stesting.PatchAction).GetPatchType(); pt != types.StrategicMergePatchType {
		t.Errorf("patch type %q, want strategic merge", pt)
	}
}

func TestPatchPodStatusConflictPassesThrough(t *testing.T) {
	p := pod("ns", "p", "node-1")
	c, cs := newClient(t, p)
	cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("uid precondition"))
	})
	_, err := c.PatchPodStatus(context.Background(), "ns", "p", []byte(`{"metadata":{"uid":"other"}}`))
	if !apierrors.IsConflict(err) {
		t.Errorf("err = %v, want a conflict", err)
	}
}

func TestDeletePodGraceZeroWithUIDPrecondition(t *testing.T) {
	p := pod("ns", "p", "node-1")
	c, cs := newClient(t, p)
	if err := c.DeletePod(context.Background(), "ns", "p", "p-uid"); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	deletes := actionsOf(cs, "delete", "pods")
	if len(deletes) != 1 {
		t.Fatalf("got %d delete actions, want 1", len(deletes))
	}
	da := deletes[0].(k8stesting.DeleteActionImpl)
	grace := int64(0)
	uid := types.UID("p-uid")
	want := metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}}
	if d := cmp.Diff(want, da.GetDeleteOptions()); d != "" {
		t.Errorf("delete options (-want +got):\n%s", d)
	}
	if da.GetNamespace() != "ns" || da.GetName() != "p" {
		t.Errorf("deleted %s/%s, want ns/p", da.GetNamespace(), da.GetName())
	}
	if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: err = %v, want not found", err)
	}
}

func TestCreatePod(t *testing.T) {
	c, cs := newClient(t)
	p := pod("ns", "mirror", "node-1")
	if _, err := c.CreatePod(context.Background(), p); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	got, err := cs.CoreV1().Pods("ns").Get(context.Background(), "mirror", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.UID != p.UID {
		t.Errorf("uid = %q, want %q", got.UID, p.UID)
	}
	if d := cmp.Diff(p.Spec, got.Spec); d != "" {
		t.Errorf("pod spec (-want +got):\n%s", d)
	}
	if _, err := c.CreatePod(context.Background(), p); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: err = %v, want already exists", err)
	}
}

func TestNodes(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	if _, err := c.GetNode(ctx, "node-1"); !apierrors.IsNotFound(err) {
		t.Fatalf("GetNode before create: err = %v, want not found", err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}}
	if _, err := c.CreateNode(ctx, n); err != nil {
		t.Fatalf("CreateNode: %v", err)
	}
	got, err := c.GetNode(ctx, "node-1")
	if err != nil {
		t.Fatalf("GetNode: %v", err)
	}
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	patch := []byte(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`)
	if _, err := c.PatchNodeStatus(ctx, "node-1", patch); err != nil {
		t.Fatalf("PatchNodeStatus: %v", err)
	}
	again, err := c.GetNode(ctx, "node-1")
	if err != nil {
		t.Fatalf("GetNode: %v", err)
	}
	if d := cmp.Diff(got.Status, again.Status); d != "" {
		t.Errorf("status after update (-want +got):\n%s", d)
	}
}

func TestLeases(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	holder := "node-1"
	dur := int32(40)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-1"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur},
	}
	if _, err := c.GetLease(ctx, "kube-node-lease", "node-1"); !apierrors.IsNotFound(err) {
		t.Fatalf("GetLease before create: err = %v, want not found", err)
	}
	if _, err := c.CreateLease(ctx, l); err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	got, err := c.GetLease(ctx, "kube-node-lease", "node-1")
	if err != nil {
		t.Fatalf("GetLease: %v", err)
	}
	renew := metav1.NewMicroTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	got.Spec.RenewTime = &renew
	if _, err := c.UpdateLease(ctx, got); err != nil {
		t.Fatalf("UpdateLease: %v", err)
	}
	again, err := c.GetLease(ctx, "kube-node-lease", "node-1")
	if err != nil {
		t.Fatalf("GetLease: %v", err)
	}
	if d := cmp.Diff(got.Spec, again.Spec); d != "" {
		t.Errorf("lease spec after update (-want +got):\n%s", d)
	}
}

func TestHeartbeatClientCarriesNodeStatusAndLease(t *testing.T) {
	cs, hb := fake.NewClientset(), fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	c := New(cs, Options{NodeName: "node-1", Heartbeat: hb})
	t.Cleanup(c.Shutdown)
	ctx := context.Background()
	n, err := c.GetNode(ctx, "node-1")
	if err != nil {
		t.Fatalf("GetNode: %v", err)
	}
	if _, err := c.PatchNodeStatus(ctx, n.Name, []byte(`{"status":{"phase":"Running"}}`)); err != nil {
		t.Fatalf("PatchNodeStatus: %v", err)
	}
	if _, err := c.CreateLease(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-1"}}); err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	if _, err := c.CreateNode(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}); err != nil {
		t.Fatalf("CreateNode: %v", err)
	}
	verbs := func(cs *fake.Clientset) []string {
		var out []string
		for _, a := range cs.Actions() {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
		return out
	}
	if d := cmp.Diff([]string{"get nodes/", "patch nodes/status", "create leases/"}, verbs(hb)); d != "" {
		t.Errorf("heartbeat client actions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"create nodes/"}, verbs(cs)); d != "" {
		t.Errorf("main client actions (-want +got):\n%s", d)
	}
}

func TestEventsGoThroughTheirOwnClient(t *testing.T) {
	cs, ev := fake.NewClientset(), fake.NewClientset()
	created := make(chan string, 1)
	ev.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		e := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		created <- e.Reason
		return true, e, nil
	})
	c := New(cs, Options{NodeName: "node-1", Events: ev})
	t.Cleanup(c.Shutdown)
	c.Event(&corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: "u1"}, corev1.EventTypeNormal, "Started", "Started container app")
	if got := <-created; got != "Started" {
		t.Errorf("event client got reason %q, want Started", got)
	}
	if n := len(cs.Actions()); n != 0 {
		t.Errorf("main client made %d requests for an event, want none: %v", n, cs.Actions())
	}
}

func TestEventIsWrittenToTheEventsAPI(t *testing.T) {
	cs := fake.NewClientset()
	created := make(chan *corev1.Event, 1)
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ev := a.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		created <- ev.DeepCopy()
		return true, ev, nil
	})
	c := New(cs, Options{NodeName: "node-1"})
	t.Cleanup(c.Shutdown)
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "p-uid", FieldPath: "spec.containers{c}"}
	c.Event(ref, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container c")

	var ev *corev1.Event
	select {
	case ev = <-created:
	case <-time.After(30 * time.Second):
		t.Fatal("no event written within 30s")
	}
	if ev.Namespace != "ns" {
		t.Errorf("event namespace = %q, want ns", ev.Namespace)
	}
	want := corev1.Event{
		InvolvedObject:      *ref,
		Reason:              "BackOff",
		Message:             "Back-off restarting failed container c",
		Type:                corev1.EventTypeWarning,
		Count:               1,
		Source:              corev1.EventSource{Component: "kubelet", Host: "node-1"},
		ReportingController: "kubelet",
		ReportingInstance:   "node-1",
	}
	if d := cmp.Diff(want, *ev, cmpopts.IgnoreFields(corev1.Event{}, "ObjectMeta", "FirstTimestamp", "LastTimestamp")); d != "" {
		t.Errorf("event (-want +got):\n%s", d)
	}
}

// countingLimiter is a flowcontrol.RateLimiter that counts Waits and fails
// them with err.
type countingLimiter struct {
	waits int
	err   error
}

func (l *countingLimiter) TryAccept() bool                { return true }
func (l *countingLimiter) Accept()                        {}
func (l *countingLimiter) Stop()                          {}
func (l *countingLimiter) QPS() float32                   { return 1 }
func (l *countingLimiter) Wait(ctx context.Context) error { l.waits++; return l.err }

// recordingSink is a record.EventSink that counts calls.
type recordingSink struct{ calls []string }

func (s *recordingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.calls = append(s.calls, "create")
	return e, nil
}
func (s *recordingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.calls = append(s.calls, "update")
	return e, nil
}
func (s *recordingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.calls = append(s.calls, "patch")
	return e, nil
}

func TestLimitedSinkWaitsBeforeEveryWrite(t *testing.T) {
	lim, inner := &countingLimiter{}, &recordingSink{}
	s := &limitedSink{ctx: context.Background(), limiter: lim, sink: inner}
	ev := &corev1.Event{}
	s.Create(ev)
	s.Update(ev)
	s.Patch(ev, nil)
	if lim.waits != 3 {
		t.Errorf("waits = %d, want 3", lim.waits)
	}
	if d := cmp.Diff([]string{"create", "update", "patch"}, inner.calls); d != "" {
		t.Errorf("inner calls (-want +got):\n%s", d)
	}

	lim.err = context.Canceled
	if _, err := s.Create(ev); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a failing limiter: err = %v, want context.Canceled", err)
	}
	if len(inner.calls) != 3 {
		t.Errorf("inner sink called despite the limiter failing: %v", inner.calls)
	}
}

func TestLoadKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: secret-token
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		t.Fatalf("LoadKubeconfig: %v", err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "secret-token" {
		t.Errorf("config host %q token %q, want https://127.0.0.1:6443 and secret-token", cfg.Host, cfg.BearerToken)
	}
	if _, err := LoadKubeconfig(""); err == nil {
		t.Error("LoadKubeconfig(\"\") succeeded")
	}
	if _, err := LoadKubeconfig(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("LoadKubeconfig of a missing file succeeded")
	}
}

func TestNewForConfigLimits(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	c, err := NewForConfig(cfg, 0, 0, Options{NodeName: "node-1"})
	if err != nil {
		t.Fatalf("NewForConfig: %v", err)
	}
	t.Cleanup(c.Shutdown)
	if rl := c.cs.CoreV1().RESTClient().GetRateLimiter(); rl == nil || rl.QPS() != DefaultAPIQPS {
		t.Errorf("main client rate limiter %v, want QPS %v", rl, DefaultAPIQPS)
	}
	if rl := c.heartbeat.CoreV1().RESTClient().GetRateLimiter(); rl != nil {
		t.Errorf("heartbeat client has rate limiter with QPS %v, want none", rl.QPS())
	}
	// Events have a client and a rate limiter of their own (the kubelet's
	// eventRecordQPS/eventBurst): they never take the main client's tokens.
	if c.events == nil {
		t.Fatal("no event client of its own")
	}
	if rl := c.events.CoreV1().RESTClient().GetRateLimiter(); rl == nil || rl.QPS() != DefaultEventQPS || rl == c.cs.CoreV1().RESTClient().GetRateLimiter() {
		t.Errorf("event client rate limiter %v, want one of its own with QPS %v", rl, DefaultEventQPS)
	}
	if cfg.ContentType != "" || cfg.QPS != 0 {
		t.Errorf("NewForConfig modified its input config: %+v", cfg)
	}
	got := configured(cfg)
	if got.ContentType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("content type = %q, want protobuf", got.ContentType)
	}
}

// TestPodsArriveWithoutManagedFields: listed and watched pods carry no
// metadata.managedFields (the agent never reads them; each kept copy
// would carry them); everything else is as the apiserver sent it.
func TestPodsArriveWithoutManagedFields(t *testing.T) {
	withFields := func(ns, name string) *corev1.Pod {
		p := pod(ns, name, "node-1")
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
		return p
	}
	c, cs := newClient(t)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &corev1.PodList{Items: []corev1.Pod{*withFields("a", "p1")}}, nil
	})
	pods, _, err := c.ListPods(context.Background(), "node-1", "")
	if err != nil {
		t.Fatalf("ListPods: %v", err)
	}
	if d := cmp.Diff([]*corev1.Pod{pod("a", "p1", "node-1")}, pods); d != "" {
		t.Errorf("listed pods (-want +got):\n%s", d)
	}

	fw := watch.NewFakeWithChanSize(1, false)
	w, _ := watchWith(t, fw)
	fw.Add(withFields("b", "p2"))
	ev, err := w.Next(context.Background())
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if d := cmp.Diff(pod("b", "p2", "node-1"), ev.Pod); d != "" {
		t.Errorf("watched pod (-want +got):\n%s", d)
	}
}
