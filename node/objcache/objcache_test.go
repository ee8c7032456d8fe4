package objcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/objcache"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "default"} }

// TestPodReferencesWatchedOnceAndReleased: a pod's volume and env
// references (duplicates, init containers included) open one watch per
// object, shared with a second pod; reads wait for the first report;
// an unwatched object misses at once; the watches close with the last
// pod.
func TestPodReferencesWatchedOnceAndReleased(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 3})
	t.Cleanup(k.Close)
	api := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Rand: k.Rand(), Log: k.Logger()})
	api.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"a": "1"}})
	api.User().PutSecret(&corev1.Secret{ObjectMeta: meta("sec"), Data: map[string][]byte{"pw": []byte("x")}})
	c := objcache.New(k.Deps().Core, api)
	changes := 0
	c.OnChange(func() { changes++ })
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	a := &corev1.Pod{ObjectMeta: meta("a"), Spec: corev1.PodSpec{
		Volumes:        []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg")}}}},
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("sec")}}}}},
		Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("cfg"), Key: "a"}}}}}},
	}}
	b := &corev1.Pod{ObjectMeta: meta("b"), Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cfg")}}}}}}}
	b.UID, a.UID = "uid-b", "uid-a"
	ctx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.Acquire(a)
	c.Acquire(b)
	c.Start(ctx)

	var got []string
	done := false
	k.Go("reader", func() {
		cm, ok := c.WaitConfigMap(ctx, "default", "cfg")
		got = append(got, "cfg", cm.Data["a"], map[bool]string{true: "hit", false: "miss"}[ok])
		sec, ok := c.WaitSecret(ctx, "default", "sec")
		got = append(got, "sec", string(sec.Data["pw"]), map[bool]string{true: "hit", false: "miss"}[ok])
		_, ok = c.WaitConfigMap(ctx, "default", "other")
		got = append(got, "other", map[bool]string{true: "hit", false: "miss"}[ok])
		done = true
	})
	if err := k.RunUntil(func() bool { return done }, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"cfg", "1", "hit", "sec", "x", "hit", "other", "miss"}, got); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
	if n := api.User().OpenObjectWatches(); n != 2 {
		t.Errorf("%d watches open, want 2 (one per object)", n)
	}
	before := changes
	api.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"a": "2"}})
	_ = k.RunFor(time.Second)
	if cm, ok := c.ConfigMap("default", "cfg"); !ok || cm.Data["a"] != "2" || changes == before {
		t.Errorf("after an update: %v %v, %d change notifications; want a=2 and a notification", cm, ok, changes-before)
	}
	c.Release(a.UID)
	_ = k.RunFor(time.Second)
	if n := api.User().OpenObjectWatches(); n != 1 {
		t.Errorf("%d watches open after releasing pod a, want 1 (b's configMap)", n)
	}
	c.Release(b.UID)
	_ = k.RunFor(time.Second)
	if n := api.User().OpenObjectWatches(); n != 0 {
		t.Errorf("%d watches open after releasing both pods", n)
	}
}
