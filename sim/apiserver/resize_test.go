package apiserver_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

func requirements(req, lim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}}
	if lim != "" {
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim)}
	}
	return r
}

// TestResizePod: pods/resize changes only the named containers'
// resources and bumps the generation; it refuses a QoS class change, an
// unknown container and a resource other than cpu and memory.
func TestResizePod(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	in := newPod("a", "n1")
	in.Spec.Containers[0].Resources = requirements("100m", "200m")
	p := mustCreate(t, w, in)[0]
	var writes []string
	w.s.OnWrite(func(r apiserver.Record) { writes = append(writes, r.Verb) })

	got, err := w.u.ResizePod("default", "a", map[string]corev1.ResourceRequirements{"app": requirements("300m", "400m")})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "300m" || got.Generation != p.Generation+1 ||
		got.Spec.Containers[0].Image != p.Spec.Containers[0].Image {
		t.Errorf("after the resize: requests %v, generation %d (was %d)", got.Spec.Containers[0].Resources.Requests, got.Generation, p.Generation)
	}
	if len(writes) != 1 || writes[0] != apiserver.VerbResize {
		t.Errorf("writes recorded: %v", writes)
	}
	storage := requirements("300m", "400m")
	storage.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
	for name, r := range map[string]map[string]corev1.ResourceRequirements{
		"QoS change (Burstable → BestEffort)": {"app": {}},
		"unknown container":                   {"nope": requirements("1", "")},
		"ephemeral-storage":                   {"app": storage},
	} {
		if _, err := w.u.ResizePod("default", "a", r); !apierrors.IsInvalid(err) {
			t.Errorf("%s: err %v, want Invalid", name, err)
		}
	}
}

// TestResizeInitContainerNeedsTheDeclaredFeature: as the real apiserver
// (v1.37, NodeDeclaredFeatures), a resize of a non-sidecar init container
// is refused (Forbidden, naming the feature and the node) when the pod's
// node does not declare InPlacePodVerticalScalingInitContainers, and
// accepted when it does; a sidecar's resize needs no declared feature.
func TestResizeInitContainerNeedsTheDeclaredFeature(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name      string
		declared  []string
		sidecar   bool
		forbidden bool
	}{
		{"undeclared", nil, false, true},
		{"declared", []string{"InPlacePodVerticalScalingInitContainers"}, false, false},
		{"sidecar, undeclared", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, apiserver.Config{}, false)
			call(t, w, func(ctx context.Context) error {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
				n.Status.DeclaredFeatures = tc.declared
				n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
				_, err := w.s.CreateNode(ctx, n)
				return err
			})
			in := newPod("a", "n1")
			in.Spec.Containers[0].Resources = requirements("100m", "200m")
			in.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:v1", Resources: requirements("100m", "200m")}}
			if tc.sidecar {
				in.Spec.InitContainers[0].RestartPolicy = &always
			}
			mustCreate(t, w, in)
			_, err := w.u.ResizePod("default", "a", map[string]corev1.ResourceRequirements{"init": requirements("300m", "400m")})
			switch {
			case tc.forbidden && !apierrors.IsForbidden(err):
				t.Fatalf("err %v, want Forbidden", err)
			case tc.forbidden:
				want := `pods "a" is forbidden: pod update requires features InPlacePodVerticalScalingInitContainers which are not available on node "n1"`
				if diff := cmp.Diff(want, err.Error()); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
			case err != nil:
				t.Fatalf("err %v, want the resize accepted", err)
			}
		})
	}
}
