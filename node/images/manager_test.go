package images_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/images"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// events records events as "+<virtual s> <reason>: <message>".
type events struct {
	k     *kernel.Kernel
	mu    sync.Mutex
	log   []string
	paths []string // "<reason> <field path>" of every event
}

func (e *events) Event(ref *corev1.ObjectReference, _, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, fmt.Sprintf("+%v %s: %s", e.k.Elapsed(), reason, message))
	e.paths = append(e.paths, reason+" "+ref.FieldPath)
}

func (e *events) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.log
	e.log = nil
	return out
}

// secrets is a fake deps.SecretAPI.
type secrets map[string]*corev1.Secret

func (s secrets) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if sec, ok := s[ns+"/"+name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

type world struct {
	t   *testing.T
	k   *kernel.Kernel
	rt  *fakecri.Runtime
	ev  *events
	m   *images.Manager
	ctx context.Context
}

func newWorld(t *testing.T, cfg images.Config, sec secrets, registry ...fakecri.Image) *world {
	t.Helper()
	k := kernel.New(kernel.Config{Seed: 7})
	t.Cleanup(k.Close)
	rt := fakecri.New(fakecri.Config{
		Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) },
		Registry:  registry, PullLatency: time.Second,
	})
	ev := &events{k: k}
	d := k.Deps()
	ports := images.Ports{Images: rt, Events: ev}
	if sec != nil {
		ports.Secrets = sec
	}
	return &world{t: t, k: k, rt: rt, ev: ev, m: images.New(d.Core, ports, cfg), ctx: context.Background()}
}

func pod(name string, image string, policy corev1.PullPolicy, pullSecrets ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: policy}}}}
	for _, s := range pullSecrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	return p
}

// ensure runs EnsureImage in a task and returns its reason ("" on success)
// once it ends.
func (w *world) ensure(p *corev1.Pod) string {
	w.t.Helper()
	var reason string
	done := false
	w.k.Go("ensure "+p.Name, func() {
		_, err := w.m.EnsureImage(w.ctx, p, &p.Spec.Containers[0], nil)
		var ie *images.Error
		switch {
		case errors.As(err, &ie):
			reason = ie.Reason + ": " + ie.Message
		case err != nil:
			reason = "error: " + err.Error()
		}
		done = true
	})
	if err := w.k.RunUntil(func() bool { return done }, time.Hour); err != nil {
		w.t.Fatal(err)
	}
	return reason
}

func (w *world) advance(d time.Duration) {
	w.t.Helper()
	if err := w.k.RunFor(d); err != nil {
		w.t.Fatal(err)
	}
}

