package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

func TestCreatePodAssignsServerFields(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	advance(t, w, 1500*time.Millisecond)
	in := newPod("a", "n1")
	in.UID = "chosen-by-client"
	in.Namespace = ""
	got := mustCreate(t, w, in)[0]
	wantTime := metav1.NewTime(kernel.DefaultEpoch.Add(time.Second)) // second precision
	if got.UID != "00000000-0000-4000-8000-000000000001" || got.ResourceVersion != "1" || got.Generation != 1 ||
		got.Namespace != "default" || !got.CreationTimestamp.Equal(&wantTime) || got.Status.Phase != corev1.PodPending {
		t.Errorf("created pod metadata: uid %q rv %q gen %d ns %q created %v phase %q", got.UID, got.ResourceVersion,
			got.Generation, got.Namespace, got.CreationTimestamp, got.Status.Phase)
	}
	if _, err := w.u.CreatePod(newPod("a", "n2")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create of a: %v, want AlreadyExists", err)
	}
	gen := newPod("", "n1")
	gen.GenerateName = "web-"
	if g := mustCreate(t, w, gen)[0]; g.Name != "web-00001" || g.UID != "00000000-0000-4000-8000-000000000002" {
		t.Errorf("generated pod: name %q uid %q", g.Name, g.UID)
	}

	// The agent's create (mirror pods) resets the status and refuses a
	// resource version or a missing namespace.
	mirror := newPod("mirror", "n1")
	mirror.Status.Phase = corev1.PodRunning
	r := call(t, w, func(ctx context.Context) res[*corev1.Pod] { return mk(w.s.CreatePod(ctx, mirror)) })
	if r.err != nil || r.obj.Status.Phase != corev1.PodPending || r.obj.UID == "" {
		t.Errorf("agent create: %v, %v", r.obj, r.err)
	}
	again := call(t, w, func(ctx context.Context) error { _, err := w.s.CreatePod(ctx, mirror); return err })
	if !apierrors.IsAlreadyExists(again) {
		t.Errorf("agent create twice: %v, want AlreadyExists", again)
	}
	withRV := newPod("x", "n1")
	withRV.ResourceVersion = "3"
	noNS := newPod("y", "n1")
	noNS.Namespace = ""
	for _, p := range []*corev1.Pod{withRV, noNS} {
		err := call(t, w, func(ctx context.Context) error { _, err := w.s.CreatePod(ctx, p); return err })
		if !apierrors.IsBadRequest(err) {
			t.Errorf("agent create of %s: %v, want BadRequest", p.Name, err)
		}
	}
}

