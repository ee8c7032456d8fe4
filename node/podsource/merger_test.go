package podsource_test

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podsource"
)

func TestSetDiffsSnapshots(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI)
	a, b, c := apiPod("a"), apiPod("b"), apiPod("c")

	steps := []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{
		{"first list", []*corev1.Pod{b, a}, []string{"ADD api ns/a,ns/b"}},
		{"same again", []*corev1.Pod{a, b}, nil},
		{"resource version only", func() []*corev1.Pod {
			a2 := a.DeepCopy()
			a2.ResourceVersion = "7"
			a2.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
			return []*corev1.Pod{a2, b}
		}(), nil},
		{"label, status, new pod", func() []*corev1.Pod {
			a2 := a.DeepCopy()
			a2.Labels = map[string]string{"l": "1"}
			b2 := b.DeepCopy()
			b2.Status.Phase = corev1.PodRunning
			return []*corev1.Pod{c, b2, a2}
		}(), []string{"ADD api ns/c", "UPDATE api ns/a", "RECONCILE api ns/b"}},
		{"deletion requested, one gone, annotation changed", func() []*corev1.Pod {
			a2 := a.DeepCopy()
			a2.Labels = map[string]string{"l": "1"}
			now := metav1.Unix(100, 0)
			a2.DeletionTimestamp = &now
			c2 := c.DeepCopy()
			c2.Annotations = map[string]string{"x": "y"}
			return []*corev1.Pod{a2, c2}
		}(), []string{"REMOVE api ns/b", "UPDATE api ns/c", "DELETE api ns/a"}},
		{"grace shrinks on a deleting pod", func() []*corev1.Pod {
			a2 := a.DeepCopy()
			a2.Labels = map[string]string{"l": "1"}
			now := metav1.Unix(100, 0)
			a2.DeletionTimestamp = &now
			grace := int64(0)
			a2.DeletionGracePeriodSeconds = &grace
			c2 := c.DeepCopy()
			c2.Annotations = map[string]string{"x": "y"}
			return []*corev1.Pod{a2, c2}
		}(), []string{"DELETE api ns/a"}},
		{"a deleting pod relabelled, grace unchanged", func() []*corev1.Pod {
			a2 := a.DeepCopy()
			a2.Labels = map[string]string{"l": "2"}
			now := metav1.Unix(100, 0)
			a2.DeletionTimestamp = &now
			grace := int64(0)
			a2.DeletionGracePeriodSeconds = &grace
			c2 := c.DeepCopy()
			c2.Annotations = map[string]string{"x": "y"}
			return []*corev1.Pod{a2, c2}
		}(), []string{"UPDATE api ns/a"}},
		{"all gone", nil, []string{"REMOVE api ns/a,ns/c"}},
	}
	for _, st := range steps {
		w.m.Set(podsource.SourceAPI, st.pods)
		if diff := cmp.Diff(st.want, w.summary()); diff != "" {
			t.Errorf("%s: updates (-want +got):\n%s", st.name, diff)
		}
	}
}

func TestSetSortsByNamespaceAndName(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI)
	var pods []*corev1.Pod
	for _, nn := range [][2]string{{"z", "a"}, {"a", "z"}, {"a", "b"}, {"m", "m"}} {
		p := apiPod(nn[1])
		p.Namespace = nn[0]
		p.UID = types.UID(nn[0] + "/" + nn[1])
		pods = append(pods, p)
	}
	w.m.Set(podsource.SourceAPI, pods)
	if diff := cmp.Diff([]string{"ADD api a/b,a/z,m/m,z/a"}, w.summary()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestApplyWatchEvents(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI)
	a := apiPod("a")
	w.m.Set(podsource.SourceAPI, nil)
	w.summary()

	running := a.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	relabelled := running.DeepCopy()
	relabelled.Labels = map[string]string{"l": "1"}
	deleting := relabelled.DeepCopy()
	now := metav1.Unix(100, 0)
	deleting.DeletionTimestamp = &now

	steps := []struct {
		event deps.PodEventType
		pod   *corev1.Pod
		want  []string
	}{
		{deps.PodAdded, a, []string{"ADD api ns/a"}},
		{deps.PodAdded, a, nil}, // a re-sent add of a known pod changes nothing
		{deps.PodModified, running, []string{"RECONCILE api ns/a"}},
		{deps.PodModified, relabelled, []string{"UPDATE api ns/a"}},
		{deps.PodModified, deleting, []string{"DELETE api ns/a"}},
		{deps.PodDeleted, deleting, []string{"REMOVE api ns/a"}},
		{deps.PodDeleted, deleting, nil}, // unknown by now
		{deps.PodModified, apiPod("b"), []string{"ADD api ns/b"}},
		{"BOOKMARK", apiPod("c"), nil},
	}
	for i, st := range steps {
		w.m.Apply(podsource.SourceAPI, st.event, st.pod)
		if diff := cmp.Diff(st.want, w.summary()); diff != "" {
			t.Errorf("step %d (%s): updates (-want +got):\n%s", i, st.event, diff)
		}
	}
}

