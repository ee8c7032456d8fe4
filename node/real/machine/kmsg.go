package machine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// DefaultKmsg is the kernel log device.
const DefaultKmsg = "/dev/kmsg"

// Kernel log lines of an OOM kill (Linux 4.19+ prints the first with the
// cgroups, then the second; older kernels only the second).
var (
	oomKillLine    = regexp.MustCompile(`oom-kill:.*?(?:oom_memcg=([^,]*),)?task_memcg=([^,]*),task=([^,]*),pid=(\d+)`)
	killedProcLine = regexp.MustCompile(`(?:Out of memory|Memory cgroup out of memory): Kill(?:ed)? process (\d+) \(([^)]*)\)`)
)

// OOMParser turns kernel log lines into OOM kills.
type OOMParser struct {
	pending *deps.OOMKill
}

// Line reads one /dev/kmsg record ("prio,seq,time,flags;message") or a
// bare message, and returns the kill it completes, if any.
func (p *OOMParser) Line(line string) (deps.OOMKill, bool) {
	if _, msg, ok := strings.Cut(line, ";"); ok {
		line = msg
	}
	if m := oomKillLine.FindStringSubmatch(line); m != nil {
		pid, _ := strconv.Atoi(m[4])
		cg := m[1]
		if cg == "" {
			cg = "/" // a global OOM
		}
		p.pending = &deps.OOMKill{Cgroup: cg, VictimCgroup: m[2], Process: m[3], PID: pid}
		return deps.OOMKill{}, false
	}
	m := killedProcLine.FindStringSubmatch(line)
	if m == nil {
		return deps.OOMKill{}, false
	}
	pid, _ := strconv.Atoi(m[1])
	k := deps.OOMKill{Process: m[2], PID: pid, VictimCgroup: "/", Cgroup: "/"}
	if p.pending != nil && p.pending.PID == pid {
		k = *p.pending
	}
	p.pending = nil
	return k, true
}

// KmsgOOMKills reads OOM kills from the kernel log, from the moment it is
// opened on.
type KmsgOOMKills struct {
	f     *os.File
	kills chan deps.OOMKill
	err   chan error
}

// OpenKmsg opens the kernel log device (DefaultKmsg when path is "") at
// its end and starts reading it; an error means it cannot be read (not
// root, no such device), and the caller goes without.
func OpenKmsg(path string) (*KmsgOOMKills, error) {
	if path == "" {
		path = DefaultKmsg
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open kernel log: %w", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek to the end of the kernel log %s: %w", path, err)
	}
	k := &KmsgOOMKills{f: f, kills: make(chan deps.OOMKill, 16), err: make(chan error, 1)}
	go k.read()
	return k, nil
}

// read parses records until the device fails (each read of /dev/kmsg
// returns one record).
func (k *KmsgOOMKills) read() {
	var p OOMParser
	r := bufio.NewReaderSize(k.f, 8192)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			k.err <- fmt.Errorf("read kernel log: %w", err)
			return
		}
		if kill, ok := p.Line(strings.TrimRight(line, "\n")); ok {
			k.kills <- kill
		}
	}
}

// Next returns the next OOM kill.
func (k *KmsgOOMKills) Next(ctx context.Context) (deps.OOMKill, error) {
	select {
	case kill := <-k.kills:
		return kill, nil
	case err := <-k.err:
		return deps.OOMKill{}, err
	case <-ctx.Done():
		return deps.OOMKill{}, ctx.Err()
	}
}

// Close stops reading.
func (k *KmsgOOMKills) Close() error { return k.f.Close() }
