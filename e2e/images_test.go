//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// registry is the private registry start-registry.sh runs: its address
// and the one user its htpasswd knows.
type registry struct{ addr, user, password string }

func (e *env) registry(t *testing.T) registry {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(e.dir, "registry", name))
		if err != nil {
			t.Fatalf("the e2e registry is not running (hack/e2e/start-registry.sh): %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	return registry{read("addr"), read("user"), read("password")}
}

// pullSecret creates a kubernetes.io/dockerconfigjson secret for the
// registry with user and password.
func (e *env) pullSecret(t *testing.T, r registry, user, password string) string {
	t.Helper()
	name := "regcred-" + rand.String(5)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(
			`{"auths":{%q:{"username":%q,"password":%q}}}`, r.addr, user, password))},
	}
	if _, err := e.admin.CoreV1().Secrets("default").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().Secrets("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// waiting returns the pod's first container's waiting reason and message.
func waiting(p *corev1.Pod) (string, string) {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
		return "", ""
	}
	w := p.Status.ContainerStatuses[0].State.Waiting
	return w.Reason, w.Message
}

// hasEventPrefix reports whether an event starts with prefix.
func hasEventPrefix(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// TestPrivateImagePullsWithSecret: containerd pulls the image from the
// htpasswd-protected registry with the credentials lockstep resolved from
// the pod's imagePullSecrets (a wrong secret listed first is tried and
// fails); the pod runs, and the events say Pulling then Pulled with the
// pull's duration.
func TestPrivateImagePullsWithSecret(t *testing.T) {
	e := setup(t)
	r := e.registry(t)
	image := r.addr + "/private/busybox:e2e"
	wrong := e.pullSecret(t, r, r.user, "not-the-password")
	right := e.pullSecret(t, r, r.user, r.password)
	p := e.pod("private-pull", false, `echo pulled; trap "exit 0" TERM; while :; do sleep 1; done`)
	p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, corev1.PullAlways
	p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: wrong}, {Name: right}}
	p = e.create(t, p)
	t.Cleanup(func() { e.deleteAndWait(t, p, time.Minute) })
	start := time.Now()
	e.waitPod(t, p, 2*time.Minute, "Running", podReady)
	t.Logf("FIGURE private image pulled and pod ready in %v", time.Since(start).Round(time.Millisecond))
	ev := e.events(t, p)
	if !hasEventPrefix(ev, fmt.Sprintf("Pulling: Pulling image %q", image)) ||
		!hasEventPrefix(ev, fmt.Sprintf("Pulled: Successfully pulled image %q in ", image)) {
		t.Errorf("want Pulling and Pulled events; got:\n%s", strings.Join(ev, "\n"))
	}
}

// TestPrivateImageWithoutSecretBacksOff: without imagePullSecrets the
// registry answers 401: the container waits in ErrImagePull, then
// ImagePullBackOff, with Failed and BackOff events.
func TestPrivateImageWithoutSecretBacksOff(t *testing.T) {
	e := setup(t)
	r := e.registry(t)
	image := r.addr + "/private/busybox:e2e"
	p := e.pod("no-secret", false, "sleep 3600")
	p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, corev1.PullAlways
	p = e.create(t, p)
	t.Cleanup(func() { e.deleteAndWait(t, p, time.Minute) })
	seen := map[string]string{}
	e.waitPod(t, p, 90*time.Second, "in ImagePullBackOff after ErrImagePull", func(p *corev1.Pod) bool {
		if r, msg := waiting(p); r != "" {
			seen[r] = msg
		}
		return seen["ImagePullBackOff"] != ""
	})
	if p := e.get(t, p); p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	msg := seen["ImagePullBackOff"]
	// The runtime's error as upstream reports it: the gRPC status's
	// message alone (its code is Unknown), as the kubelet's CRI client
	// strips it.
	pullErr := "failed to pull and unpack image"
	if !strings.HasPrefix(msg, fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", image, pullErr)) || !strings.Contains(msg, "401 Unauthorized") {
		t.Errorf("ImagePullBackOff message %q: want the back-off naming the image and the registry's 401", msg)
	}
	if m, ok := seen["ErrImagePull"]; ok && !strings.HasPrefix(m, pullErr) {
		t.Errorf("ErrImagePull message %q, want it to start with %q", m, pullErr)
	}
	ev := e.events(t, p)
	for _, want := range []string{
		fmt.Sprintf("Failed: Failed to pull image %q: ", image),
		"Failed: Error: ErrImagePull",
		fmt.Sprintf("BackOff: Back-off pulling image %q", image),
	} {
		if !hasEventPrefix(ev, want) {
			t.Errorf("no event %q; got:\n%s", want, strings.Join(ev, "\n"))
		}
	}
	t.Logf("ErrImagePull message seen: %q", seen["ErrImagePull"])
}

// TestNeverPullMissingImage: with imagePullPolicy Never an image the node
// does not have is ErrImageNeverPull with upstream's message and event.
func TestNeverPullMissingImage(t *testing.T) {
	e := setup(t)
	r := e.registry(t)
	image := r.addr + "/private/absent:e2e"
	p := e.pod("never-pull", false, "sleep 3600")
	p.Spec.Containers[0].Image = image // the pod helper's policy is Never
	p = e.create(t, p)
	t.Cleanup(func() { e.deleteAndWait(t, p, time.Minute) })
	want := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
	e.waitPod(t, p, time.Minute, "ErrImageNeverPull", func(p *corev1.Pod) bool {
		r, msg := waiting(p)
		return r == "ErrImageNeverPull" && msg == want
	})
	if ev := e.events(t, p); !hasEventPrefix(ev, "ErrImageNeverPull: "+want) {
		t.Errorf("no ErrImageNeverPull event; got:\n%s", strings.Join(ev, "\n"))
	}
}
