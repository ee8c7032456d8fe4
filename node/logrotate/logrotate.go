// Package logrotate rotates the logs of running containers, as the
// kubelet's container log manager: every monitor interval the running
// containers are queued for a pool of workers; a worker rotates a log that
// reached its maximum size by renaming it to "<log>.<timestamp>" and
// asking the runtime to reopen it (CRI ReopenContainerLog), after
// compressing the older rotated files to ".gz" (the newest rotated file
// stays plain) and removing those beyond the maximum number of files.
//
// Which files to remove and compress is a pure function (Plan); the
// Manager does the I/O through deps.Files and the CRI.
package logrotate

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// The kubelet's defaults (containerLogMaxSize, containerLogMaxFiles,
// containerLogMaxWorkers, containerLogMonitorInterval).
const (
	DefaultMaxSize  = 10 << 20
	DefaultMaxFiles = 5
	DefaultWorkers  = 1
	DefaultInterval = 10 * time.Second
)

// TimestampFormat names a rotated file: "<log>.20060102-150405".
const TimestampFormat = "20060102-150405"

// Suffixes of compressed rotated files and of a compression under way.
const (
	CompressSuffix = ".gz"
	TmpSuffix      = ".tmp"
)

// Config is the rotation policy; zero fields take the kubelet's defaults.
type Config struct {
	// MaxSize is the size at which a log is rotated; negative turns
	// rotation off.
	MaxSize int64
	// MaxFiles is how many files a container's log may have, the current
	// one included (at least 2).
	MaxFiles int
	// Workers is how many containers are rotated at once.
	Workers int
	// Interval is how often the running containers are checked.
	Interval time.Duration
}

// WithDefaults is c with its zero fields set to the kubelet's defaults.
func (c Config) WithDefaults() Config {
	if c.MaxSize == 0 {
		c.MaxSize = DefaultMaxSize
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	return c
}

// Validate checks the policy as the kubelet does.
func (c Config) Validate() error {
	if c.MaxFiles < 2 {
		return fmt.Errorf("invalid MaxFiles %d, must be > 1", c.MaxFiles)
	}
	return nil
}

// Runtime is the part of the CRI runtime service rotation uses.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Rotated lists a log's rotated files ("<log>.*"), sorted by name
// (oldest first).
func Rotated(files deps.Files, log string) ([]string, error) {
	dir, base := path.Split(log)
	entries, err := files.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list rotated logs of %s: %w", log, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), base+".") {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// Plan decides, before a rotation, what to do with a log's rotated files
// (sorted oldest first): remove the leftovers (temporary files of an
// interrupted compression, a plain file whose compressed copy exists) and
// the oldest beyond maxFiles-2 (the rotation adds one, the current log is
// the last), and compress the plain ones kept.
func Plan(rotated []string, maxFiles int) (remove, compress []string) {
	var inUse []string
	for _, l := range rotated {
		if strings.HasSuffix(l, TmpSuffix) || (!strings.HasSuffix(l, CompressSuffix) && slices.Contains(rotated, l+CompressSuffix)) {
			remove = append(remove, l)
			continue
		}
		inUse = append(inUse, l)
	}
	keep := max(maxFiles-2, 0)
	if excess := len(inUse) - keep; excess > 0 {
		remove = append(remove, inUse[:excess]...)
		inUse = inUse[excess:]
	}
	for _, l := range inUse {
		if !strings.HasSuffix(l, CompressSuffix) {
			compress = append(compress, l)
		}
	}
	return remove, compress
}

// Manager rotates the logs of running containers.
type Manager struct {
	d       deps.Core
	runtime Runtime
	files   deps.Files
	cfg     Config
	log     *slog.Logger
	queue   *deps.Inbox[string]

	mu     sync.Mutex
	queued map[string]bool
}

// New returns a Manager; nothing runs until Start.
func New(d deps.Core, runtime Runtime, files deps.Files, cfg Config) *Manager {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{d: d, runtime: runtime, files: files, cfg: cfg.WithDefaults(), log: log.With("component", "logrotate"),
		queue: deps.NewInbox[string](d.Tasks, "log rotation queue"), queued: map[string]bool{}}
}

// Start spawns the monitor ("log rotation monitor", every Interval) and
// the workers ("log rotation worker <n>"); they stop when ctx ends. A
// negative MaxSize starts nothing.
func (m *Manager) Start(ctx context.Context) {
	if m.cfg.MaxSize < 0 {
		return
	}
	m.log.Info("starting container log rotation", "workers", m.cfg.Workers, "interval", m.cfg.Interval,
		"maxSize", m.cfg.MaxSize, "maxFiles", m.cfg.MaxFiles)
	for i := range m.cfg.Workers {
		m.d.Tasks.Go(fmt.Sprintf("log rotation worker %d", i+1), func() {
			for {
				id, err := m.queue.Get(ctx)
				if err != nil {
					return
				}
				m.mu.Lock()
				delete(m.queued, id)
				m.mu.Unlock()
				if err := m.RotateIfNeeded(ctx, id); err != nil && ctx.Err() == nil {
					m.log.Warn("container log rotation failed", "containerID", id, "error", err.Error())
				}
			}
		})
	}
	m.d.Tasks.Go("log rotation monitor", func() {
		t := m.d.Tasks.NewTicker("log rotation", m.cfg.Interval)
		defer t.Stop()
		for t.Wait(ctx) == nil {
			if err := m.enqueueRunning(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("listing containers for log rotation failed", "error", err.Error())
			}
		}
	})
}

// enqueueRunning queues every running container not already queued.
func (m *Manager) enqueueRunning(ctx context.Context) error {
	cs, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		m.mu.Lock()
		fresh := !m.queued[c.GetId()]
		m.queued[c.GetId()] = true
		m.mu.Unlock()
		if fresh {
			m.queue.Put(c.GetId())
		}
	}
	return nil
}

// RotateIfNeeded rotates container id's log if it reached MaxSize; a log
// file that vanished is reopened.
func (m *Manager) RotateIfNeeded(ctx context.Context, id string) error {
	resp, err := m.runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return fmt.Errorf("status of container %s: %w", id, err)
	}
	log := resp.GetStatus().GetLogPath()
	if log == "" || resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil
	}
	info, err := m.files.Stat(log)
	if errors.Is(err, fs.ErrNotExist) {
		if err := m.runtime.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("reopen missing log %s of container %s: %w", log, id, err)
		}
		info, err = m.files.Stat(log)
	}
	if err != nil {
		return fmt.Errorf("stat log %s of container %s: %w", log, id, err)
	}
	if info.Size() < m.cfg.MaxSize {
		return nil
	}
	return m.rotate(ctx, id, log, info.Mode().Perm())
}

