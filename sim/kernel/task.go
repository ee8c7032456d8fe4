package kernel

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"
)

type taskState int

const (
	stateReady taskState = iota
	stateRunning
	stateBlocked
	stateDone
)

// task is one simulated thread of the agent (or of the world around it).
type task struct {
	id        uint64
	name      string
	fn        func()
	wake      chan struct{}
	exited    chan struct{}
	state     taskState
	group     *Group
	waitingOn string
	since     time.Duration
	wakeErr   error
	timer     *timerEntry
	// sleepTimer is reused by every sleep of this task.
	sleepTimer timerEntry
	ctxLink    link
	sigLink    link
}

// Go starts fn as a new task, ready to run at the next scheduling point.
// Its trace name is name#id.
func (k *Kernel) Go(name string, fn func()) { k.spawn(name, fn, k.currentGroup()) }

func (k *Kernel) spawn(name string, fn func(), g *Group) {
	if k.stopping || g != nil && g.killed {
		return
	}
	k.nextID++
	t := &task{
		id:     k.nextID,
		name:   fmt.Sprintf("%s#%d", name, k.nextID),
		fn:     fn,
		group:  g,
		wake:   make(chan struct{}, 1),
		exited: make(chan struct{}),
		state:  stateReady,
	}
	k.live[t.id] = t
	k.ready = append(k.ready, t)
	k.rec.Record(k.Elapsed(), k.currentName(), "spawn", fieldTask(t.name))
	go k.runTask(t)
}

func (k *Kernel) runTask(t *task) {
	<-t.wake
	if k.stopping {
		close(t.exited)
		return
	}
	if t.killed() {
		k.finish(t, "killed")
		return
	}
	returned := false
	defer func() {
		v := recover()
		if k.stopping {
			// Ended by Close: nothing to report or schedule.
			t.state = stateDone
			close(t.exited)
			return
		}
		kind := "exit"
		switch {
		case returned:
		case v == nil && t.killed():
			kind = "killed"
		default:
			if v == nil {
				v = "runtime.Goexit called by the task"
			}
			k.fail("panic", t, fmt.Sprintf("task %s panicked: %v", t.name, v), string(debug.Stack()))
		}
		k.finish(t, kind)
	}()
	t.fn()
	returned = true
}

func (t *task) killed() bool { return t.group != nil && t.group.killed }

// finish retires t and hands the baton on.
func (k *Kernel) finish(t *task, kind string) {
	t.state = stateDone
	delete(k.live, t.id)
	k.rec.Record(k.Elapsed(), t.name, kind)
	close(t.exited)
	if next := k.pick(); next != nil {
		k.resume(next)
	} else {
		k.current = nil
		k.driverRun <- struct{}{}
	}
}

// panicGoexit ends the calling task's goroutine during Close; deferred calls
// run, and any blocking call they make ends it again.
func panicGoexit() { runtime.Goexit() }

func (k *Kernel) sortedLive() []*task {
	ts := make([]*task, 0, len(k.live))
	for _, t := range k.live {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *task) int { return int(a.id) - int(b.id) })
	return ts
}

// link is a task's place in one intrusive wait list.
type link struct {
	prev, next *task
	list       *waitList
}

// waitList is a FIFO of tasks waiting on one thing, with O(1) removal.
// Each task waits on at most one context and one signal at a time, so it
// carries one link for each.
type waitList struct {
	head, tail *task
	ofSignal   bool
}

func (l *waitList) link(t *task) *link {
	if l.ofSignal {
		return &t.sigLink
	}
	return &t.ctxLink
}

func (l *waitList) push(t *task) {
	ln := l.link(t)
	ln.list, ln.prev, ln.next = l, l.tail, nil
	if l.tail != nil {
		l.link(l.tail).next = t
	} else {
		l.head = t
	}
	l.tail = t
}

func (l *waitList) remove(t *task) {
	ln := l.link(t)
	if ln.prev != nil {
		l.link(ln.prev).next = ln.next
	} else {
		l.head = ln.next
	}
	if ln.next != nil {
		l.link(ln.next).prev = ln.prev
	} else {
		l.tail = ln.prev
	}
	*ln = link{}
}

func (l *waitList) popFront() *task {
	t := l.head
	if t != nil {
		l.remove(t)
	}
	return t
}

func (l *waitList) empty() bool { return l.head == nil }
