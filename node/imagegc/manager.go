package imagegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/images"
)

// Event reasons, as the kubelet's.
const (
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
)

// Reasons a removal is counted under (kubelet_image_garbage_collected_total).
const (
	MetricReasonSpace = "space"
	MetricReasonAge   = "age"
)

// StateFile is the name of the records' file under the root directory.
const StateFile = "image_gc_state.json"

// ImageService is the part of the CRI image service the collector uses.
type ImageService interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

// ContainerLister lists the runtime's containers (of every state).
type ContainerLister interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// FsStats reports the image filesystem's capacity and available bytes.
type FsStats interface {
	ImageFsStats(ctx context.Context) (capacity, available int64, err error)
}

// Observer counts removed images by reason; nil counts none.
type Observer interface {
	ObserveImageGC(reason string)
}

// Ports are what a Manager reads and acts through. Files and Events may
// be nil (no state file, no events).
type Ports struct {
	Images     ImageService
	Containers ContainerLister
	Fs         FsStats
	Files      deps.Files
	Events     deps.EventSink
	Metrics    Observer
}

// Config tunes a Manager; zero fields take the kubelet's defaults.
type Config struct {
	// Policy is when images are removed (zero: DefaultPolicy).
	Policy Policy
	// Period is how often images are detected and collected
	// (DefaultPeriod).
	Period time.Duration
	// StateDir holds StateFile ("" : the records live in memory only).
	StateDir string
	// NodeName is the node events are recorded on.
	NodeName string
	// SandboxImages are never removed (the runtime's sandbox image, for
	// runtimes that do not pin it).
	SandboxImages []string
}

// EffectivePolicy is the policy the collector runs: the kubelet's
// default when Policy is zero.
func (c Config) EffectivePolicy() Policy {
	if c.Policy == (Policy{}) {
		return DefaultPolicy()
	}
	return c.Policy
}

// EffectivePeriod is the collection period (DefaultPeriod when unset).
func (c Config) EffectivePeriod() time.Duration {
	if c.Period <= 0 {
		return DefaultPeriod
	}
	return c.Period
}

// Manager is the image garbage collector.
type Manager struct {
	d     deps.Core
	ports Ports
	cfg   Config
	log   *slog.Logger
	// sandbox holds the normalized sandbox image references.
	sandbox map[string]bool

	mu      sync.Mutex
	records Records
	loaded  bool
	// failedBefore: the last collection failed (ImageGCFailed is
	// recorded for repeated failures only, as the kubelet does).
	failedBefore bool
}

// New returns a Manager; nothing runs until Start.
func New(d deps.Core, ports Ports, cfg Config) *Manager {
	cfg.Policy, cfg.Period = cfg.EffectivePolicy(), cfg.EffectivePeriod()
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{d: d, ports: ports, cfg: cfg, log: log.With("component", "imagegc"), sandbox: map[string]bool{}, records: Records{}}
	for _, ref := range cfg.SandboxImages {
		m.sandbox[normalize(ref)] = true
	}
	return m
}