// rotate removes and compresses the old rotated files as Plan says, then
// renames the log and has the runtime reopen it.
func (m *Manager) rotate(ctx context.Context, id, log string, perm fs.FileMode) error {
	rotated, err := Rotated(m.files, log)
	if err != nil {
		return err
	}
	remove, compress := Plan(rotated, m.cfg.MaxFiles)
	for _, l := range remove {
		if err := m.files.Remove(l); err != nil {
			return fmt.Errorf("remove old log %s of container %s: %w", l, id, err)
		}
	}
	for _, l := range compress {
		if err := m.compress(l, perm); err != nil {
			return fmt.Errorf("compress log %s of container %s: %w", l, id, err)
		}
	}
	to := log + "." + m.d.Clock.Now().UTC().Format(TimestampFormat)
	if err := m.files.Rename(log, to); err != nil {
		return fmt.Errorf("rotate log %s of container %s to %s: %w", log, id, to, err)
	}
	if err := m.runtime.ReopenContainerLog(ctx, id); err != nil {
		// The runtime still writes the renamed file: give it its name
		// back, as the kubelet does (the next check tries again).
		if rerr := m.files.Rename(to, log); rerr != nil {
			m.log.Warn("could not restore a rotated log", "from", to, "to", log, "error", rerr.Error())
		}
		return fmt.Errorf("reopen log of container %s: %w", id, err)
	}
	m.log.Info("rotated container log", "containerID", id, "log", log, "rotated", to)
	return nil
}

// compress writes l gzipped to l.gz (through a temporary file renamed
// into place) and removes l.
func (m *Manager) compress(l string, perm fs.FileMode) error {
	data, err := m.files.ReadFile(l)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	tmp := l + TmpSuffix
	if err := m.files.CreateFile(tmp, buf.Bytes(), perm); err != nil {
		return err
	}
	if err := m.files.Rename(tmp, l+CompressSuffix); err != nil {
		_ = m.files.Remove(tmp)
		return err
	}
	return m.files.Remove(l)
}
