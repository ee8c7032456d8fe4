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

// TestNodeReadsOnlyReferencedConfig: under Node authorization the agent
// reads a configMap or secret only when a pod bound to its node refers to
// it (a referenced one that does not exist is NotFound); the services of
// every namespace are listable.
func TestNodeReadsOnlyReferencedConfig(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	defer k.Close()
	s := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Node: "node-a"})
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cm-env")}}},
			Env: []corev1.EnvVar{
				{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sec"), Key: "k"}}},
				{Name: "M", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("cm-missing"), Key: "k"}}},
			}}}}}
	theirs := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-b", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("their-sec")}}}}}}}
	for _, p := range []*corev1.Pod{mine, theirs} {
		if _, err := s.User().CreatePod(p); err != nil {
			t.Fatal(err)
		}
	}
	u := s.User()
	u.PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-env"}, Data: map[string]string{"a": "1"}})
	u.PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unreferenced"}})
	u.PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}})
	u.PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "their-sec"}})
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "b"}})
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "a"}})
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}})

	results := map[string]error{}
	var svcNames []string
	k.Tasks().Go("agent", func() {
		ctx := context.Background()
		_, results["referenced configMap"] = s.GetConfigMap(ctx, "default", "cm-env")
		_, results["referenced secret"] = s.GetSecret(ctx, "default", "sec")
		_, results["referenced missing configMap"] = s.GetConfigMap(ctx, "default", "cm-missing")
		_, results["unreferenced configMap"] = s.GetConfigMap(ctx, "default", "unreferenced")
		_, results["other node's secret"] = s.GetSecret(ctx, "default", "their-sec")
		svcs, _, err := s.ListServices(ctx)
		results["list services"] = err
		for _, svc := range svcs {
			svcNames = append(svcNames, svc.Namespace+"/"+svc.Name)
		}
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	for what, check := range map[string]func(error) bool{
		"referenced configMap":         func(err error) bool { return err == nil },
		"referenced secret":            func(err error) bool { return err == nil },
		"list services":                func(err error) bool { return err == nil },
		"referenced missing configMap": apierrors.IsNotFound,
		"unreferenced configMap":       apierrors.IsForbidden,
		"other node's secret":          apierrors.IsForbidden,
	} {
		if !check(results[what]) {
			t.Errorf("%s: unexpected result %v", what, results[what])
		}
	}
	if d := cmp.Diff([]string{"default/kubernetes", "other/a", "other/b"}, svcNames); d != "" {
		t.Errorf("services of all namespaces (-want +got):\n%s", d)
	}
}
