package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// The event reasons of image handling, as the kubelet records them.
const (
	EventPulling       = "Pulling"
	EventPulled        = "Pulled"
	EventFailed        = "Failed"
	EventBackOff       = "BackOff"
	EventInspectFailed = "InspectFailed"
	// EventMissingPullSecrets is a pod's warning that some of its
	// imagePullSecrets could not be read when a pull failed.
	EventMissingPullSecrets = "FailedToRetrieveImagePullSecret"
	// EventErrImageNeverPull is also the waiting reason
	// podutil.ReasonErrImageNeverPull.
	EventErrImageNeverPull = "ErrImageNeverPull"
)

// Config configures a Manager.
type Config struct {
	// ParallelPulls is how many pulls may run at once: 0 means 1 (pulls
	// are serialized, the kubelet's default serializeImagePulls=true);
	// a negative value means no limit (serializeImagePulls=false without
	// maxParallelImagePulls).
	ParallelPulls int
	// Backoff is ImagePullBackOff's curve (default 10 s doubling to
	// 300 s, started again after 10 min without a failure).
	Backoff backoff.Config
}

// Ports are what a Manager acts on.
type Ports struct {
	// Images inspects and pulls images.
	Images Runtime
	// Secrets reads the pods' imagePullSecrets; nil: pulls go without
	// credentials.
	Secrets deps.SecretAPI
	// Events records the image events; nil records none.
	Events deps.EventSink
}

// Runtime is the part of CRI's ImageService a Manager calls.
type Runtime interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// Error is why a container's image is not there: Reason is its waiting
// reason (ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
// InvalidImageName, ImageInspectError), Message the waiting message.
type Error struct {
	Reason, Message string
	// Err is the runtime's error, when there is one.
	Err error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Message }

// Unwrap returns the runtime's error.
func (e *Error) Unwrap() error { return e.Err }

// Manager ensures containers' images, one per agent.
type Manager struct {
	d       deps.Core
	ports   Ports
	gate    *Gate
	backoff *backoff.Backoff

	mu      sync.Mutex
	failed  map[string]pullFailure // by backoffKey
	records *pullRecords
}

// pullFailure is the last failed pull of an image for a pod; it stays
// after a successful pull (active false) so that the curve goes on from it.
type pullFailure struct {
	at, previous time.Time
	active       bool
	// message is what the back-off reports: "ErrImagePull: <error>".
	message string
}

// New returns a manager over ports.
func New(d deps.Core, ports Ports, cfg Config) *Manager {
	limit := cfg.ParallelPulls
	if limit == 0 {
		limit = 1
	}
	return &Manager{
		d: d, ports: ports,
		gate:    NewGate(d.Tasks, limit),
		backoff: backoff.New(cfg.Backoff),
		failed:  map[string]pullFailure{},
		records: newPullRecords(),
	}
}

// backoffKey is the back-off key of a pod's image (pulls back off per pod
// and image).
func backoffKey(uid, image string) string { return uid + "_" + image }

// EnsureImage makes c's image present as its pull policy asks and returns
// the image's ID. When the container cannot start because of its image the
// error is an *Error.
func (m *Manager) EnsureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sb *runtimeapi.PodSandboxConfig) (string, error) {
	image, err := WithDefaultTag(c.Image)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
		m.event(pod, c.Name, corev1.EventTypeWarning, EventInspectFailed, msg)
		return "", &Error{Reason: podutil.ReasonInvalidImageName, Message: msg, Err: err}
	}
	spec := &runtimeapi.ImageSpec{Image: image, Annotations: pod.Annotations}
	policy := podutil.PullPolicy(c)
	present, ref := false, ""
	if policy != corev1.PullAlways {
		st, err := m.ports.Images.ImageStatus(ctx, spec, false)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %v", image, err)
			m.event(pod, c.Name, corev1.EventTypeWarning, EventInspectFailed, msg)
			return "", &Error{Reason: podutil.ReasonImageInspectError, Message: msg, Err: err}
		}
		ref = st.GetImage().GetId()
		present = ref != ""
	}
	step := Decide(policy, present)
	if step == UsePresent && m.records.mustPull(c.Image, ref, func() []Credential { creds, _ := m.credentials(ctx, pod, image); return creds }) {
		// Pulled by this agent with credentials the pod does not hold:
		// the pod pulls it itself (with Never it may not, as if absent).
		step = Pull
		if policy == corev1.PullNever {
			step = NeverPull
		}
	}
	switch step {
	case NeverPull:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		m.event(pod, c.Name, corev1.EventTypeWarning, EventErrImageNeverPull, msg)
		return "", &Error{Reason: podutil.ReasonErrImageNeverPull, Message: msg}
	case UsePresent:
		m.event(pod, c.Name, corev1.EventTypeNormal, EventPulled, PresentMessage(c.Image))
		return ref, nil
	}
	return m.pull(ctx, pod, c.Name, c.Image, spec, sb)
}

