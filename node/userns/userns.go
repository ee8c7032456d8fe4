// Package userns gives pods with `hostUsers: false` their user namespace,
// as upstream's user namespace manager does: each such pod gets a range of
// IDsPerPod host IDs (65536 by default) from the node's range (by default
// every ID from 65536 up, as upstream when no "kubelet" entry exists in
// /etc/subuid), mapped to container IDs 0..IDsPerPod-1 for both users and
// groups. Ranges are picked at random among the free ones (from
// deps.Rand; upstream's allocator scans from a random slot too), never
// overlap, and are checkpointed in the pod's directory
// (<root>/pods/<uid>/userns, upstream's file name and JSON format), so a
// restarted agent reads them back (New) and a pod keeps its range for its
// whole life; Release frees a terminated pod's range, CleanupOrphans the
// ranges of pods no part of the agent knows any more.
//
// HandlerSupport checks, as upstream does before it allocates, that the
// pod's runtime handler reports the user_namespaces feature in the CRI
// Status (RuntimeHandlers); a runtime that reports no handlers (older
// than CRI v1.29, such as containerd 1.6) supports none.
package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// DefaultIDsPerPod is the length of a pod's range (upstream's
// userNamespaces.idsPerPod default, also its unit).
const DefaultIDsPerPod = 65536

// mappingsFile is the checkpoint's name in the pod's directory.
const mappingsFile = "userns"

// Config configures a Manager; zero fields take upstream's defaults.
type Config struct {
	// RootDir holds the pods' directories.
	RootDir string
	// FirstID and Length are the node's range of host IDs (default: from
	// IDsPerPod to the top of the 32-bit space).
	FirstID, Length uint32
	// IDsPerPod is the length of each pod's range; a multiple of 65536.
	IDsPerPod uint32
	// MaxPods, when set, is checked against the number of ranges.
	MaxPods int
}

// Manager allocates and remembers the pods' ranges.
type Manager struct {
	files deps.Files
	rand  deps.Rand
	log   *slog.Logger
	cfg   Config
	off   int // the node range's first slot (FirstID / IDsPerPod)
	slots int

	mu    sync.Mutex
	used  map[int]types.UID // slot index (from off) → pod
	byPod map[types.UID]int
}

// idMapping is one mapping of the checkpoint (upstream's JSON names).
type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// checkpoint is the file's content.
type checkpoint struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

// New returns a manager over the pods' directories in files, with the
// ranges of the pods checkpointed there taken. A configuration upstream
// refuses is an error; an unreadable checkpoint is logged and skipped.
func New(d deps.Core, files deps.Files, cfg Config) (*Manager, error) {
	if cfg.IDsPerPod == 0 {
		cfg.IDsPerPod = DefaultIDsPerPod
	}
	if cfg.FirstID == 0 && cfg.Length == 0 {
		cfg.FirstID = cfg.IDsPerPod
		cfg.Length = uint32(1<<32 - uint64(cfg.FirstID))
	}
	switch {
	case cfg.IDsPerPod%DefaultIDsPerPod != 0:
		return nil, fmt.Errorf("user namespaces: %d IDs per pod is not a multiple of %d", cfg.IDsPerPod, DefaultIDsPerPod)
	case cfg.FirstID%cfg.IDsPerPod != 0 || cfg.FirstID < cfg.IDsPerPod:
		return nil, fmt.Errorf("user namespaces: the node's first ID %d must be a non-zero multiple of %d", cfg.FirstID, cfg.IDsPerPod)
	case cfg.Length%cfg.IDsPerPod != 0:
		return nil, fmt.Errorf("user namespaces: the node's range length %d is not a multiple of %d", cfg.Length, cfg.IDsPerPod)
	case cfg.MaxPods > 0 && int(cfg.Length/cfg.IDsPerPod) < cfg.MaxPods:
		return nil, fmt.Errorf("user namespaces: the node's %d IDs are not enough for %d pods", cfg.Length, cfg.MaxPods)
	}
	m := &Manager{files: files, rand: d.Rand, log: d.Log.With("component", "userns"), cfg: cfg,
		off: int(cfg.FirstID / cfg.IDsPerPod), slots: int(cfg.Length / cfg.IDsPerPod),
		used: map[int]types.UID{}, byPod: map[types.UID]int{}}
	m.load()
	return m, nil
}

// load takes the ranges checkpointed in the pods' directories.
func (m *Manager) load() {
	entries, err := m.files.ReadDir(podspec.PodsDir(m.cfg.RootDir))
	if err != nil {
		return // no pods directory yet
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		data, err := m.files.ReadFile(m.file(uid))
		if err != nil {
			continue // no user namespace
		}
		if err := m.record(uid, data); err != nil {
			m.log.Error("ignoring a pod's user namespace checkpoint", "uid", string(uid), "error", err.Error())
		}
	}
}

func (m *Manager) file(uid types.UID) string {
	return path.Join(podspec.PodDir(m.cfg.RootDir, uid), mappingsFile)
}