func TestSeenOnlyAfterCompleteSnapshots(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI, podsource.SourceFile)
	type seen struct{ API, File, All bool }
	check := func(when string, want seen) {
		t.Helper()
		got := seen{w.m.Seen(podsource.SourceAPI), w.m.Seen(podsource.SourceFile), w.m.AllSeen()}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", when, diff)
		}
	}
	check("start", seen{})
	w.m.Apply(podsource.SourceFile, deps.PodAdded, apiPod("a"))
	check("after a single event", seen{})
	w.m.Set(podsource.SourceAPI, []*corev1.Pod{apiPod("b")})
	check("after the API list", seen{API: true})
	w.m.Set(podsource.SourceFile, nil)
	check("after an empty file scan", seen{API: true, File: true, All: true})
	if w.m.Seen("other") {
		t.Error("Seen of an unregistered source is true")
	}
}

func TestUnregisteredSourcePanics(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI)
	defer func() {
		if recover() == nil {
			t.Error("Set on an unregistered source did not panic")
		}
	}()
	w.m.Set("http", nil)
}

func TestPodsAreCopiedAndStampedWithSource(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI)
	a := apiPod("a")
	a.Annotations = map[string]string{podsource.AnnotationConfigSource: "file", "k": "v"}
	w.m.Set(podsource.SourceAPI, []*corev1.Pod{a})
	us := w.updates()
	if len(us) != 1 || len(us[0].Pods) != 1 {
		t.Fatalf("updates: %v", summarize(us))
	}
	got := us[0].Pods[0]
	// The first-seen time, as the kubelet stamps every pod it receives.
	firstSeen := w.d.Clock.Now().Format(time.RFC3339Nano)
	want := map[string]string{podsource.AnnotationConfigSource: "api", podsource.AnnotationConfigSeen: firstSeen, "k": "v"}
	if diff := cmp.Diff(want, got.Annotations); diff != "" {
		t.Errorf("handed-out annotations (-want +got):\n%s", diff)
	}
	if a.Annotations[podsource.AnnotationConfigSource] != "file" {
		t.Error("Set modified its input")
	}
	// Mutating what was handed out or what was passed in changes nothing
	// the merger holds.
	got.Labels = map[string]string{"mutated": "yes"}
	got.Spec.Containers[0].Image = "mutated"
	a.Spec.Containers[0].Image = "mutated-input"
	w.run(time.Minute)
	w.m.Set(podsource.SourceAPI, []*corev1.Pod{apiPod("a")})
	us = w.updates()
	if got := summarize(us); !cmp.Equal([]string{"UPDATE api ns/a"}, got) {
		// Only the annotation "k" differs from the first version.
		t.Errorf("updates %v, want [UPDATE api ns/a]", got)
	} else if seen := us[0].Pods[0].Annotations[podsource.AnnotationConfigSeen]; seen != firstSeen {
		t.Errorf("an update a minute later: first seen %q, want the first sighting's %q", seen, firstSeen)
	}
	w.m.Set(podsource.SourceAPI, []*corev1.Pod{apiPod("a")})
	if diff := cmp.Diff([]string(nil), w.summary()); diff != "" {
		t.Errorf("second identical snapshot (-want +got):\n%s", diff)
	}
	// Two Updates of the same pod do not share memory.
	w.m.Apply(podsource.SourceAPI, deps.PodDeleted, apiPod("a"))
	w.m.Apply(podsource.SourceAPI, deps.PodAdded, apiPod("a"))
	us = w.updates()
	if len(us) != 2 || us[0].Pods[0] == us[1].Pods[0] {
		t.Errorf("updates %v share a pod", summarize(us))
	}
}

func TestSeenAnnotationIsNotAChange(t *testing.T) {
	w := newWorld(t, podsource.SourceFile)
	p := apiPod("s")
	p.Annotations = map[string]string{podsource.AnnotationConfigSeen: "2026-01-01T00:00:00Z"}
	w.m.Set(podsource.SourceFile, []*corev1.Pod{p})
	w.summary()
	p2 := p.DeepCopy()
	p2.Annotations[podsource.AnnotationConfigSeen] = "2026-01-01T00:00:20Z"
	w.m.Set(podsource.SourceFile, []*corev1.Pod{p2})
	w.m.Apply(podsource.SourceFile, deps.PodModified, p2)
	p3 := p.DeepCopy()
	delete(p3.Annotations, podsource.AnnotationConfigSeen)
	w.m.Set(podsource.SourceFile, []*corev1.Pod{p3})
	if diff := cmp.Diff([]string(nil), w.summary()); diff != "" {
		t.Errorf("a different seen time made updates (-want +got):\n%s", diff)
	}
}