func TestPodDefaults(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	res := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name     string
		image    string
		requests corev1.ResourceList
		limits   corev1.ResourceList
		qos      corev1.PodQOSClass
		pull     corev1.PullPolicy
	}{
		{"besteffort", "nginx", nil, nil, corev1.PodQOSBestEffort, corev1.PullAlways},
		{"latest", "reg:5000/nginx:latest", nil, nil, corev1.PodQOSBestEffort, corev1.PullAlways},
		{"tagged", "reg:5000/nginx:1.27", res("100m", ""), nil, corev1.PodQOSBurstable, corev1.PullIfNotPresent},
		{"digest", "nginx@sha256:abcd", nil, res("1", "1Gi"), corev1.PodQOSGuaranteed, corev1.PullIfNotPresent},
		{"latest-digest", "nginx:latest@sha256:2d93f6c5a2fa6ef1b1f47c7a2b7c8f0d0b6f6f2b1b8e8d5c4f3a2b1c0d9e8f7a", nil, nil, corev1.PodQOSBestEffort, corev1.PullAlways},
		{"equal", "nginx:1", res("1", "1Gi"), res("1", "1Gi"), corev1.PodQOSGuaranteed, corev1.PullIfNotPresent},
		{"unequal", "nginx:1", res("500m", "1Gi"), res("1", "1Gi"), corev1.PodQOSBurstable, corev1.PullIfNotPresent},
		{"cpu-limit-only", "nginx:1", nil, res("1", ""), corev1.PodQOSBurstable, corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod(tt.name, "n1")
			c := &p.Spec.Containers[0]
			c.Image, c.Resources = tt.image, corev1.ResourceRequirements{Requests: tt.requests, Limits: tt.limits}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}}
			got := mustCreate(t, w, p)[0]
			gc := got.Spec.Containers[0]
			if got.Status.QOSClass != tt.qos || gc.ImagePullPolicy != tt.pull {
				t.Errorf("qos %q pull %q, want %q %q", got.Status.QOSClass, gc.ImagePullPolicy, tt.qos, tt.pull)
			}
			if got.Spec.RestartPolicy != corev1.RestartPolicyAlways || *got.Spec.TerminationGracePeriodSeconds != 30 ||
				gc.TerminationMessagePath != "/dev/termination-log" || gc.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
				t.Errorf("spec defaults missing: %+v", got.Spec)
			}
			wantProbe := &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			}
			if diff := cmp.Diff(wantProbe, gc.ReadinessProbe); diff != "" {
				t.Errorf("probe defaults (-want +got):\n%s", diff)
			}
			if tt.requests == nil && tt.limits != nil {
				if diff := cmp.Diff(tt.limits, gc.Resources.Requests); diff != "" {
					t.Errorf("requests not defaulted from limits (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestPatchPodStatus(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	created := mustCreate(t, w, newPod("a", "n1"))[0]
	patch := func(p string) res[*corev1.Pod] {
		return call(t, w, func(ctx context.Context) res[*corev1.Pod] {
			return mk(w.s.PatchPodStatus(ctx, "default", "a", []byte(p)))
		})
	}

	// Only the status is written (the spec and labels of the patch are
	// ignored); conditions merge by type; the version moves on.
	r := patch(`{"metadata":{"uid":"` + string(created.UID) + `","labels":{"hijacked":"yes"}},"spec":{"nodeName":"elsewhere"},` +
		`"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := created.DeepCopy()
	want.ResourceVersion = "2"
	want.Status.Phase = corev1.PodRunning
	want.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if diff := cmp.Diff(want, r.obj); diff != "" {
		t.Errorf("after status patch (-want +got):\n%s", diff)
	}
	r = patch(`{"status":{"conditions":[{"type":"example.com/lb","status":"True"}]}}`)
	want.ResourceVersion = "3"
	// A condition new to the list goes first, as strategic merge puts it.
	want.Status.Conditions = append([]corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}}, want.Status.Conditions...)
	if diff := cmp.Diff(want, mustGet(t, w, "a")); diff != "" || r.err != nil {
		t.Errorf("stored after a merged condition (-want +got):\n%s (err %v)", diff, r.err)
	}
	// A patch that changes nothing commits nothing.
	if same := patch(`{"status":{"phase":"Running"}}`); same.err != nil || same.obj.ResourceVersion != "3" || w.s.ResourceVersion() != 3 {
		t.Errorf("no-op status patch: rv %v, err %v, server rv %d; want 3", same.obj, same.err, w.s.ResourceVersion())
	}
	// Another UID fails the precondition; a missing pod is NotFound; a
	// broken patch is a BadRequest.
	if other := patch(`{"metadata":{"uid":"someone-else"},"status":{"phase":"Failed"}}`); !apierrors.IsConflict(other.err) {
		t.Errorf("status patch with another UID: %v, want Conflict", other.err)
	}
	if err := call(t, w, func(ctx context.Context) error {
		_, err := w.s.PatchPodStatus(ctx, "default", "missing", []byte(`{}`))
		return err
	}); !apierrors.IsNotFound(err) {
		t.Errorf("status patch of a missing pod: %v, want NotFound", err)
	}
	if bad := patch(`{"status":`); !apierrors.IsBadRequest(bad.err) {
		t.Errorf("broken patch: %v, want BadRequest", bad.err)
	}
	var verbs []string
	for _, rec := range w.s.History() {
		verbs = append(verbs, rec.Actor+" "+rec.Verb+" "+rec.Name)
	}
	wantVerbs := []string{"user create a", "agent patchStatus a", "agent patchStatus a"}
	if diff := cmp.Diff(wantVerbs, verbs); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	wantReqs := map[apiserver.Request]int{{Verb: "patchStatus", Resource: "pods"}: 6}
	if diff := cmp.Diff(wantReqs, w.s.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestDeletePodUIDPrecondition(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	a := mustCreate(t, w, newPod("a", "n1"))[0]
	pw := call(t, w, func(ctx context.Context) res[deps.PodWatch] { return mk(w.s.WatchPods(ctx, "n1", a.ResourceVersion)) })
	if pw.err != nil {
		t.Fatal(pw.err)
	}
	wrong := call(t, w, func(ctx context.Context) error { return w.s.DeletePod(ctx, "default", "a", "not-"+a.UID) })
	if !apierrors.IsConflict(wrong) {
		t.Errorf("delete with a wrong UID: %v, want Conflict", wrong)
	}
	mustGet(t, w, "a") // still there
	absent := call(t, w, func(ctx context.Context) error { return w.s.DeletePod(ctx, "default", "nope", "") })
	if !apierrors.IsNotFound(absent) {
		t.Errorf("delete of an absent pod: %v, want NotFound", absent)
	}
	ok := call(t, w, func(ctx context.Context) error { return w.s.DeletePod(ctx, "default", "a", a.UID) })
	if ok != nil {
		t.Fatalf("delete with the right UID: %v", ok)
	}
	if _, err := w.u.GetPod("default", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("after delete, get: %v, want NotFound", err)
	}
	ev := call(t, w, func(ctx context.Context) res[deps.PodEvent] { return mk(pw.obj.Next(ctx)) })
	want := seen{Type: deps.PodDeleted, Name: "a", RV: "2", Node: "n1", Phase: corev1.PodPending}
	if ev.err != nil || summarize(ev.obj) != want {
		t.Errorf("watch after delete: %+v, %v; want %+v", ev.obj, ev.err, want)
	}
	h := w.s.History()
	if last := h[len(h)-1]; last.Verb != apiserver.VerbDelete || last.Actor != apiserver.ActorAgent || last.UID != a.UID || last.RV != 2 {
		t.Errorf("last history record: %+v", last)
	}
}

func TestGracefulDelete(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	advance(t, w, 1500*time.Millisecond)
	p := newPod("a", "n1")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(45))
	a := mustCreate(t, w, p)[0]
	t0 := kernel.DefaultEpoch.Add(time.Second) // server times have second precision

	state := func() (time.Time, int64, int64) {
		t.Helper()
		got := mustGet(t, w, "a")
		if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil {
			t.Fatalf("pod a not marked for deletion: %+v", got.ObjectMeta)
		}
		return got.DeletionTimestamp.Time, *got.DeletionGracePeriodSeconds, got.Generation
	}
	type mark struct {
		At    time.Time
		Grace int64
		Gen   int64
	}
	check := func(step string, want mark) {
		t.Helper()
		at, grace, gen := state()
		if diff := cmp.Diff(want, mark{at, grace, gen}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}

	if err := w.u.DeletePodGracefully("default", "a", nil); err != nil {
		t.Fatal(err)
	}
	check("first delete uses terminationGracePeriodSeconds", mark{t0.Add(45 * time.Second), 45, 2})
	rv := w.s.ResourceVersion()
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(60))); err != nil {
		t.Fatal(err)
	}
	if err := w.u.DeletePodGracefully("default", "a", nil); err != nil {
		t.Fatal(err)
	}
	check("a longer or default grace changes nothing", mark{t0.Add(45 * time.Second), 45, 2})
	if w.s.ResourceVersion() != rv {
		t.Errorf("ignored deletes wrote: rv %d, want %d", w.s.ResourceVersion(), rv)
	}
	advance(t, w, 5*time.Second)
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(10))); err != nil {
		t.Fatal(err)
	}
	check("a shorter grace counts from the first request", mark{t0.Add(10 * time.Second), 10, 2})

	// The object stays until the node deletes it with grace 0.
	advance(t, w, time.Minute)
	mustGet(t, w, "a")
	if err := call(t, w, func(ctx context.Context) error { return w.s.DeletePod(ctx, "default", "a", a.UID) }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.u.GetPod("default", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("after the node's delete: %v, want NotFound", err)
	}
	if err := w.u.DeletePodGracefully("default", "a", nil); !apierrors.IsNotFound(err) {
		t.Errorf("deleting a deleted pod: %v, want NotFound", err)
	}
}

func TestGracefulDeleteImmediateCases(t *testing.T) {
	tests := []struct {
		name      string
		node      string
		phase     corev1.PodPhase
		grace     *int64
		second    *int64 // a second delete, when not nil
		wantGone  bool
		wantGrace int64
	}{
		{name: "unbound", node: "", grace: nil, wantGone: true},
		{name: "succeeded", node: "n1", phase: corev1.PodSucceeded, wantGone: true},
		{name: "failed", node: "n1", phase: corev1.PodFailed, grace: ptr(int64(20)), wantGone: true},
		{name: "zero grace", node: "n1", grace: ptr(int64(0)), wantGone: true},
		{name: "default grace", node: "n1", wantGrace: 30},
		{name: "negative grace", node: "n1", grace: ptr(int64(-5)), wantGrace: 1},
		{name: "shrunk to zero", node: "n1", grace: ptr(int64(20)), second: ptr(int64(0)), wantGone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, 1, apiserver.Config{}, false)
			p := newPod("p", tt.node)
			p.Status.Phase = tt.phase
			mustCreate(t, w, p)
			if err := w.u.DeletePodGracefully("default", "p", tt.grace); err != nil {
				t.Fatal(err)
			}
			if tt.second != nil {
				if err := w.u.DeletePodGracefully("default", "p", tt.second); err != nil {
					t.Fatal(err)
				}
			}
			got, err := w.u.GetPod("default", "p")
			switch {
			case tt.wantGone && !apierrors.IsNotFound(err):
				t.Errorf("pod still there (%v): %+v", err, got.ObjectMeta)
			case !tt.wantGone && (err != nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != tt.wantGrace):
				t.Errorf("pod %+v, %v; want grace %d", got, err, tt.wantGrace)
			}
		})
	}
}

func TestUserUpdatePod(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	a := mustCreate(t, w, newPod("a", "n1"))[0]
	if _, err := w.u.SetPodStatus("default", "a", corev1.PodStatus{Phase: corev1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	// A stale or foreign update fails; a fresh one replaces spec and labels
	// but keeps the status, and bumps the generation.
	if _, err := w.u.UpdatePod(a); !apierrors.IsConflict(err) {
		t.Errorf("stale user update: %v, want Conflict", err)
	}
	cur := mustGet(t, w, "a")
	foreign := cur.DeepCopy()
	foreign.UID = types.UID("x")
	if _, err := w.u.UpdatePod(foreign); !apierrors.IsConflict(err) {
		t.Errorf("user update with another UID: %v, want Conflict", err)
	}
	cur.Labels = map[string]string{"v": "2"}
	cur.Spec.Containers[0].Image = "registry.example/app:v2"
	cur.Status = corev1.PodStatus{Phase: corev1.PodFailed}
	got, err := w.u.UpdatePod(cur)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["v"] != "2" || got.Spec.Containers[0].Image != "registry.example/app:v2" ||
		got.Status.Phase != corev1.PodRunning || got.Generation != 2 || got.ResourceVersion != "3" {
		t.Errorf("after user update: labels %v image %q phase %q gen %d rv %q", got.Labels,
			got.Spec.Containers[0].Image, got.Status.Phase, got.Generation, got.ResourceVersion)
	}
	// A label-only change keeps the generation.
	got.Labels["v"] = "3"
	if again, err := w.u.UpdatePod(got); err != nil || again.Generation != 2 {
		t.Errorf("label-only update: gen %d, err %v; want 2", again.Generation, err)
	}
}

func TestDeepCopies(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	var observed []*corev1.Pod
	w.s.OnWrite(func(r apiserver.Record) { observed = append(observed, r.Pod) })
	in := newPod("a", "n1")
	created := mustCreate(t, w, in)[0]
	want := created.DeepCopy()
	scribble := func(p *corev1.Pod) {
		p.Labels["app"] = "scribbled"
		p.Spec.Containers[0].Image = "scribbled"
		p.Status.Phase = "Scribbled"
	}
	scribble(in)
	scribble(created)
	userGet := mustGet(t, w, "a")
	scribble(userGet)
	scribble(w.u.ListAllPods()[0])
	scribble(w.s.History()[0].Pod)
	scribble(observed[0])
	type got struct {
		list, event *corev1.Pod
		err         error
	}
	g := call(t, w, func(ctx context.Context) got {
		pods, _, err := w.s.ListPods(ctx, "n1", "")
		if err != nil {
			return got{err: err}
		}
		pw, err := w.s.WatchPods(ctx, "n1", "")
		if err != nil {
			return got{err: err}
		}
		ev, err := pw.Next(ctx)
		return got{pods[0], ev.Pod, err}
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	for _, p := range []*corev1.Pod{g.list, g.event} {
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("a read shows an earlier caller's changes (-want +got):\n%s", diff)
		}
		scribble(p)
	}
	if diff := cmp.Diff(want, mustGet(t, w, "a")); diff != "" {
		t.Errorf("stored pod changed through a returned copy (-want +got):\n%s", diff)
	}

	// A status write keeps neither the request nor the reply shared.
	req := want.DeepCopy()
	req.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	r := call(t, w, func(ctx context.Context) res[*corev1.Pod] { return mk(patchStatus(ctx, w.s, req)) })
	if r.err != nil {
		t.Fatal(r.err)
	}
	stored := mustGet(t, w, "a")
	req.Status.Conditions[0].Status = corev1.ConditionFalse
	r.obj.Status.Conditions[0].Status = corev1.ConditionFalse
	if diff := cmp.Diff(stored, mustGet(t, w, "a")); diff != "" {
		t.Errorf("stored pod changed through a status request or reply (-want +got):\n%s", diff)
	}
	if h := w.s.History(); h[0].Pod.Status.Phase != corev1.PodPending || h[1].Pod.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("history changed: %+v / %+v", h[0].Pod.Status, h[1].Pod.Status)
	}
}

// TestShortenedAndForcedDelete: a shorter grace that has already run out
// becomes 1 s from now; a forced delete (grace 0) of a pod being deleted
// marks it with grace 0 and then removes it, so a watcher sees the grace
// cut to zero in both events.
func TestShortenedAndForcedDelete(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	mustCreate(t, w, newPod("a", "n1"))
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(120))); err != nil {
		t.Fatal(err)
	}
	advance(t, w, 10*time.Second)
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(5))); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, w, "a")
	now := kernel.DefaultEpoch.Add(10 * time.Second)
	if !got.DeletionTimestamp.Time.Equal(now) || *got.DeletionGracePeriodSeconds != 1 {
		t.Errorf("grace 5 asked 10 s after a grace-120 delete: marked %v with grace %d, want %v with grace 1",
			got.DeletionTimestamp, *got.DeletionGracePeriodSeconds, now)
	}
	if err := w.u.DeletePodGracefully("default", "a", ptr(int64(0))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.u.GetPod("default", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("after a forced delete: %v, want NotFound", err)
	}
	type write struct {
		Verb  string
		Grace int64
	}
	var writes []write
	for _, r := range w.s.History() {
		g := int64(-1)
		if r.Pod.DeletionGracePeriodSeconds != nil {
			g = *r.Pod.DeletionGracePeriodSeconds
		}
		writes = append(writes, write{r.Verb, g})
	}
	want := []write{{"create", -1}, {"gracefulDelete", 120}, {"gracefulDelete", 1}, {"gracefulDelete", 0}, {"delete", 0}}
	if diff := cmp.Diff(want, writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}