// record takes the range a checkpoint names for uid, checking it is one
// this manager could have written.
func (m *Manager) record(uid types.UID, data []byte) error {
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	if len(cp.UIDMappings) != 1 || len(cp.GIDMappings) != 1 || cp.UIDMappings[0] != cp.GIDMappings[0] {
		return errors.New("invalid user namespace mappings file: want one mapping, the same for users and groups")
	}
	mp := cp.UIDMappings[0]
	switch {
	case mp.ContainerID != 0:
		return errors.New("invalid user namespace mappings file: container ID 0 must be mapped")
	case mp.Length != m.cfg.IDsPerPod || mp.HostID%m.cfg.IDsPerPod != 0:
		return fmt.Errorf("invalid user namespace mappings file: range %d+%d is not one of %d IDs", mp.HostID, mp.Length, m.cfg.IDsPerPod)
	}
	slot := int(mp.HostID/m.cfg.IDsPerPod) - m.off
	if slot < 0 || slot >= m.slots {
		return fmt.Errorf("host ID %d is outside the node's range", mp.HostID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if other, taken := m.used[slot]; taken && other != uid {
		return fmt.Errorf("range of host ID %d is already taken by pod %s", mp.HostID, other)
	}
	if old, had := m.byPod[uid]; had && old != slot {
		return fmt.Errorf("pod already has the range of host ID %d", m.hostID(old))
	}
	m.used[slot], m.byPod[uid] = uid, slot
	return nil
}

func (m *Manager) hostID(slot int) uint32 { return uint32(slot+m.off) * m.cfg.IDsPerPod }

// Allocate returns pod uid's user namespace (mode POD with its mappings),
// allocating and checkpointing a range the first time.
func (m *Manager) Allocate(uid types.UID) (*runtimeapi.UserNamespace, error) {
	m.mu.Lock()
	slot, ok := m.byPod[uid]
	if !ok {
		var err error
		if slot, err = m.pickLocked(); err != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("create user namespace of pod %s: %w", uid, err)
		}
		m.used[slot], m.byPod[uid] = uid, slot
	}
	m.mu.Unlock()
	if !ok {
		if err := m.write(uid, slot); err != nil {
			m.Release(uid)
			return nil, fmt.Errorf("create user namespace of pod %s: %w", uid, err)
		}
		m.log.Info("user namespace allocated", "uid", string(uid), "hostID", m.hostID(slot), "length", m.cfg.IDsPerPod)
	}
	mp := &runtimeapi.IDMapping{HostId: m.hostID(slot), ContainerId: 0, Length: m.cfg.IDsPerPod}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: []*runtimeapi.IDMapping{mp},
		Gids: []*runtimeapi.IDMapping{{HostId: mp.HostId, ContainerId: 0, Length: mp.Length}}}, nil
}

// pickLocked finds a free slot, scanning from a random one.
func (m *Manager) pickLocked() (int, error) {
	if len(m.used) >= m.slots {
		return 0, errors.New("could not find an empty slot to allocate a user namespace")
	}
	start := m.rand.IntN(m.slots)
	for i := range m.slots {
		slot := (start + i) % m.slots
		if _, taken := m.used[slot]; !taken {
			return slot, nil
		}
	}
	return 0, errors.New("could not find an empty slot to allocate a user namespace")
}

// write checkpoints uid's range atomically (a temporary file renamed).
func (m *Manager) write(uid types.UID, slot int) error {
	mp := idMapping{HostID: m.hostID(slot), ContainerID: 0, Length: m.cfg.IDsPerPod}
	data, err := json.Marshal(checkpoint{UIDMappings: []idMapping{mp}, GIDMappings: []idMapping{mp}})
	if err != nil {
		return err
	}
	if err := m.files.MkdirAll(podspec.PodDir(m.cfg.RootDir, uid)); err != nil {
		return err
	}
	tmp := m.file(uid) + ".tmp"
	if err := m.files.CreateFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := m.files.Rename(tmp, m.file(uid)); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// Release frees a terminated pod's range and removes its checkpoint; a
// pod without one is no error.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	slot, ok := m.byPod[uid]
	if ok {
		delete(m.byPod, uid)
		delete(m.used, slot)
	}
	m.mu.Unlock()
	if !ok {
		return
	}
	if err := m.files.Remove(m.file(uid)); err != nil {
		m.log.Warn("removing a user namespace checkpoint failed", "uid", string(uid), "error", err.Error())
	}
	m.log.Info("user namespace released", "uid", string(uid), "hostID", m.hostID(slot))
}

// CleanupOrphans releases the ranges of pods that known does not know
// (housekeeping, once every pod source has been seen).
func (m *Manager) CleanupOrphans(known func(types.UID) bool) {
	m.mu.Lock()
	uids := slices.Sorted(maps.Keys(m.byPod))
	m.mu.Unlock()
	for _, uid := range uids {
		if !known(uid) {
			m.Release(uid)
		}
	}
}

// Allocated returns the first host ID of every allocated range by pod.
func (m *Manager) Allocated() map[types.UID]uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[types.UID]uint32, len(m.byPod))
	for uid, slot := range m.byPod {
		out[uid] = m.hostID(slot)
	}
	return out
}

// HandlerSupport reports whether the runtime handler (as RunPodSandbox
// takes it; "" is the default) supports user namespaces according to a
// CRI Status answer, with upstream's error when it does not.
func HandlerSupport(status *runtimeapi.StatusResponse, handler string) error {
	msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if handler != "" {
		msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	handlers := status.GetRuntimeHandlers()
	if len(handlers) == 0 {
		return errors.New(msg) // a runtime older than the field
	}
	for _, h := range handlers {
		if h.GetName() == handler {
			if h.GetFeatures().GetUserNamespaces() {
				return nil
			}
			return errors.New(msg)
		}
	}
	return fmt.Errorf("%s: the handler %q is not known", msg, handler)
}
