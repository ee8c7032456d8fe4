package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// The image events say what the kubelet v1.37.2 says
// (pkg/kubelet/images/image_manager.go, kubelet.go's syncPod): a present
// image's Pulled names the image as the spec writes it and says the pod
// can use it; Pulling and Pulled name the spec's image, not the one with
// the default tag the runtime gets; a failed pull's text is the runtime
// status's message without gRPC's "rpc error: code = Unknown desc = "; a
// pod whose pull secret is missing gets FailedToRetrieveImagePullSecret
// when its pull fails.
func TestFidelityImageEvents(t *testing.T) {
	const private = "registry.example/private:1"
	h, c := imageHarness(t, 21, -1, fakecri.Image{Ref: private, Size: 1 << 20, Username: "alice", Password: "s3cret"})
	mustCreate(t, h, NewPod("present", h.NodeName, Image("app", "busybox", corev1.PullIfNotPresent)))
	mustCreate(t, h, NewPod("always", h.NodeName, Image("app", "busybox", corev1.PullAlways)))
	mustCreate(t, h, NewPod("private", h.NodeName, Image("app", private, corev1.PullIfNotPresent), PullSecrets("nosuch")))
	checkUntil(t, h, c, "present and always Running, private waiting on its pull", 2*time.Minute, func() bool {
		r, _ := waitingReason(h, "private")
		return PodIs(h, "default", "present", corev1.PodRunning, true) && PodIs(h, "default", "always", corev1.PodRunning, true) &&
			(r == "ErrImagePull" || r == "ImagePullBackOff")
	})
	reasons := func(name string, keep ...string) []string {
		var out []string
		for _, e := range eventsAbout(h, "default", name) {
			for _, k := range keep {
				if strings.Contains(e, " "+k+": ") {
					out = append(out, e)
				}
			}
		}
		return out
	}
	if diff := cmp.Diff([]string{
		`Normal Pulled: Container image "busybox" already present on machine and can be accessed by the pod`,
	}, reasons("present", "Pulled", "Pulling")); diff != "" {
		t.Errorf("present's image events (-want +got):\n%s", diff)
	}
	got := reasons("always", "Pulled", "Pulling")
	if len(got) != 2 || got[0] != `Normal Pulling: Pulling image "busybox"` || !strings.HasPrefix(got[1], `Normal Pulled: Successfully pulled image "busybox" in `) {
		t.Errorf("always's image events %q; want Pulling and Pulled naming \"busybox\" as the spec does", got)
	}
	unauthorized := `failed to pull and unpack image "registry.example/private:1": failed to resolve reference "registry.example/private:1": `
	missing := `Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (nosuch); attempting to pull the image may not succeed.`
	ev := reasons("private", "Failed", "FailedToRetrieveImagePullSecret")
	if !hasEvent(ev, `Warning Failed: Failed to pull image "registry.example/private:1": `+unauthorized, "401 Unauthorized") {
		t.Errorf("private: no Failed event with the runtime's message alone; events:\n%s", strings.Join(ev, "\n"))
	}
	if !hasEvent(ev, missing, "") {
		t.Errorf("private: no %q; events:\n%s", missing, strings.Join(ev, "\n"))
	}
	p, _ := APIPod(h, "default", "private")
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason == "ErrImagePull" && !strings.HasPrefix(w.Message, unauthorized) {
			t.Errorf("private: ErrImagePull message %q; want it to start with %q", w.Message, unauthorized)
		}
	}
}

// An image the agent pulled with one pod's pull secret is not another
// pod's for the asking: a pod without the credentials pulls it itself and,
// failing, waits in ErrImagePull/ImagePullBackOff instead of running the
// image on the node (the kubelet's KubeletEnsureSecretPulledImages, shown
// by diff-kubelet's image-pull-secret beside image-pull-secret-missing);
// a pod holding the same secret runs it without pulling.
func TestFidelityPrivateImageStaysPrivate(t *testing.T) {
	const private = "registry.example/private:1"
	h, c := imageHarness(t, 22, -1, fakecri.Image{Ref: private, Size: 1 << 20, Username: "diff", Password: "s3cret"})
	h.API.User().PutSecret(RegistrySecret("regcred", "registry.example", "diff", "s3cret"))
	owner := mustCreate(t, h, NewPod("owner", h.NodeName, Image("app", private, corev1.PullIfNotPresent), PullSecrets("regcred")))
	checkUntil(t, h, c, "owner Running", time.Minute, func() bool { return PodIs(h, "default", "owner", corev1.PodRunning, true) })
	other := mustCreate(t, h, NewPod("other", h.NodeName, Image("app", private, corev1.PullIfNotPresent), PullSecrets("nosuch")))
	sibling := mustCreate(t, h, NewPod("sibling", h.NodeName, Image("app", private, corev1.PullIfNotPresent), PullSecrets("regcred")))
	checkFor(t, h, c, 45*time.Second)
	if !PodIs(h, "default", "sibling", corev1.PodRunning, true) {
		t.Errorf("sibling (holding the secret the image was pulled with) is not Running")
	}
	if r, _ := waitingReason(h, "other"); r != "ErrImagePull" && r != "ImagePullBackOff" {
		t.Errorf("other (without the credentials) waits %q; want ErrImagePull or ImagePullBackOff", r)
	}
	if n := len(pullsOf(h, owner.UID)); n != 1 {
		t.Errorf("owner pulled %d times; want 1", n)
	}
	if n := len(pullsOf(h, sibling.UID)); n != 0 {
		t.Errorf("sibling pulled %d times; want 0 (the image is its to use)", n)
	}
	if n := len(pullsOf(h, other.UID)); n < 2 {
		t.Errorf("other pulled %d times in 45 s; want at least 2 (a pull, then a retry after the back-off)", n)
	}
}