// normalize is ref as the runtime names it ("pause:3.10" is
// "docker.io/library/pause:3.10"); an unparsable ref stays as it is.
func normalize(ref string) string {
	r, err := images.ParseReference(ref)
	if err != nil {
		return ref
	}
	s := r.Repository()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// protected reports whether an image is the sandbox image.
func (m *Manager) protected(id string, r Record) bool {
	if m.sandbox[id] {
		return true
	}
	for _, t := range r.Tags {
		if m.sandbox[normalize(t)] {
			return true
		}
	}
	return false
}

// Start spawns the "image gc" task: a collection at once and every
// Period until ctx ends. Under a disabled policy (high threshold 100, no
// maximum age) it only detects, as the kubelet, so that the eviction
// manager's reclaim finds the images' records.
func (m *Manager) Start(ctx context.Context) {
	m.d.Tasks.Go("image gc", func() {
		began := m.d.Clock.Now()
		t := m.d.Tasks.NewTicker("image gc", m.cfg.Period)
		defer t.Stop()
		for {
			if m.d.Fault(deps.FaultImageGCLate) {
				// This round is late: the next tick collects.
			} else if m.cfg.Policy.Disabled() {
				if _, err := m.candidates(ctx, m.d.Clock.Now()); err != nil && ctx.Err() == nil {
					m.log.Warn("image detection failed", "error", err.Error())
				}
			} else {
				m.collectAndReport(ctx, began)
			}
			if t.Wait(ctx) != nil {
				return
			}
		}
	})
}

// collectAndReport runs one collection and reports a failure: logged the
// first time, an ImageGCFailed event when it fails again in a row.
func (m *Manager) collectAndReport(ctx context.Context, began time.Time) {
	err := m.GarbageCollect(ctx, began)
	if ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	again := m.failedBefore
	m.failedBefore = err != nil
	m.mu.Unlock()
	switch {
	case err != nil && again:
		m.log.Error("image garbage collection failed multiple times in a row", "error", err.Error())
		m.nodeEvent(corev1.EventTypeWarning, ReasonImageGCFailed, err.Error())
	case err != nil:
		m.log.Warn("image garbage collection failed once; stats may not be ready yet", "error", err.Error())
	case again:
		m.log.Info("image garbage collection succeeded")
	}
}

// GarbageCollect runs one collection: images unused beyond the maximum
// age go first; then, if the image filesystem is at or above the high
// threshold, unused images least recently used first until the low
// threshold is reached. began is when collections started (the maximum
// age applies only once they have run that long).
func (m *Manager) GarbageCollect(ctx context.Context, began time.Time) error {
	now := m.d.Clock.Now()
	cands, err := m.candidates(ctx, now)
	if err != nil {
		return err
	}
	if old := ForAge(cands, m.cfg.Policy.MaxAge, began, now); len(old) > 0 {
		removed, err := m.remove(ctx, old, MetricReasonAge)
		if err != nil {
			return fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.cfg.Policy.MaxAge, err)
		}
		cands = without(cands, removed)
	}
	if m.cfg.Policy.HighThresholdPercent >= 100 {
		return nil
	}
	capacity, available, err := m.ports.Fs.ImageFsStats(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem stats: %w", err)
	}
	if capacity <= 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.nodeEvent(corev1.EventTypeWarning, ReasonInvalidDiskCapacity, err.Error())
		return err
	}
	percent, toFree := Usage(capacity, available, m.cfg.Policy.LowThresholdPercent)
	if percent < m.cfg.Policy.HighThresholdPercent {
		return nil
	}
	m.log.Info("disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", percent, "highThreshold", m.cfg.Policy.HighThresholdPercent, "amountToFree", toFree, "lowThreshold", m.cfg.Policy.LowThresholdPercent)
	plan := ForSpace(cands, toFree, m.cfg.Policy.MinAge, now)
	removed, rerr := m.remove(ctx, plan, MetricReasonSpace)
	var freed int64
	for _, c := range plan {
		if removed[c.ID] {
			freed += c.Size
		}
	}
	if rerr != nil {
		return fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", toFree, freed, rerr)
	}
	if freed < toFree {
		msg := fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
			"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			percent, FormatSize(capacity), freed)
		m.nodeEvent(corev1.EventTypeWarning, ReasonFreeDiskSpaceFailed, msg)
		return errors.New(msg)
	}
	return nil
}

// DeleteUnused removes every image no container uses (never a pinned
// one, the sandbox image, or one detected less than the minimum age ago):
// the eviction manager's node-level reclaim.
func (m *Manager) DeleteUnused(ctx context.Context) error {
	now := m.d.Clock.Now()
	m.log.Info("attempting to delete unused images")
	cands, err := m.candidates(ctx, now)
	if err != nil {
		return err
	}
	_, err = m.remove(ctx, ForSpace(cands, math.MaxInt64, m.cfg.Policy.MinAge, now), MetricReasonSpace)
	return err
}

