package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// The images of the generated image pods: FlakyImage pulls unless an
// "image-fail" fault makes its registry fail; PrivateImage needs
// PrivateUser's credentials, which the "regcred" secret holds;
// MissingImage is on no node and in no registry.
const (
	FlakyImage   = "example.com/flaky:v1"
	PrivateImage = "registry.example.com:5000/team/private:v1"
	MissingImage = "example.com/missing:v1"
	// PullSecret is the dockerconfigjson secret holding PrivateImage's
	// credentials in namespace default.
	PullSecret                   = "regcred"
	privateUser, privatePassword = "puller", "s3cret"
)

// propertyRegistry is the registry of the property runs.
func propertyRegistry() []fakecri.Image {
	return []fakecri.Image{
		{Ref: FlakyImage, Size: 8 << 20, PullLatency: 2 * time.Second},
		{Ref: PrivateImage, Size: 4 << 20, Username: privateUser, Password: privatePassword},
	}
}

// putPullSecret puts the secret of PrivateImage's registry in the API.
func putPullSecret(h *harness.Harness) {
	h.API.User().PutSecret(RegistrySecret(PullSecret, "registry.example.com:5000", privateUser, privatePassword))
}

// imagePodKinds are the generated pods whose images fail or need
// credentials: one pulling FlakyImage at every start, one pulling
// PrivateImage with the secret and one without it (ImagePullBackOff for
// ever), and one whose absent image has pull policy Never.
func imagePodKinds() []func(name, node string) *corev1.Pod {
	return []func(name, node string) *corev1.Pod{
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Image("app", FlakyImage, corev1.PullAlways), Exits("app", 20*time.Second, 1))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Image("app", PrivateImage, corev1.PullIfNotPresent), PullSecrets(PullSecret))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Image("app", PrivateImage, corev1.PullAlways))
		},
		func(n, node string) *corev1.Pod {
			return NewPod(n, node, Init("setup", time.Second, 0), Image("app", MissingImage, corev1.PullNever))
		},
	}
}

// opImageFail: the next a pulls of FlakyImage fail as a registry outage.
func opImageFail(r *run, a [3]int) error {
	r.fault("image-fail", "pulls", max(1, a[0]))
	return r.h.Runtime.FailPull(FlakyImage, "503 Service Unavailable", max(1, a[0]))
}

// Image sets container's image and pull policy.
func Image(container, image string, policy corev1.PullPolicy) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		c.Image, c.ImagePullPolicy = image, policy
	}
}

// PullSecrets names the pod's imagePullSecrets.
func PullSecrets(names ...string) PodOption {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
		}
	}
}

// RegistrySecret is a kubernetes.io/dockerconfigjson secret in "default"
// holding user:password for registry.
func RegistrySecret(name, registry, user, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(
			`{"auths":{%q:{"username":%q,"password":%q}}}`, registry, user, password))},
	}
}
