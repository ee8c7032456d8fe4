package kernel

import (
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Group is a set of tasks that can be killed together, like the threads of
// one process: the simulator crashes an agent by killing its group. Tasks
// started by a task join its group.
type Group struct {
	name   string
	killed bool
}

// NewGroup returns an empty task group.
func (k *Kernel) NewGroup(name string) *Group { return &Group{name: name} }

// Name is the group's name.
func (g *Group) Name() string { return g.name }

// TasksIn returns a deps.Tasks whose Go starts tasks in g, also when called
// from the driver or from a task of another group.
func (k *Kernel) TasksIn(g *Group) deps.Tasks { return groupTasks{tasksView{k}, g} }

type groupTasks struct {
	tasksView
	g *Group
}

func (v groupTasks) Go(name string, fn func()) { v.k.spawn(name, fn, v.g) }

func (v groupTasks) AfterFunc(name string, d time.Duration, fn func()) deps.Timer {
	return v.k.afterFunc(name, d, fn, v.g)
}

// WithCancel is the kernel's.
func (v groupTasks) WithCancel(parent context.Context) (context.Context, context.CancelFunc) {
	return v.k.WithCancel(parent)
}

// KillGroup ends every task of g at once, as a crash would: each one stops
// where it waits (its deferred calls run), tasks not yet started never run,
// and g's pending delayed tasks never start. Call it between runs.
func (k *Kernel) KillGroup(g *Group) {
	if k.current != nil {
		panic("sim: KillGroup called from inside a task")
	}
	g.killed = true
	k.Record("kill-group", fieldGroup(g.name))
	for _, t := range k.sortedLive() {
		if t.group == g && t.state == stateBlocked {
			k.wakeTask(t, context.Canceled)
		}
	}
}

// currentGroup is the group new tasks join: the running task's.
func (k *Kernel) currentGroup() *Group {
	if k.current != nil {
		return k.current.group
	}
	return nil
}