// TestPullBackOff: a failing pull is ErrImagePull, then every attempt
// inside the back-off (10 s, 20 s, 40 s …, per pod and image) is
// ImagePullBackOff carrying the last error, and a pull after it that
// works ends it.
func TestPullBackOff(t *testing.T) {
	w := newWorld(t, images.Config{}, nil)
	if err := w.rt.FailPull("example.com/app:v1", "", 2); err != nil {
		t.Fatal(err)
	}
	p := pod("p", "example.com/app:v1", corev1.PullIfNotPresent)
	notFound := `rpc error: code = NotFound desc = failed to pull and unpack image "example.com/app:v1": failed to resolve reference "example.com/app:v1": example.com/app:v1: not found`
	var got []string
	got = append(got, w.ensure(p)) // +1s ErrImagePull
	w.advance(5 * time.Second)
	got = append(got, w.ensure(p)) // +6s in back-off
	other := pod("other", "example.com/app:v1", corev1.PullIfNotPresent)
	w.advance(5 * time.Second) // +11s: 10 s after the failure at +1s
	got = append(got, w.ensure(p))
	w.advance(15 * time.Second) // +27s: inside 20 s after +12s
	got = append(got, w.ensure(p))
	w.advance(6 * time.Second) // +33s: after it
	got = append(got, w.ensure(p), w.ensure(other))
	want := []string{
		"ErrImagePull: " + notFound,
		`ImagePullBackOff: Back-off pulling image "example.com/app:v1": ErrImagePull: ` + notFound,
		"ErrImagePull: " + notFound,
		`ImagePullBackOff: Back-off pulling image "example.com/app:v1": ErrImagePull: ` + notFound,
		"",
		"",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	wantEv := []string{
		`+0s Pulling: Pulling image "example.com/app:v1"`,
		`+1s Failed: Failed to pull image "example.com/app:v1": ` + notFound,
		`+6s BackOff: Back-off pulling image "example.com/app:v1"`,
		`+11s Pulling: Pulling image "example.com/app:v1"`,
		`+12s Failed: Failed to pull image "example.com/app:v1": ` + notFound,
		`+27s BackOff: Back-off pulling image "example.com/app:v1"`,
		`+33s Pulling: Pulling image "example.com/app:v1"`,
		`+34s Pulled: Successfully pulled image "example.com/app:v1" in 1s (1s including waiting). Image size: 20971520 bytes.`,
		`+34s Pulled: Container image "example.com/app:v1" already present on machine and can be accessed by the pod`,
	}
	if diff := cmp.Diff(wantEv, w.ev.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestPolicies: Always pulls a present image, IfNotPresent and Never use
// it, Never fails on an absent one without pulling, and an image without
// a tag is pulled as :latest.
func TestPolicies(t *testing.T) {
	w := newWorld(t, images.Config{}, nil)
	got := []string{
		w.ensure(pod("a", "busybox:latest", corev1.PullAlways)),
		w.ensure(pod("b", "busybox:latest", corev1.PullIfNotPresent)),
		w.ensure(pod("c", "busybox:latest", corev1.PullNever)),
		w.ensure(pod("d", "example.com/missing:v1", corev1.PullNever)),
		w.ensure(pod("e", "example.com/new", "")),
	}
	want := []string{"", "", "", `ErrImageNeverPull: Container image "example.com/missing:v1" is not present with pull policy of Never`, ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var pulled []string
	for _, p := range w.rt.Pulls() {
		pulled = append(pulled, p.Ref)
	}
	if diff := cmp.Diff([]string{"docker.io/library/busybox:latest", "example.com/new:latest"}, pulled); diff != "" {
		t.Errorf("pulls (-want +got):\n%s", diff)
	}
	if ev := w.ev.take(); !hasSuffix(ev, `ErrImageNeverPull: Container image "example.com/missing:v1" is not present with pull policy of Never`) ||
		!hasSuffix(ev, `Pulling: Pulling image "example.com/new"`) ||
		!hasSuffix(ev, `Pulled: Container image "busybox:latest" already present on machine and can be accessed by the pod`) {
		t.Errorf("events: %q", ev)
	}
}

func hasSuffix(list []string, suffix string) bool {
	for _, s := range list {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

// TestCredentials: the matching credentials of the pod's pull secrets are
// tried in turn until one works; without them the pull fails with 401.
func TestCredentials(t *testing.T) {
	cfg := func(user, pass string) string {
		return `{"auths":{"localhost:5000":{"username":"` + user + `","password":"` + pass + `"}}}`
	}
	sec := secrets{
		"ns/wrong": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wrong"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg("alice", "nope"))}},
		"ns/right": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "right"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg("alice", "s3cret"))}},
	}
	w := newWorld(t, images.Config{}, sec, fakecri.Image{Ref: "localhost:5000/private/app:v1", Size: 1000, Username: "alice", Password: "s3cret"})
	got := []string{
		w.ensure(pod("anon", "localhost:5000/private/app:v1", corev1.PullAlways)),
		w.ensure(pod("missing", "localhost:5000/private/app:v1", corev1.PullAlways, "absent")),
		w.ensure(pod("both", "localhost:5000/private/app:v1", corev1.PullAlways, "wrong", "right")),
	}
	unauthorized := `failed to pull and unpack image "localhost:5000/private/app:v1": failed to resolve reference "localhost:5000/private/app:v1": pulling from host localhost:5000 failed with status code [manifests v1]: 401 Unauthorized`
	want := []string{"ErrImagePull: " + unauthorized, "ErrImagePull: " + unauthorized, ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var missing []string
	for _, e := range w.ev.take() {
		if strings.Contains(e, images.EventMissingPullSecrets) {
			missing = append(missing, e)
		}
	}
	// Only the pod naming a secret that does not exist, after its failed pull.
	wantMissing := []string{"+2s FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed."}
	if diff := cmp.Diff(wantMissing, missing); diff != "" {
		t.Errorf("missing secret events (-want +got):\n%s", diff)
	}
	var auths []string
	for _, p := range w.rt.Pulls() {
		auths = append(auths, p.PodUID+" "+p.Username+":"+p.Password)
	}
	// The sandbox config is nil here, so no pod UID reaches the runtime.
	if diff := cmp.Diff([]string{" :", " :", " alice:nope", " alice:s3cret"}, auths); diff != "" {
		t.Errorf("AuthConfigs sent (-want +got):\n%s", diff)
	}
}

// TestSerializedAndParallelPulls: three 4 s pulls started together end at
// 4, 8 and 12 s when serialized, at 4, 4 and 8 s with at most two at once,
// and all at 4 s without a limit; the Pulled event tells pulling from
// waiting. (Which pod goes first is the scheduler's choice.)
func TestSerializedAndParallelPulls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int
		want     []string
	}{
		{"serialized", 0, []string{"in 4s (12s", "in 4s (4s", "in 4s (8s"}},
		{"two", 2, []string{"in 4s (4s", "in 4s (4s", "in 4s (8s"}},
		{"unlimited", -1, []string{"in 4s (4s", "in 4s (4s", "in 4s (4s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reg []fakecri.Image
			for _, n := range []string{"a", "b", "c"} {
				reg = append(reg, fakecri.Image{Ref: "example.com/" + n + ":v1", Size: 10, PullLatency: 4 * time.Second})
			}
			w := newWorld(t, images.Config{ParallelPulls: tc.parallel}, nil, reg...)
			done := 0
			for _, n := range []string{"a", "b", "c"} {
				p := pod(n, "example.com/"+n+":v1", corev1.PullIfNotPresent)
				w.k.Go("ensure "+n, func() {
					if _, err := w.m.EnsureImage(w.ctx, p, &p.Spec.Containers[0], nil); err != nil {
						t.Error(err)
					}
					done++
				})
			}
			if err := w.k.RunUntil(func() bool { return done == 3 }, time.Minute); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range w.ev.take() {
				if _, msg, ok := strings.Cut(e, "Successfully pulled image \"example.com/"); ok {
					_, d, _ := strings.Cut(msg[:strings.Index(msg, " including")], `:v1" `)
					got = append(got, d)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pulls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPulledWithSecretIsThePodsWhoHoldIt: as the kubelet's
// KubeletEnsureSecretPulledImages (default policy NeverVerifyPreloadedImages):
// an image this agent pulled with a pull secret is used as present only by
// pods holding the same credentials (the same secret, or another with the
// same user and password); any other pod pulls it itself (and fails without
// credentials), or with pull policy Never is refused as if it were absent.
// An image pulled anonymously, or preloaded, is every pod's.
func TestPulledWithSecretIsThePodsWhoHoldIt(t *testing.T) {
	cfg := `{"auths":{"localhost:5000":{"username":"alice","password":"s3cret"}}}`
	secret := func(name, uid string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
	}
	const private, public = "localhost:5000/private/app:v1", "localhost:5000/public/app:v1"
	w := newWorld(t, images.Config{}, secrets{"ns/regcred": secret("regcred", "u1"), "ns/copy": secret("copy", "u2")},
		fakecri.Image{Ref: private, Size: 1000, Username: "alice", Password: "s3cret"},
		fakecri.Image{Ref: public, Size: 1000})
	got := []string{
		w.ensure(pod("first", private, corev1.PullIfNotPresent, "regcred")),
		w.ensure(pod("same-secret", private, corev1.PullIfNotPresent, "regcred")),
		w.ensure(pod("same-credentials", private, corev1.PullIfNotPresent, "copy")),
		w.ensure(pod("none", private, corev1.PullIfNotPresent)),
		w.ensure(pod("none-never", private, corev1.PullNever)),
		w.ensure(pod("missing-secret", private, corev1.PullIfNotPresent, "nosuch")),
		w.ensure(pod("anonymous", public, corev1.PullIfNotPresent)),
		w.ensure(pod("anyone", public, corev1.PullNever)),
		w.ensure(pod("preloaded", "busybox:latest", corev1.PullNever)),
	}
	unauthorized := `failed to pull and unpack image "localhost:5000/private/app:v1": failed to resolve reference "localhost:5000/private/app:v1": pulling from host localhost:5000 failed with status code [manifests v1]: 401 Unauthorized`
	want := []string{"", "", "", "ErrImagePull: " + unauthorized,
		`ErrImageNeverPull: Container image "localhost:5000/private/app:v1" is not present with pull policy of Never`,
		"ErrImagePull: " + unauthorized, "", "", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var pulls []string
	for _, p := range w.rt.Pulls() {
		pulls = append(pulls, p.PodUID+" "+p.Ref+" "+p.Username)
	}
	// The sandbox config is nil here, so no pod UID reaches the runtime.
	wantPulls := []string{" localhost:5000/private/app:v1 alice", " localhost:5000/private/app:v1 ", " localhost:5000/private/app:v1 ", " localhost:5000/public/app:v1 "}
	if diff := cmp.Diff(wantPulls, pulls); diff != "" {
		t.Errorf("pulls (-want +got):\n%s", diff)
	}
}

// TestEventsNameTheContainersField: image events point at the container
// by its place in the spec, as upstream's container references do:
// spec.initContainers{name} for an init container,
// spec.ephemeralContainers{name} for a debug container (lockstep wrote
// spec.containers{…} for all three: issue 27's harness, cause E12).
func TestEventsNameTheContainersField(t *testing.T) {
	w := newWorld(t, images.Config{}, nil, fakecri.Image{Ref: "busybox:1", Size: 1})
	p := pod("paths", "busybox:1", corev1.PullIfNotPresent)
	p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent}}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent}}}
	debug := corev1.Container(p.Spec.EphemeralContainers[0].EphemeralContainerCommon)
	for _, c := range []*corev1.Container{&p.Spec.InitContainers[0], &debug, &p.Spec.Containers[0]} {
		done := false
		w.k.Go("ensure "+c.Name, func() {
			if _, err := w.m.EnsureImage(w.ctx, p, c, nil); err != nil {
				t.Errorf("ensure %s: %v", c.Name, err)
			}
			done = true
		})
		if err := w.k.RunUntil(func() bool { return done }, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Pulling spec.initContainers{setup}", "Pulled spec.initContainers{setup}",
		"Pulled spec.ephemeralContainers{debugger}", "Pulled spec.containers{c}"}
	if diff := cmp.Diff(want, w.ev.paths); diff != "" {
		t.Errorf("event field paths (-want +got):\n%s", diff)
	}
}
