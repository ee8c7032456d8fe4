// Package allocation keeps the resources the agent has allocated to each
// pod's containers: what their cgroups are sized to, which differs from
// the spec while a resize waits (PodResizePending). The allocations are
// checkpointed under the root directory, so that a restarted agent
// neither replays a resize it had deferred nor loses one it had accepted.
// Decide says whether a requested resize fits the node now.
package allocation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"path"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/statefile"
)

// CheckpointFile is the checkpoint's name under the root directory (the
// kubelet's own name for it).
const CheckpointFile = "allocated_pods_state"

// PodResources are the resources allocated to a pod's containers (init
// and regular), by container name.
type PodResources map[string]corev1.ResourceRequirements

// Of returns what pod's spec asks for its containers: the allocation
// accepting it would record.
func Of(pod *corev1.Pod) PodResources {
	out := PodResources{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			out[list[i].Name] = *list[i].Resources.DeepCopy()
		}
	}
	return out
}

// Apply returns pod with its containers' resources replaced by alloc's
// (a copy, only when one differs) and whether it changed anything.
func Apply(pod *corev1.Pod, alloc PodResources) (*corev1.Pod, bool) {
	if pod == nil || alloc == nil {
		return pod, false
	}
	out := pod
	set := func(list func(*corev1.Pod) []corev1.Container) {
		for i, c := range list(out) {
			r, ok := alloc[c.Name]
			if !ok || equality.Semantic.DeepEqual(c.Resources, r) {
				continue
			}
			if out == pod {
				out = pod.DeepCopy()
			}
			list(out)[i].Resources = *r.DeepCopy()
		}
	}
	set(func(p *corev1.Pod) []corev1.Container { return p.Spec.InitContainers })
	set(func(p *corev1.Pod) []corev1.Container { return p.Spec.Containers })
	return out, out != pod
}

// Store holds the allocations of the pods the agent runs and keeps them
// checkpointed. Without a file port (tests) it keeps them in memory only.
// An admission's allocation (Set) is written by the next Flush, which the
// agent calls before it creates a container with it, and a terminated
// pod's removal (Remove) by the next Flush or RemoveOrphans: a burst of N
// admissions or terminations writes the file a few times, not N times
// (each write is the whole file, so N writes cost O(N²)). A resize's
// (SetResized) is written at once.
type Store struct {
	files deps.Files
	path  string
	core  deps.Core // for its fault points (WithFaults)

	mu   sync.Mutex
	pods map[types.UID]PodResources
	// resized are the pods a resize was accepted for.
	resized map[types.UID]bool
	// encoded caches each pod's entry as JSON (`"uid":{...}`), so that writing the
	// checkpoint after one pod's change encodes that pod alone and
	// concatenates the rest (a burst of N admissions costs N encodings,
	// not N²).
	encoded map[types.UID][]byte
	// dirty is set when the allocations changed since the file was last
	// written; unwritten are the pods whose allocation changed since.
	dirty     bool
	unwritten map[types.UID]bool
	// writes counts the checkpoint writes (Writes).
	writes int
}

// checkpoint is the file's content: the allocations and a checksum of
// their JSON encoding, so that a torn or edited file is detected.
type checkpoint struct {
	Entries map[types.UID]PodResources `json:"entries"`
	// Resized lists the pods a resize was accepted for, sorted.
	Resized  []types.UID `json:"resized,omitempty"`
	Checksum uint32      `json:"checksum"`
}

// NewStore returns a store checkpointed to <rootDir>/allocated_pods_state
// (files nil: in memory). Call Load before use.
func NewStore(files deps.Files, rootDir string) *Store {
	return &Store{files: files, path: path.Join(rootDir, CheckpointFile), pods: map[types.UID]PodResources{}, resized: map[types.UID]bool{}, encoded: map[types.UID][]byte{},
		unwritten: map[types.UID]bool{}}
}

