package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podChange is one committed pod write, kept (within the watch window) to
// replay watches and to answer stale reads. before and after are store
// objects: never mutated.
type podChange struct {
	rv            uint64
	at            time.Time
	key           string
	before, after *corev1.Pod
}

// ListPods returns the pods bound to nodeName, sorted by namespace and
// name, and the list's resource version.
func (s *Server) ListPods(ctx context.Context, nodeName, notOlderThan string) ([]*corev1.Pod, string, error) {
	if err := s.request(ctx, VerbList, fmt.Sprintf("pods on node %q", nodeName)); err != nil {
		return nil, "", err
	}
	defer s.response()
	if err := s.authorizePodList("list", nodeName); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.unlock()
	floor, _ := strconv.ParseUint(notOlderThan, 10, 64)
	pods, rv := s.readViewLocked(floor)
	var out []*corev1.Pod
	for _, k := range sortedKeys(pods) {
		if p := pods[k]; p.Spec.NodeName == nodeName {
			out = append(out, p.DeepCopy())
		}
	}
	return out, strconv.FormatUint(rv, 10), nil
}

// PatchPodStatus applies patch, a strategic-merge patch, to the pod's
// status subresource as the real apiserver does: the patch is applied to
// the whole stored pod, a metadata.uid in it is a precondition (a pod with
// another UID answers Conflict), and only the status of the result is
// kept. A patch that changes nothing commits nothing.
func (s *Server) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	if err := s.request(ctx, VerbPatchStatus, "pod "+key(namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizePod("patch", s.pods[key(namespace, name)], name); err != nil {
		return nil, err
	}
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	patched, err := applyPatch(old, patch, &corev1.Pod{})
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch status of pod %s: %v", key(namespace, name), err))
	}
	if err := uidPrecondition(podsResource, name, patched.UID, old.UID); err != nil {
		return nil, err
	}
	return s.setPodStatusLocked(ActorAgent, VerbPatchStatus, old, patched.Status).DeepCopy(), nil
}

// applyPatch applies a strategic-merge patch to obj (not changed) and
// decodes the result into out.
func applyPatch[T any](obj T, patch []byte, out T) (T, error) {
	var zero T
	orig, err := json.Marshal(obj)
	if err != nil {
		return zero, err
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, out)
	if err != nil {
		return zero, err
	}
	if err := json.Unmarshal(merged, out); err != nil {
		return zero, err
	}
	return out, nil
}

// GetPod reads a pod as the server holds it now (a consistent read: no
// stale-read fault applies).
func (s *Server) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if err := s.request(ctx, VerbGet, "pod "+key(namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	p := s.pods[key(namespace, name)]
	if err := s.authorizePod("get", p, name); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return p.DeepCopy(), nil
}

// DeletePod deletes a pod at once (grace period 0), provided its UID is
// uid (an empty uid deletes whatever pod has the name).
func (s *Server) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	if err := s.request(ctx, VerbDelete, "pod "+key(namespace, name)); err != nil {
		return err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	if err := s.authorizePod("delete", s.pods[key(namespace, name)], name); err != nil {
		return err
	}
	old, err := s.podForWriteLocked(namespace, name, uid, "", VerbDelete)
	if err != nil {
		return err
	}
	s.removePodLocked(ActorAgent, old)
	return nil
}

// CreatePod creates a pod (the agent's mirror pods). Like the real
// apiserver it assigns the UID, resets the status to Pending and refuses a
// pod that carries a resource version.
func (s *Server) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if err := s.request(ctx, VerbCreate, "pod "+key(pod.Namespace, pod.Name)); err != nil {
		return nil, err
	}
	defer s.response()
	if pod.Namespace == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("create pod %q: the namespace is required", pod.Name))
	}
	if pod.ResourceVersion != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("create pod %s: resourceVersion should not be set on objects to be created", key(pod.Namespace, pod.Name)))
	}
	if err := s.admitMirrorPod(pod); err != nil {
		return nil, err
	}
	p := pod.DeepCopy()
	p.Status = corev1.PodStatus{}
	s.mu.Lock()
	defer s.unlock()
	created, err := s.createPodLocked(ActorAgent, p)
	if err != nil {
		return nil, err
	}
	return created.DeepCopy(), nil
}

