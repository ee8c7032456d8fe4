package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

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
