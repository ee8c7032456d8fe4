package fakecri

import (
	"container/heap"
	"math"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exit codes and reasons, as containerd reports them.
const (
	exitKilled     = 137 // SIGKILL: timeout ran out, or OOM
	exitTerminated = 143 // SIGTERM with the default action
	exitStartError = 128

	reasonCompleted  = "Completed"
	reasonError      = "Error"
	reasonOOMKilled  = "OOMKilled"
	reasonStartError = "StartError"
)

// exitReason is containerd's reason for a normal exit.
func exitReason(code int32) string {
	if code == 0 {
		return reasonCompleted
	}
	return reasonError
}

// timeHeap orders containers by one of their scheduled times, then by
// creation order; K says which time, and which index the container keeps
// its place in. Its methods implement container/heap.Interface.
type timeHeap[K heapKey] []*container

// heapKey selects a container's time and heap index for a timeHeap.
type heapKey interface {
	at(c *container) int64
	index(c *container) *int
}

// exitKey orders by scheduled exit.
type exitKey struct{}

func (exitKey) at(c *container) int64   { return c.exitAt }
func (exitKey) index(c *container) *int { return &c.exitIdx }

// logKey orders by the next periodic log line.
type logKey struct{}

func (logKey) at(c *container) int64   { return c.logNext }
func (logKey) index(c *container) *int { return &c.logIdx }

// Len is the number of queued containers.
func (h timeHeap[K]) Len() int { return len(h) }

// Less orders by time, then creation.
func (h timeHeap[K]) Less(i, j int) bool {
	var k K
	if a, b := k.at(h[i]), k.at(h[j]); a != b {
		return a < b
	}
	return h[i].seq < h[j].seq
}

// Swap swaps two entries and their indexes.
func (h timeHeap[K]) Swap(i, j int) {
	var k K
	h[i], h[j] = h[j], h[i]
	*k.index(h[i]), *k.index(h[j]) = i, j
}

// Push appends a container.
func (h *timeHeap[K]) Push(x any) {
	var k K
	c := x.(*container)
	*k.index(c) = len(*h)
	*h = append(*h, c)
}

// Pop removes the last container.
func (h *timeHeap[K]) Pop() any {
	var k K
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	*k.index(c) = -1
	return c
}

// plan (re)computes when a running container exits next and why: the
// earliest of its scripted exit, its OOM kill, the end of a graceful stop
// and the SIGKILL deadline (ties in that order).
func (r *Runtime) plan(c *container) {
	if c.state != runningState {
		if c.exitIdx >= 0 {
			heap.Remove(&r.exits, c.exitIdx)
		}
		return
	}
	found := false
	var at int64
	var code int32
	var reason string
	consider := func(t int64, cd int32, why string) {
		if !found || t < at {
			found, at, code, reason = true, t, cd, why
		}
	}
	s := c.script
	if s.hasExit {
		consider(addSat(c.startedAt, durNS(s.exitAfter)), s.exitCode, exitReason(s.exitCode))
	}
	if t, ok := c.oomAt(); ok {
		consider(t, exitKilled, reasonOOMKilled)
	}
	if c.termAt != 0 && !s.ignoreSigterm {
		if s.hasStopDelay {
			consider(addSat(c.termAt, durNS(s.stopDelay)), 0, reasonCompleted)
		} else {
			consider(c.termAt, exitTerminated, reasonError)
		}
	}
	if c.killAt != 0 {
		consider(c.killAt, exitKilled, reasonError)
	}
	if !found {
		if c.exitIdx >= 0 {
			heap.Remove(&r.exits, c.exitIdx)
		}
		return
	}
	c.exitAt, c.nextCode, c.nextReason = at, code, reason
	r.touched(c.sb)
	if c.exitIdx >= 0 {
		heap.Fix(&r.exits, c.exitIdx)
	} else {
		heap.Push(&r.exits, c)
	}
}

// unschedule takes c out of both heaps.
func (r *Runtime) unschedule(c *container) {
	if c.exitIdx >= 0 {
		heap.Remove(&r.exits, c.exitIdx)
	}
	if c.logIdx >= 0 {
		heap.Remove(&r.logs, c.logIdx)
	}
}

// advance applies every scheduled exit and log line due at or before now,
// in time order. Every call that looks at state calls it first.
func (r *Runtime) advance(now int64) {
	for len(r.exits) > 0 && r.exits[0].exitAt <= now {
		c := r.exits[0]
		r.finish(c, c.exitAt, c.nextCode, c.nextReason, "")
	}
	for len(r.logs) > 0 && r.logs[0].logNext <= now {
		r.writeLogs(r.logs[0], now)
	}
}

// nextExit returns the earliest scheduled exit, if any.
func (r *Runtime) nextExit() (int64, bool) {
	if len(r.exits) == 0 {
		return 0, false
	}
	return r.exits[0].exitAt, true
}

// start makes c RUNNING at now and schedules its script.
func (r *Runtime) start(c *container, now int64) {
	c.state, c.startedAt = runningState, now
	r.gen++
	if c.script.hasLog && c.logPath != "" {
		c.logNext = now
		heap.Push(&r.logs, c)
	}
	r.writeTerminationMessage(c)
	r.plan(c)
	r.touched(c.sb)
	r.emitContainerEvent(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, now)
}

// annotationTerminationMessagePath is the annotation where kubelets name
// a container's terminationMessagePath.
const annotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"

// writeTerminationMessage writes FAKECRI_TERMINATION_MESSAGE, if scripted,
// into the host file mounted at the container's terminationMessagePath
// (as its process would write it there before it exits); without such a
// mount the message stays inside the container, where nobody reads it.
func (r *Runtime) writeTerminationMessage(c *container) {
	if !c.script.hasTermMessage {
		return
	}
	path := c.config.GetAnnotations()[annotationTerminationMessagePath]
	for _, m := range c.config.GetMounts() {
		if path != "" && m.GetContainerPath() == path {
			// A write that fails is the container's problem, as a full
			// disk would be: the message is just missing.
			_ = r.files.AppendFile(m.GetHostPath(), []byte(c.script.termMessage))
			return
		}
	}
}

// finish makes c EXITED at time at.
func (r *Runtime) finish(c *container, at int64, code int32, reason, message string) {
	if c.logIdx >= 0 {
		r.writeLogs(c, at)
	}
	r.unschedule(c)
	c.state, c.finishedAt = exitedState, at
	c.exitCode, c.reason, c.message = code, reason, message
	r.gen++
	r.touched(c.sb)
	r.emitContainerEvent(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, at)
}

// failStart makes a container that could not start EXITED with StartError.
func (r *Runtime) failStart(c *container, at int64, message string) {
	r.unschedule(c)
	c.state, c.finishedAt = exitedState, at
	c.exitCode, c.reason, c.message = exitStartError, reasonStartError, message
	r.gen++
	r.touched(c.sb)
	r.emitContainerEvent(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, at)
}

// oomAt is the first instant the working set exceeds the memory limit
// (not before the limit was set).
func (c *container) oomAt() (int64, bool) {
	limit := c.memoryLimit()
	if limit == 0 {
		return 0, false
	}
	s := c.script
	at := c.startedAt
	if s.memory <= limit {
		if s.growthBytes == 0 {
			return 0, false
		}
		// Smallest dt with memory + floor(growthBytes*dt/growthPer) > limit.
		dt := mulDivCeil(limit-s.memory+1, uint64(s.growthPer), s.growthBytes)
		if dt > math.MaxInt64 {
			return 0, false
		}
		at = addSat(c.startedAt, int64(dt))
	}
	return max(at, c.limitSince), true
}

// memoryAt is the working set at t, for a container running at t.
func (c *container) memoryAt(t int64) uint64 {
	s := c.script
	if s.growthBytes == 0 || t <= c.startedAt {
		return s.memory
	}
	return addSatU(s.memory, mulDiv(s.growthBytes, uint64(t-c.startedAt), uint64(s.growthPer)))
}

// cpuAt is the cumulative CPU time in core-nanoseconds at t.
func (c *container) cpuAt(t int64) uint64 {
	end := t
	if c.finishedAt != 0 && c.finishedAt < end {
		end = c.finishedAt
	}
	if c.startedAt == 0 || end <= c.startedAt {
		return 0
	}
	return mulDiv(c.script.cpuMilli, uint64(end-c.startedAt), 1000)
}

// maxLogBatch bounds how many log lines one evaluation writes; older due
// lines beyond it are dropped, as a log driver under pressure would.
const maxLogBatch = 100_000

// writeLogs writes c's log lines due up to upTo to its log file, in the
// CRI log format.
func (r *Runtime) writeLogs(c *container, upTo int64) {
	s := c.script
	var buf []byte
	for n := 0; c.logNext <= upTo; n++ {
		if n == maxLogBatch && s.logEvery > 0 {
			skip := (upTo-c.logNext)/durNS(s.logEvery) + 1
			c.logLines += uint64(skip)
			c.logNext = addSat(c.logNext, skip*durNS(s.logEvery))
			break
		}
		line := s.logLine
		if strings.Contains(line, "{n}") {
			line = strings.ReplaceAll(line, "{n}", strconv.FormatUint(c.logLines+1, 10))
		}
		buf = appendLogLine(buf, c.logNext, "stdout", line)
		c.logLines++
		if s.logEvery == 0 {
			c.logNext = math.MaxInt64
			break
		}
		c.logNext = addSat(c.logNext, durNS(s.logEvery))
	}
	if len(buf) > 0 && r.files.AppendFile(c.logPath, buf) == nil {
		c.logBytes += uint64(len(buf))
	}
	if c.logIdx >= 0 {
		if c.logNext == math.MaxInt64 {
			heap.Remove(&r.logs, c.logIdx)
		} else {
			heap.Fix(&r.logs, c.logIdx)
		}
	}
}

// appendLogLine appends one full line in the CRI log format:
// "2016-10-06T00:17:09.669794202Z stdout F message\n".
func appendLogLine(buf []byte, at int64, stream, line string) []byte {
	buf = time.Unix(0, at).UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, " F "...)
	buf = append(buf, line...)
	return append(buf, '\n')
}
