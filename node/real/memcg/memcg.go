// Package memcg is the real deps.MemoryThresholdNotifier: on cgroup v1 it
// registers an eventfd for the root memory cgroup's memory.usage_in_bytes
// through cgroup.event_control, as the kubelet's memcg threshold notifier
// does, so the eviction manager hears of a memory spike at once instead
// of at its next 10 s cycle.
//
// The eviction manager arms it for a working set (usage minus inactive
// file pages, what memory.available counts); the kernel's threshold is on
// usage, so each arming adds the current total_inactive_file of
// memory.stat, and the manager re-arms it every cycle as that moves.
// cgroup v2 has no cgroup.event_control (its memory.events report
// memory.high and memory.max breaches, not a usage threshold): there New
// fails and the daemon runs without the notifier, as the kubelet does.
package memcg

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// pollMillis bounds one wait of the poller, so that it sees re-arming and
// Close in time.
const pollMillis = 500

// Notifier watches one memory cgroup's usage against a threshold.
type Notifier struct {
	dir string

	mu        sync.Mutex
	efd, ufd  int    // the registered eventfd and usage file (-1: none)
	threshold uint64 // usage threshold registered (0: none)
	retired   []int  // descriptors the poller closes when it is not on them
	closed    bool

	fired chan struct{} // capacity 1: one pending crossing
	done  chan struct{}
}

var _ deps.MemoryThresholdNotifier = (*Notifier)(nil)

// New returns a notifier on the memory cgroup directory dir (the root of
// the v1 memory hierarchy, e.g. /sys/fs/cgroup/memory); it fails when dir
// is not a cgroup v1 memory cgroup.
func New(dir string) (*Notifier, error) {
	for _, f := range []string{"cgroup.event_control", "memory.usage_in_bytes", "memory.stat"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("memory threshold notifier on %s: %w", dir, err)
		}
	}
	n := &Notifier{dir: dir, efd: -1, ufd: -1, fired: make(chan struct{}, 1), done: make(chan struct{})}
	go n.poll()
	return n, nil
}

// SetThreshold arms the notifier for a working set above workingSet
// bytes: usage above workingSet plus the inactive file pages now.
func (n *Notifier) SetThreshold(workingSet uint64) error {
	inactive, err := inactiveFile(filepath.Join(n.dir, "memory.stat"))
	if err != nil {
		return err
	}
	usage := workingSet + inactive
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("memory threshold notifier closed")
	}
	if usage == n.threshold {
		return nil
	}
	efd, ufd, err := register(n.dir, usage)
	if err != nil {
		return err
	}
	if n.efd >= 0 {
		n.retired = append(n.retired, n.efd, n.ufd)
	}
	n.efd, n.ufd, n.threshold = efd, ufd, usage
	return nil
}

// Next blocks until the usage crossed the threshold (either way) since
// the last call, or until ctx ends.
func (n *Notifier) Next(ctx context.Context) error {
	select {
	case <-n.fired:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return errors.New("memory threshold notifier closed")
	}
}

// Close stops the notifier and releases its descriptors.
func (n *Notifier) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.closed {
		n.closed = true
		close(n.done)
	}
}

// register opens an eventfd that fires when the cgroup's usage crosses
// usage bytes.
func register(dir string, usage uint64) (efd, ufd int, err error) {
	efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, -1, fmt.Errorf("eventfd: %w", err)
	}
	usagePath := filepath.Join(dir, "memory.usage_in_bytes")
	ufd, err = unix.Open(usagePath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(efd)
		return -1, -1, fmt.Errorf("open %s: %w", usagePath, err)
	}
	ctl := filepath.Join(dir, "cgroup.event_control")
	if err := os.WriteFile(ctl, []byte(fmt.Sprintf("%d %d %d", efd, ufd, usage)), 0); err != nil {
		unix.Close(efd)
		unix.Close(ufd)
		return -1, -1, fmt.Errorf("register a usage threshold of %d bytes in %s: %w", usage, ctl, err)
	}
	return efd, ufd, nil
}

// poll waits on the current eventfd and passes each crossing to Next.
func (n *Notifier) poll() {
	for {
		n.mu.Lock()
		for _, fd := range n.retired {
			unix.Close(fd)
		}
		n.retired = nil
		if n.closed {
			if n.efd >= 0 {
				unix.Close(n.efd)
				unix.Close(n.ufd)
				n.efd, n.ufd = -1, -1
			}
			n.mu.Unlock()
			return
		}
		efd := n.efd
		n.mu.Unlock()
		if efd < 0 {
			unix.Poll(nil, pollMillis)
			continue
		}
		fds := []unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
		if k, err := unix.Poll(fds, pollMillis); err != nil || k == 0 || fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		var buf [8]byte
		if _, err := unix.Read(efd, buf[:]); err != nil {
			continue
		}
		select {
		case n.fired <- struct{}{}:
		default:
		}
	}
}

// inactiveFile reads total_inactive_file from a v1 memory.stat.
func inactiveFile(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if v, ok := bytes.CutPrefix(s.Bytes(), []byte("total_inactive_file ")); ok {
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: total_inactive_file %q: %w", path, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no total_inactive_file", path)
}