// readViewLocked returns the pods the agent's reads see, with their
// resource version: the store, or under StaleReads the store as it was
// the configured lag ago, rebuilt by undoing the newer pod changes still
// in the window. The map and its pods must not be changed. Caller holds mu.
func (s *Server) readViewLocked(notOlderThan uint64) (map[string]*corev1.Pod, uint64) {
	if s.faults.stale <= 0 {
		return s.pods, s.rv
	}
	cutoff := s.clock.Now().Add(-s.faults.stale)
	i := len(s.podLog)
	for i > 0 && s.podLog[i-1].at.After(cutoff) && s.podLog[i-1].rv > notOlderThan {
		i--
	}
	if i == len(s.podLog) {
		return s.pods, s.rv
	}
	view := make(map[string]*corev1.Pod, len(s.pods))
	for k, p := range s.pods {
		view[k] = p
	}
	for j := len(s.podLog) - 1; j >= i; j-- {
		if c := s.podLog[j]; c.before == nil {
			delete(view, c.key)
		} else {
			view[c.key] = c.before
		}
	}
	return view, s.podLog[i].rv - 1
}

// podForWriteLocked finds the pod a write is about and checks its
// preconditions: the UID (when given), injected conflicts and the
// resource version (when given). Caller holds mu.
func (s *Server) podForWriteLocked(namespace, name string, uid types.UID, rv, verb string) (*corev1.Pod, error) {
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return old, checkPreconditions(s, podsResource, name, uid, old.UID, rv, old.ResourceVersion, verb)
}

// checkPreconditions applies the UID precondition, injected conflicts and
// optimistic concurrency to an agent's write of an object. Caller holds mu.
func checkPreconditions(s *Server, gr schema.GroupResource, name string, uid, haveUID types.UID, rv, haveRV, verb string) error {
	if err := uidPrecondition(gr, name, uid, haveUID); err != nil {
		return err
	}
	if s.injectConflictLocked(rv, verb, gr.Resource+" "+name) {
		return apierrors.NewConflict(gr, name, errModified)
	}
	return rvPrecondition(gr, name, rv, haveRV)
}

// uidPrecondition fails with Conflict when a UID is given and is not the
// object's.
func uidPrecondition(gr schema.GroupResource, name string, uid, haveUID types.UID) error {
	if uid != "" && uid != haveUID {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, haveUID))
	}
	return nil
}

// rvPrecondition fails with Conflict when a resource version is given and
// is not the object's.
func rvPrecondition(gr schema.GroupResource, name string, rv, haveRV string) error {
	if rv != "" && rv != haveRV {
		return apierrors.NewConflict(gr, name, errModified)
	}
	return nil
}

// createPodLocked stores a new pod, which the caller owns: it fills in the
// server's metadata and defaults. Caller holds mu.
func (s *Server) createPodLocked(actor string, p *corev1.Pod) (*corev1.Pod, error) {
	if p.Name == "" && p.GenerateName != "" {
		s.names++
		p.Name = fmt.Sprintf("%s%05x", p.GenerateName, s.names)
	}
	if p.Name == "" {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: KindPod}, "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required"),
		})
	}
	if _, ok := s.pods[key(p.Namespace, p.Name)]; ok {
		return nil, apierrors.NewAlreadyExists(podsResource, p.Name)
	}
	p.UID = types.UID(s.nextUID())
	p.ResourceVersion = ""
	p.CreationTimestamp = metav1.NewTime(s.now())
	p.Generation = 1
	p.DeletionTimestamp = nil
	p.DeletionGracePeriodSeconds = nil
	defaultPodSpec(&p.Spec)
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
	if p.Status.QOSClass == "" {
		p.Status.QOSClass = qosClass(&p.Spec)
	}
	return s.putPodLocked(actor, VerbCreate, nil, p), nil
}

// setPodStatusLocked writes status over old's, recorded as verb. Caller
// holds mu.
func (s *Server) setPodStatusLocked(actor, verb string, old *corev1.Pod, status corev1.PodStatus) *corev1.Pod {
	if equality.Semantic.DeepEqual(old.Status, status) {
		return old
	}
	p := old.DeepCopy()
	p.Status = status
	return s.putPodLocked(actor, verb, old, p)
}

