package apiserver_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// TestObjectsNodeAuthorization: a node reads only the ConfigMaps and
// Secrets its own pods reference; a referenced one that does not exist is
// NotFound.
func TestObjectsNodeAuthorization(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	defer k.Close()
	s := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Node: "node-a"})
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "default"} }
	for _, name := range []string{"vol", "env", "theirs", "unreferenced"} {
		s.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: meta(name), Data: map[string]string{"k": name}})
	}
	s.User().PutSecret(&corev1.Secret{ObjectMeta: meta("projected"), Data: map[string][]byte{"k": []byte("x")}})
	mine := &corev1.Pod{ObjectMeta: meta("mine"), Spec: corev1.PodSpec{NodeName: "node-a",
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol"}}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected"}}}}}}},
		},
		Containers: []corev1.Container{{Name: "c", Image: "busybox", EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}}}}
	theirs := &corev1.Pod{ObjectMeta: meta("theirs"), Spec: corev1.PodSpec{NodeName: "node-b",
		Volumes: []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "theirs"}}}}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	for _, p := range []*corev1.Pod{mine, theirs} {
		if _, err := s.User().CreatePod(p); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	verdict := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case apierrors.IsForbidden(err):
			return "forbidden"
		case apierrors.IsNotFound(err):
			return "not found"
		}
		return err.Error()
	}
	k.Tasks().Go("agent", func() {
		ctx := context.Background()
		for _, name := range []string{"vol", "env", "theirs", "unreferenced", "missing"} {
			_, err := s.GetConfigMap(ctx, "default", name)
			got["configmap "+name] = verdict(err)
		}
		_, err := s.GetSecret(ctx, "default", "projected")
		got["secret projected"] = verdict(err)
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"configmap vol": "ok", "configmap env": "ok", "configmap theirs": "forbidden",
		"configmap unreferenced": "forbidden", "configmap missing": "not found", "secret projected": "ok"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