// PresentMessage is the Pulled event's message for an image already on
// the node that the pod may use (pullRecords), as the kubelet words it
// with KubeletEnsureSecretPulledImages on (its default since v1.33).
func PresentMessage(image string) string {
	return fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image)
}

// pull pulls spec's image for a pod unless its last failure's back-off
// runs. requested is the image as the container spec names it: the
// events, messages and the back-off key use it, as the kubelet's do
// (spec holds it with the default tag applied).
func (m *Manager) pull(ctx context.Context, pod *corev1.Pod, container, requested string, spec *runtimeapi.ImageSpec, sb *runtimeapi.PodSandboxConfig) (string, error) {
	m.records.intend(requested)
	defer m.records.done(requested)
	key := backoffKey(string(pod.UID), requested)
	if wait, last := m.inBackoff(key); wait > 0 {
		msg := fmt.Sprintf("Back-off pulling image %q", requested)
		m.event(pod, container, corev1.EventTypeNormal, EventBackOff, msg)
		return "", &Error{Reason: podutil.ReasonImagePullBackOff, Message: msg + ": " + last}
	}
	m.event(pod, container, corev1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", requested))
	start := m.d.Clock.Now()
	creds, missing := m.credentials(ctx, pod, spec.Image)
	if err := m.gate.Acquire(ctx); err != nil {
		return "", fmt.Errorf("wait to pull image %q for pod %s/%s: %w", requested, pod.Namespace, pod.Name, err)
	}
	pullStart := m.d.Clock.Now()
	ref, used, err := m.pullWith(ctx, spec, creds, sb)
	if err == nil && m.d.Fault(deps.FaultPullReplyLost) {
		ref, used, err = "", nil, errors.New(runtimeError(deps.FaultPullReplyLost.Err()))
	}
	var size uint64
	if err == nil {
		if st, serr := m.ports.Images.ImageStatus(ctx, spec, false); serr == nil {
			size = st.GetImage().GetSize()
		}
	}
	pulled := m.d.Clock.Now()
	m.gate.Release()
	if err != nil {
		m.event(pod, container, corev1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", requested, err))
		m.recordFailure(key, err)
		if len(missing) > 0 {
			m.podEvent(pod, corev1.EventTypeWarning, EventMissingPullSecrets, MissingSecretsMessage(missing))
		}
		return "", &Error{Reason: podutil.ReasonErrImagePull, Message: err.Error(), Err: err}
	}
	m.mu.Lock()
	if f, ok := m.failed[key]; ok {
		f.active = false
		m.failed[key] = f
	}
	m.mu.Unlock()
	m.records.record(requested, ref, used)
	m.event(pod, container, corev1.EventTypeNormal, EventPulled, PulledMessage(requested, pulled.Sub(pullStart), pulled.Sub(start), size))
	return ref, nil
}

// PulledMessage is the Pulled event's message after a pull that took
// pulling, waiting included, and brought size bytes.
func PulledMessage(image string, pulling, total time.Duration, size uint64) string {
	return fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		image, pulling.Truncate(time.Millisecond), total.Truncate(time.Millisecond), size)
}

// pullWith pulls with each credential in turn until one works (without
// any, once anonymously) and returns the one that did (nil: none); the
// error lists every attempt's error.
func (m *Manager) pullWith(ctx context.Context, spec *runtimeapi.ImageSpec, creds []Credential, sb *runtimeapi.PodSandboxConfig) (string, *Credential, error) {
	if len(creds) == 0 {
		ref, err := m.ports.Images.PullImage(ctx, spec, nil, sb)
		if err != nil {
			return "", nil, errors.New(runtimeError(err))
		}
		return ref, nil, nil
	}
	var errs []string
	for i, c := range creds {
		ref, err := m.ports.Images.PullImage(ctx, spec, &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password}, sb)
		if err == nil {
			return ref, &creds[i], nil
		}
		errs = append(errs, runtimeError(err))
	}
	if len(errs) == 1 {
		return "", nil, errors.New(errs[0])
	}
	return "", nil, errors.New("[" + strings.Join(errs, ", ") + "]")
}

