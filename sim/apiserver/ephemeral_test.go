package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

func debug(name, target string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{TargetContainerName: target,
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox"}}
}

func TestUpdateEphemeralContainers(t *testing.T) {
	w := newWorld(t, 1, apiserver.Config{}, false)
	p := mustCreate(t, w, newPod("a", "n1"))[0]
	var writes []string
	w.s.OnWrite(func(r apiserver.Record) { writes = append(writes, r.Verb) })

	// Only the ephemeral containers are taken from the request.
	in := p.DeepCopy()
	in.Spec.EphemeralContainers = []corev1.EphemeralContainer{debug("debugger", "app")}
	in.Spec.Containers[0].Image = "changed"
	got, err := w.u.UpdateEphemeralContainers(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.Containers[0].Image != p.Spec.Containers[0].Image ||
		got.Generation != p.Generation+1 || got.Spec.EphemeralContainers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("after the update: ephemeral %+v, image %q, generation %d", got.Spec.EphemeralContainers, got.Spec.Containers[0].Image, got.Generation)
	}
	if len(writes) != 1 || writes[0] != apiserver.VerbUpdateEphemeralContainers {
		t.Errorf("writes recorded: %v", writes)
	}

	bad := []struct {
		name string
		ecs  []corev1.EphemeralContainer
	}{
		{"removes the existing one", nil},
		{"changes the existing one", []corev1.EphemeralContainer{debug("debugger", "")}},
		{"reuses a container's name", append(got.DeepCopy().Spec.EphemeralContainers, debug("app", ""))},
		{"targets no container", append(got.DeepCopy().Spec.EphemeralContainers, debug("d2", "nope"))},
	}
	for _, b := range bad {
		req := got.DeepCopy()
		req.Spec.EphemeralContainers = b.ecs
		if _, err := w.u.UpdateEphemeralContainers(req); !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", b.name, err)
		}
	}
	stale := got.DeepCopy()
	stale.ResourceVersion = p.ResourceVersion
	stale.Spec.EphemeralContainers = append(stale.Spec.EphemeralContainers, debug("d3", ""))
	if _, err := w.u.UpdateEphemeralContainers(stale); !apierrors.IsConflict(err) {
		t.Errorf("stale resource version: %v, want Conflict", err)
	}
}