// candidates detects the images now and returns the removable ones in
// eviction order.
func (m *Manager) candidates(ctx context.Context, now time.Time) ([]Candidate, error) {
	if err := m.load(); err != nil {
		m.log.Warn("image GC state unreadable; starting from no records", "error", err.Error())
	}
	imgs, err := m.ports.Images.ListImages(ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	ctrs, err := m.ports.Containers.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	m.mu.Lock()
	recs, inUse := Detect(m.records, imgs, InUse(ctrs), now)
	m.records = recs
	m.mu.Unlock()
	m.save()
	return Candidates(recs, inUse, m.protected), nil
}

// remove removes the images in order and returns those it removed (an
// error joins the failures; the others are still tried).
func (m *Manager) remove(ctx context.Context, cands []Candidate, reason string) (map[string]bool, error) {
	removed := map[string]bool{}
	var errs []error
	for _, c := range cands {
		m.log.Info("removing image to free bytes", "imageID", c.ID, "tags", c.Tags, "size", c.Size, "reason", reason)
		if err := m.ports.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.ID}); err != nil {
			errs = append(errs, fmt.Errorf("remove image %s: %w", c.ID, err))
			continue
		}
		removed[c.ID] = true
		if m.ports.Metrics != nil {
			m.ports.Metrics.ObserveImageGC(reason)
		}
	}
	if len(removed) > 0 {
		m.mu.Lock()
		for id := range removed {
			delete(m.records, id)
		}
		m.mu.Unlock()
		m.save()
	}
	return removed, errors.Join(errs...)
}

// without is cands less the removed ones.
func without(cands []Candidate, removed map[string]bool) []Candidate {
	var out []Candidate
	for _, c := range cands {
		if !removed[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// Records returns a copy of the records (for tests and debugging).
func (m *Manager) Records() Records {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(Records, len(m.records))
	for id, r := range m.records {
		out[id] = r
	}
	return out
}

// state is the state file's content.
type state struct {
	Images Records `json:"images"`
}

func (m *Manager) statePath() string {
	if m.cfg.StateDir == "" || m.ports.Files == nil {
		return ""
	}
	return filepath.Join(m.cfg.StateDir, StateFile)
}

// load reads the state file once, before the first detection.
func (m *Manager) load() error {
	m.mu.Lock()
	loaded := m.loaded
	m.loaded = true
	m.mu.Unlock()
	path := m.statePath()
	if loaded || path == "" {
		return nil
	}
	data, err := m.ports.Files.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	m.mu.Lock()
	for id, r := range st.Images {
		if _, ok := m.records[id]; !ok {
			m.records[id] = r
		}
	}
	m.mu.Unlock()
	return nil
}

// save writes the records to the state file (a temporary file renamed
// over it, so a crash leaves the old or the new one).
func (m *Manager) save() {
	path := m.statePath()
	if path == "" {
		return
	}
	m.mu.Lock()
	data, err := json.Marshal(state{Images: m.records})
	m.mu.Unlock()
	if err == nil {
		err = m.ports.Files.MkdirAll(m.cfg.StateDir)
	}
	if err == nil {
		err = m.ports.Files.CreateFile(path+".tmp", data, 0o600)
	}
	if err == nil {
		err = m.ports.Files.Rename(path+".tmp", path)
	}
	if err != nil {
		m.log.Warn("could not save the image GC state", "path", path, "error", err.Error())
	}
}

// nodeEvent records an event on the node.
func (m *Manager) nodeEvent(eventType, reason, message string) {
	if m.ports.Events == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: m.cfg.NodeName, UID: types.UID(m.cfg.NodeName)}
	m.ports.Events.Event(ref, eventType, reason, message)
}