// putPodLocked commits p (a new object replacing old, which is nil for a
// create): it gets the next resource version, goes to the store, the pod
// log, the open watches and the history. Caller holds mu and never
// touches p again but to copy it.
func (s *Server) putPodLocked(actor, verb string, old, p *corev1.Pod) *corev1.Pod {
	rv := s.nextRV()
	p.ResourceVersion = strconv.FormatUint(rv, 10)
	k := key(p.Namespace, p.Name)
	s.pods[k] = p
	s.publishLocked(podChange{rv: rv, at: s.clock.Now(), key: k, before: old, after: p})
	s.record(Record{RV: rv, Actor: actor, Verb: verb, Kind: KindPod, Namespace: p.Namespace, Name: p.Name, UID: p.UID, Pod: p})
	return p
}

// removePodLocked deletes old from the store. Caller holds mu.
func (s *Server) removePodLocked(actor string, old *corev1.Pod) {
	rv := s.nextRV()
	k := key(old.Namespace, old.Name)
	delete(s.pods, k)
	s.publishLocked(podChange{rv: rv, at: s.clock.Now(), key: k, before: old})
	s.record(Record{RV: rv, Actor: actor, Verb: VerbDelete, Kind: KindPod, Namespace: old.Namespace, Name: old.Name, UID: old.UID, Pod: deletedPod(old, rv)})
}

// deletedPod is the last state of a pod deleted at rv, as the DELETED
// watch event and the history show it.
func deletedPod(old *corev1.Pod, rv uint64) *corev1.Pod {
	p := old.DeepCopy()
	p.ResourceVersion = strconv.FormatUint(rv, 10)
	return p
}

// gracefulDeleteLocked deletes a pod the way the real apiserver does for
// a user: an unbound or finished pod, a zero grace period or a pending
// deletion already at zero deletes at once; otherwise the pod is marked
// (deletionTimestamp = now + grace) and stays until the node deletes it
// with grace 0. A later delete may only shorten the grace period, counted
// from the first request (never into the past: a shorter grace that has
// already run out becomes 1 s from now). A deletion at grace 0 of a pod
// bound to a node and not finished is two writes, as in the real
// apiserver: the pod is first marked with grace 0 (a MODIFIED event), then
// removed (a DELETED event carrying that mark), so the node learns the
// grace period was cut to zero. Caller holds mu.
func (s *Server) gracefulDeleteLocked(actor string, old *corev1.Pod, grace *int64) {
	if old.DeletionTimestamp != nil {
		s.shortenDeletionLocked(actor, old, grace)
		return
	}
	period := int64(30)
	switch {
	case grace != nil:
		period = *grace
	case old.Spec.TerminationGracePeriodSeconds != nil:
		period = *old.Spec.TerminationGracePeriodSeconds
	}
	if old.Spec.NodeName == "" || isTerminal(old) {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	if period == 0 && (old.Spec.NodeName == "" || isTerminal(old)) {
		s.removePodLocked(actor, old) // no node is running it
		return
	}
	p := old.DeepCopy()
	p.DeletionTimestamp = ptrTime(s.now().Add(time.Duration(period) * time.Second))
	p.DeletionGracePeriodSeconds = &period
	p.Generation++
	s.markDeletedLocked(actor, old, p)
}

// shortenDeletionLocked handles a delete of a pod already marked for
// deletion. Caller holds mu.
func (s *Server) shortenDeletionLocked(actor string, old *corev1.Pod, grace *int64) {
	pending := old.DeletionGracePeriodSeconds
	if pending == nil || *pending == 0 {
		s.removePodLocked(actor, old)
		return
	}
	if grace == nil {
		return // graceful deletion already pending
	}
	period := *grace
	if period < 0 {
		period = 1
	}
	if period >= *pending {
		return // only a shorter grace period changes a pending deletion
	}
	requested := old.DeletionTimestamp.Add(-time.Duration(*pending) * time.Second)
	at := requested.Add(time.Duration(period) * time.Second)
	if now := s.now(); at.Before(now) {
		at = now
		if period != 0 {
			period = 1
		}
	}
	p := old.DeepCopy()
	p.DeletionTimestamp = ptrTime(at)
	p.DeletionGracePeriodSeconds = &period
	s.markDeletedLocked(actor, old, p)
}

// markDeletedLocked writes p, old marked for deletion, and removes it at
// once when its grace period is zero. Caller holds mu.
func (s *Server) markDeletedLocked(actor string, old, p *corev1.Pod) {
	marked := s.putPodLocked(actor, VerbGracefulDelete, old, p)
	if *p.DeletionGracePeriodSeconds == 0 {
		s.removePodLocked(actor, marked)
	}
}

// isTerminal reports whether the pod's phase is Succeeded or Failed.
func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
