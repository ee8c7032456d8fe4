package podsource_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

var seenAt = time.Date(2026, 1, 1, 0, 0, 0, 123, time.UTC)

func TestParseManifestRejects(t *testing.T) {
	tests := []struct {
		name, manifest, wantErr string
	}{
		{"bad yaml", "kind: Pod\n  apiVersion: v1\n", "parse pod manifest: "},
		{"unknown field", strings.Replace(goodManifest, "image: nginx", "image: nginx\n    imagePulPolicy: Always", 1), `unknown field "imagePulPolicy"`},
		{"duplicate field", strings.Replace(goodManifest, "kind: Pod", "kind: Pod\nkind: Pod", 1), "parse pod manifest: "},
		{"wrong kind", strings.Replace(goodManifest, "kind: Pod", "kind: Service", 1), `invalid pod manifest: kind is "Service", want "Pod"`},
		{"wrong apiVersion", strings.Replace(goodManifest, "apiVersion: v1", "apiVersion: apps/v1", 1), `invalid pod manifest: apiVersion is "apps/v1", want "v1"`},
		{"no name", strings.Replace(goodManifest, "  name: web\n", "", 1), "invalid pod manifest: metadata.name is required"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n", "invalid pod manifest: spec.containers: at least one container is required"},
		{"container without name or image", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - {}\n",
			"invalid pod manifest: spec.containers[0].name is required; spec.containers[0].image is required"},
		{"duplicate names", strings.Replace(goodManifest, "name: sidecar", "name: nginx", 1),
			`invalid pod manifest: spec.containers[1].name: duplicate container name "nginx"`},
		{"init container named like a container", strings.Replace(goodManifest, "spec:\n", "spec:\n  initContainers:\n  - name: sidecar\n    image: busybox\n", 1),
			`invalid pod manifest: spec.containers[1].name: duplicate container name "sidecar"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := podsource.ParseManifest([]byte(tt.manifest), "node-1", seenAt)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseManifest = %v, %v; want an error containing %q", pod, err, tt.wantErr)
			}
		})
	}
}

func TestParseManifestDefaultsAndKeeps(t *testing.T) {
	manifest := `{"apiVersion": "v1", "kind": "Pod",
	 "metadata": {"name": "api", "namespace": "kube-system", "uid": "ignored", "annotations": {"a": "b"}},
	 "spec": {"restartPolicy": "OnFailure", "dnsPolicy": "Default", "terminationGracePeriodSeconds": 5,
	   "initContainers": [{"name": "init", "image": "busybox"}],
	   "containers": [{"name": "c", "image": "img:latest", "imagePullPolicy": "Never"}]}}`
	got, err := podsource.ParseManifest([]byte(manifest), "node-2", seenAt)
	if err != nil {
		t.Fatal(err)
	}
	grace := int64(5)
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "api-node-2", Namespace: "kube-system", UID: got.UID,
			Annotations: map[string]string{
				"a":                              "b",
				podsource.AnnotationConfigSource: "file",
				podsource.AnnotationConfigHash:   string(got.UID),
				podsource.AnnotationConfigSeen:   "2026-01-01T00:00:00.000000123Z",
			},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-2", RestartPolicy: corev1.RestartPolicyOnFailure, DNSPolicy: corev1.DNSDefault,
			TerminationGracePeriodSeconds: &grace,
			InitContainers:                []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullAlways}},
			Containers:                    []corev1.Container{{Name: "c", Image: "img:latest", ImagePullPolicy: corev1.PullNever}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	if got.UID == "ignored" || !hex32.MatchString(string(got.UID)) {
		t.Errorf("UID %q: want the 32-hex-digit manifest hash", got.UID)
	}
}

func TestManifestUID(t *testing.T) {
	uid := func(manifest, node string, seen time.Time) types.UID {
		t.Helper()
		p, err := podsource.ParseManifest([]byte(manifest), node, seen)
		if err != nil {
			t.Fatal(err)
		}
		return p.UID
	}
	base := uid(goodManifest, "node-1", seenAt)
	asJSON := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},
		"spec":{"containers":[{"name":"nginx","image":"nginx"},{"name":"sidecar","image":"busybox:1.36"}]}}`
	cases := []struct {
		name string
		got  types.UID
		same bool
	}{
		{"again, later", uid(goodManifest, "node-1", seenAt.Add(time.Hour)), true},
		{"reformatted with comments", uid("# hi\n"+goodManifest+"\n", "node-1", seenAt), true},
		{"the same pod in JSON", uid(asJSON, "node-1", seenAt), true},
		{"another node", uid(goodManifest, "node-2", seenAt), false},
		{"an edit", uid(strings.Replace(goodManifest, "app: web", "app: web2", 1), "node-1", seenAt), false},
	}
	for _, c := range cases {
		if (c.got == base) != c.same {
			t.Errorf("%s: UID %s vs %s, want same=%v", c.name, c.got, base, c.same)
		}
	}
}

func TestMirrorPods(t *testing.T) {
	static, err := podsource.ParseManifest([]byte(goodManifest), "node-1", seenAt)
	if err != nil {
		t.Fatal(err)
	}
	static.Status.Phase = corev1.PodRunning
	static.ResourceVersion = "9"
	mirror := podsource.MirrorPodFor(static)

	wantAnn := map[string]string{}
	for k, v := range static.Annotations {
		wantAnn[k] = v
	}
	wantAnn[podsource.AnnotationConfigMirror] = string(static.UID)
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: static.Name, Namespace: static.Namespace, Labels: static.Labels, Annotations: wantAnn,
		},
		Spec: static.Spec,
	}
	if diff := cmp.Diff(want, mirror); diff != "" {
		t.Errorf("mirror pod (-want +got):\n%s", diff)
	}
	mirror.Labels["changed"] = "x"
	mirror.Spec.Containers[0].Image = "changed"
	if static.Labels["changed"] != "" || static.Spec.Containers[0].Image == "changed" {
		t.Error("the mirror pod shares memory with the static pod")
	}

	// As the API source delivers it, through a merger.
	w := newWorld(t, podsource.SourceAPI)
	fromAPI := mirror.DeepCopy()
	fromAPI.UID = "api-uid"
	w.m.Set(podsource.SourceAPI, []*corev1.Pod{fromAPI})
	us := w.updates()
	if len(us) != 1 {
		t.Fatalf("updates %v", summarize(us))
	}
	got := us[0].Pods[0]
	if !podutil.IsMirrorPod(got) || podutil.IsStaticPod(got) {
		t.Errorf("mirror from the API: IsMirrorPod %v, IsStaticPod %v; want true, false", podutil.IsMirrorPod(got), podutil.IsStaticPod(got))
	}
	if uid, ok := podsource.StaticPodUIDFromMirror(got); !ok || uid != static.UID {
		t.Errorf("StaticPodUIDFromMirror = %q, %v; want %q, true", uid, ok, static.UID)
	}
	if uid, ok := podsource.StaticPodUIDFromMirror(static); ok {
		t.Errorf("StaticPodUIDFromMirror(static pod) = %q, true; want false", uid)
	}
	if podutil.IsStaticPod(apiPod("plain")) || podutil.IsMirrorPod(apiPod("plain")) {
		t.Error("a plain API pod is static or mirror")
	}
}