// TestApplyIsConstantTime checks that one watch event costs the same with
// 10,000 pods as with 100: a merger that rebuilt, copied or scanned the
// snapshot per event would allocate in proportion to the pod count.
func TestApplyIsConstantTime(t *testing.T) {
	const events = 200
	cost := func(n int) (allocs, bytes uint64) {
		w := newWorld(t, podsource.SourceAPI)
		pods := make([]*corev1.Pod, n)
		for i := range pods {
			pods[i] = apiPod("p" + strconv.Itoa(i))
		}
		w.m.Set(podsource.SourceAPI, pods)
		w.updates()
		target := pods[n/2].DeepCopy()
		phases := []corev1.PodPhase{corev1.PodRunning, corev1.PodPending}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range events {
			target.Status.Phase = phases[i%2]
			w.m.Apply(podsource.SourceAPI, deps.PodModified, target)
			if _, ok := w.out.TryGet(); !ok {
				t.Fatal("no update for a status change")
			}
		}
		runtime.ReadMemStats(&after)
		return (after.Mallocs - before.Mallocs) / events, (after.TotalAlloc - before.TotalAlloc) / events
	}
	smallAllocs, smallBytes := cost(100)
	largeAllocs, largeBytes := cost(10_000)
	t.Logf("per event: 100 pods %d allocs %d B; 10,000 pods %d allocs %d B", smallAllocs, smallBytes, largeAllocs, largeBytes)
	if largeAllocs > smallAllocs+smallAllocs/4+2 || largeBytes > smallBytes+smallBytes/4+1024 {
		t.Errorf("Apply costs %d allocs / %d B with 10,000 pods but %d / %d B with 100: not O(1)",
			largeAllocs, largeBytes, smallAllocs, smallBytes)
	}
}

func BenchmarkApply10000Pods(b *testing.B) {
	w := newWorld(b, podsource.SourceAPI)
	pods := make([]*corev1.Pod, 10_000)
	for i := range pods {
		pods[i] = apiPod("p" + strconv.Itoa(i))
	}
	w.m.Set(podsource.SourceAPI, pods)
	w.updates()
	phases := []corev1.PodPhase{corev1.PodRunning, corev1.PodPending}
	for i := 0; b.Loop(); i++ {
		p := pods[i%len(pods)]
		p.Status.Phase = phases[(i/len(pods))%2]
		w.m.Apply(podsource.SourceAPI, deps.PodModified, p)
		w.out.TryGet()
	}
}

func TestMirrorPodsFromTheAPISource(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI, podsource.SourceFile)
	mirror := apiPod("etcd")
	mirror.Annotations = map[string]string{podsource.AnnotationConfigMirror: "hash1"}
	w.m.Set(podsource.SourceAPI, []*corev1.Pod{apiPod("a"), mirror})
	static := apiPod("static")
	w.m.Set(podsource.SourceFile, []*corev1.Pod{static})
	got := map[string]string{}
	for name, p := range w.m.MirrorPods() {
		got[name] = p.Annotations[podsource.AnnotationConfigMirror]
	}
	if diff := cmp.Diff(map[string]string{"ns/etcd": "hash1"}, got); diff != "" {
		t.Errorf("mirror pods (-want +got):\n%s", diff)
	}
	w.m.Apply(podsource.SourceAPI, deps.PodDeleted, mirror)
	if got := w.m.MirrorPods(); len(got) != 0 {
		t.Errorf("mirror pods after the mirror's deletion: %v, want none", got)
	}
}

func TestHas(t *testing.T) {
	w := newWorld(t, podsource.SourceAPI, podsource.SourceFile)
	a := apiPod("a")
	w.m.Set(podsource.SourceFile, []*corev1.Pod{a})
	if !w.m.Has(podsource.SourceFile, a.UID) || w.m.Has(podsource.SourceAPI, a.UID) || w.m.Has("nope", a.UID) {
		t.Errorf("Has: file %v, api %v, unknown source %v; want true, false, false",
			w.m.Has(podsource.SourceFile, a.UID), w.m.Has(podsource.SourceAPI, a.UID), w.m.Has("nope", a.UID))
	}
}