// WithFaults gives the store the fault points of core (a checkpoint write
// that fails or is torn) and returns it.
func (s *Store) WithFaults(core deps.Core) *Store {
	s.core = core
	return s
}

// Written reports whether pod uid's allocation, as last set, is in the
// checkpoint file (or was never set).
func (s *Store) Written(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.unwritten[uid]
}

// Path is the checkpoint file's path.
func (s *Store) Path() string { return s.path }

// Load reads the checkpoint. A missing file is an empty store; a corrupt
// one is an error (and the store stays empty): the agent then starts from
// the pods' specs, as the kubelet does when it has no checkpoint.
func (s *Store) Load() error {
	if s.files == nil {
		return nil
	}
	data, ok, err := statefile.Read(s.files, s.path)
	if !ok || err != nil {
		return err
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("decode allocation checkpoint %s: %w", s.path, err)
	}
	if sum, err := checksum(cp.Entries, cp.Resized); err != nil || sum != cp.Checksum {
		return fmt.Errorf("allocation checkpoint %s is corrupt (checksum mismatch)", s.path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, alloc := range cp.Entries {
		s.pods[uid] = alloc
	}
	for _, uid := range cp.Resized {
		s.resized[uid] = true
	}
	return nil
}

// Get returns the allocation of pod uid.
func (s *Store) Get(uid types.UID) (PodResources, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.pods[uid]
	return a, ok
}

// Has reports whether pod uid has an allocation.
func (s *Store) Has(uid types.UID) bool {
	_, ok := s.Get(uid)
	return ok
}

// Allocated returns pod with its allocated resources in place of its
// spec's (pod itself when it has none or they are the same).
func (s *Store) Allocated(pod *corev1.Pod) *corev1.Pod {
	a, ok := s.Get(pod.UID)
	if !ok {
		return pod
	}
	out, _ := Apply(pod, a)
	return out
}

// Set records pod's containers' resources as its allocation (at its
// admission). The checkpoint is written by the next Flush (or any write):
// call Flush before creating a container with the allocation.
func (s *Store) Set(pod *corev1.Pod) error {
	return s.set(pod, false)
}

// Flush writes the checkpoint if an allocation changed since it was last
// written (a failed write is retried by the next Flush).
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	switch {
	case s.core.Fault(deps.FaultAllocationCheckpointFails):
		return fmt.Errorf("write the pod allocations: write %s: %w", s.path, deps.FaultAllocationCheckpointFails.Err())
	case s.files != nil && s.core.Fault(deps.FaultAllocationCheckpointTorn):
		data, err := s.encodeLocked(nil)
		if err == nil {
			err = statefile.WriteTorn(s.files, s.path, data, 0o600)
		}
		return fmt.Errorf("write the pod allocations: %w", err)
	}
	if err := s.writeLocked(); err != nil {
		return fmt.Errorf("write the pod allocations: %w", err)
	}
	return nil
}

// Writes is how many times the checkpoint file was written.
func (s *Store) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// SetResized records pod's containers' resources as its allocation after
// a resize was accepted: from then on the pod's running containers are
// brought to their allocation (see Resized).
func (s *Store) SetResized(pod *corev1.Pod) error {
	return s.set(pod, true)
}

// Resized reports whether a resize was ever accepted for pod uid: only
// then do its running containers' resources get compared with their
// allocation (a container is created with its allocation, so one never
// resized has it already, whatever its runtime reports).
func (s *Store) Resized(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resized[uid]
}

func (s *Store) set(pod *corev1.Pod, resized bool) error {
	alloc := Of(pod)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[pod.UID]; ok && equality.Semantic.DeepEqual(old, alloc) && (!resized || s.resized[pod.UID]) {
		return nil
	}
	s.pods[pod.UID] = alloc
	delete(s.encoded, pod.UID)
	s.dirty, s.unwritten[pod.UID] = true, true
	if !resized {
		return nil // written by the next Flush
	}
	s.resized[pod.UID] = true
	if err := s.writeLocked(); err != nil {
		return fmt.Errorf("record the allocation of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// Remove forgets pod uid's allocation (a terminated pod's). The file is
// rewritten by the next Flush or RemoveOrphans: until then a restarted
// agent would find an entry of a pod that is gone, which nothing uses and
// housekeeping removes; a burst of N terminations does not rewrite the
// whole file N times.
func (s *Store) Remove(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[uid]; !ok {
		return nil
	}
	delete(s.pods, uid)
	delete(s.resized, uid)
	delete(s.encoded, uid)
	s.dirty = true
	return nil
}

// RemoveOrphans forgets the allocations of the pods keep does not keep
// and writes the checkpoint if anything changed since its last write.
func (s *Store) RemoveOrphans(keep func(types.UID) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := false
	for _, uid := range slices.Sorted(maps.Keys(s.pods)) {
		if !keep(uid) {
			delete(s.pods, uid)
			delete(s.resized, uid)
			delete(s.encoded, uid)
			removed = true
		}
	}
	if !removed && !s.dirty {
		return nil
	}
	if err := s.writeLocked(); err != nil {
		return fmt.Errorf("forget pod allocations: %w", err)
	}
	return nil
}

// UIDs are the pods with an allocation, sorted.
func (s *Store) UIDs() []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.pods))
}

// writeLocked replaces the checkpoint atomically (a new file renamed over
// the old one) and clears dirty when that worked.
func (s *Store) writeLocked() error {
	if s.files == nil {
		s.dirty = false
		clear(s.unwritten)
		return nil
	}
	var resized []types.UID
	for _, uid := range slices.Sorted(maps.Keys(s.resized)) {
		if _, ok := s.pods[uid]; ok {
			resized = append(resized, uid)
		}
	}
	data, err := s.encodeLocked(resized)
	if err != nil {
		return fmt.Errorf("encode allocation checkpoint: %w", err)
	}
	if err := statefile.Write(s.files, s.path, data, 0o600); err != nil {
		return err
	}
	s.dirty = false
	clear(s.unwritten)
	s.writes++
	return nil
}

// encodeLocked returns the checkpoint's file content: the bytes
// json.Marshal gives for checkpoint{s.pods, resized, checksum}, built
// from the cached entries (each pod encoded once after its change) and
// checksummed as checksum does. s.mu held.
func (s *Store) encodeLocked(resized []types.UID) ([]byte, error) {
	uids := slices.Sorted(maps.Keys(s.pods))
	size := 64 + 40*len(resized)
	for _, uid := range uids {
		enc, ok := s.encoded[uid]
		if !ok {
			// The cached entry is the pod's key and value, `"uid":{...}`.
			key, err := json.Marshal(string(uid))
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", uid, err)
			}
			val, err := json.Marshal(s.pods[uid])
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", uid, err)
			}
			enc = append(append(key, ':'), val...)
			s.encoded[uid] = enc
		}
		size += len(enc) + 1
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"entries":{`)
	for i, uid := range uids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(s.encoded[uid])
	}
	b.WriteByte('}')
	if len(resized) > 0 {
		list, err := json.Marshal(resized)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"resized":`)
		b.Write(list)
	}
	body := b.Len()
	b.WriteString(`,"checksum":0}`)
	h := fnv.New32a()
	_, _ = h.Write(b.Bytes())
	b.Truncate(body)
	b.WriteString(`,"checksum":` + strconv.FormatUint(uint64(h.Sum32()), 10) + `}`)
	return b.Bytes(), nil
}

// checksum is FNV-1a 32 of the JSON encoding of the entries and the
// resized pods (map keys sorted by encoding/json, so it is stable).
func checksum(entries map[types.UID]PodResources, resized []types.UID) (uint32, error) {
	sum, err := statefile.Sum32(checkpoint{Entries: entries, Resized: resized})
	if err != nil {
		return 0, fmt.Errorf("allocation entries: %w", err)
	}
	return sum, nil
}