// MissingSecretsMessage is the pod's warning after a failed pull when
// the imagePullSecrets named missing could not be read (kubelet.go's
// syncPod).
func MissingSecretsMessage(missing []string) string {
	return fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
}

// runtimeError is the runtime's own error text, as the kubelet reports it:
// the gRPC status without what a CRI client wrapped around it, and, as
// the kubelet's CRI client does for a pull, only the status's message
// when its code is Unknown (the code adds nothing there): "rpc error:
// code = NotFound desc = …" but "failed to pull and unpack image …".
func runtimeError(err error) string {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) && gs.GRPCStatus() != nil {
		st := gs.GRPCStatus()
		if st.Code() == codes.Unknown {
			return st.Message()
		}
		return st.Err().Error()
	}
	return err.Error()
}

// credentials reads the pod's pull secrets and returns the credentials for
// image's repository, and the names of the secrets it could not read. A
// secret that cannot be read or parsed is skipped with a warning, as the
// kubelet does: the pull may still work.
func (m *Manager) credentials(ctx context.Context, pod *corev1.Pod, image string) (creds []Credential, missing []string) {
	if len(pod.Spec.ImagePullSecrets) == 0 || m.ports.Secrets == nil {
		return nil, nil
	}
	var secrets []*corev1.Secret
	for _, r := range pod.Spec.ImagePullSecrets {
		if r.Name == "" {
			continue
		}
		s, err := m.ports.Secrets.GetSecret(ctx, pod.Namespace, r.Name)
		if err != nil {
			m.d.Log.Warn("unable to retrieve pull secret, the image pull may not succeed",
				"pod", pod.Namespace+"/"+pod.Name, "secret", r.Name, "error", err.Error())
			missing = append(missing, r.Name)
			continue
		}
		secrets = append(secrets, s)
	}
	valid := secrets[:0]
	for _, s := range secrets {
		if _, err := KeyringFromSecrets([]*corev1.Secret{s}); err != nil {
			m.d.Log.Warn("pull secret skipped", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
			continue
		}
		valid = append(valid, s)
	}
	keyring, err := KeyringFromSecrets(valid)
	if err != nil {
		return nil, missing
	}
	ref, err := ParseReference(image)
	if err != nil {
		return nil, missing
	}
	return keyring.Lookup(ref.Repository()), missing
}

// inBackoff returns how long the pull of key must still wait and the last
// failure's message.
func (m *Manager) inBackoff(key string) (time.Duration, string) {
	m.mu.Lock()
	f, ok := m.failed[key]
	m.mu.Unlock()
	if !ok || !f.active {
		return 0, ""
	}
	return m.backoff.Remaining(key, f.previous, f.at, m.d.Clock.Now()), f.message
}

// recordFailure records a failed pull of key now; the back-off curve
// starts again when the previous failure is ResetAfter old (the kubelet
// forgets a back-off entry idle for twice the cap: 10 min by default).
func (m *Manager) recordFailure(key string, err error) {
	now := m.d.Clock.Now()
	m.mu.Lock()
	prev := m.failed[key].at
	if prev.IsZero() {
		prev = now
	}
	m.failed[key] = pullFailure{at: now, previous: prev, active: true, message: podutil.ReasonErrImagePull + ": " + err.Error()}
	m.mu.Unlock()
	m.backoff.Delay(key, prev, now)
}

// Forget drops the back-off state of a pod that is gone.
func (m *Manager) Forget(uid string) {
	m.backoff.Forget(uid + "_")
	m.mu.Lock()
	for k := range m.failed {
		if strings.HasPrefix(k, uid+"_") {
			delete(m.failed, k)
		}
	}
	m.mu.Unlock()
}

func (m *Manager) event(pod *corev1.Pod, container, eventType, reason, message string) {
	m.record(pod, podutil.ContainerFieldPath(pod, container), eventType, reason, message)
}

// podEvent records an event on the pod itself.
func (m *Manager) podEvent(pod *corev1.Pod, eventType, reason, message string) {
	m.record(pod, "", eventType, reason, message)
}

func (m *Manager) record(pod *corev1.Pod, fieldPath, eventType, reason, message string) {
	if m.ports.Events == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		FieldPath: fieldPath}
	m.ports.Events.Event(ref, eventType, reason, message)
}
