package harness

import (
	"context"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// oomKills is the simulated kernel log of OOM kills: scenarios script
// kills (SystemOOM) and the agent's OOM watcher reads them. Like /dev/kmsg it outlives agent restarts; a kill nobody reads
// waits for the next agent.
type oomKills struct{ inbox *deps.Inbox[deps.OOMKill] }

func (o oomKills) Next(ctx context.Context) (deps.OOMKill, error) { return o.inbox.Get(ctx) }

// SystemOOM scripts a kernel OOM kill of a process outside every
// container (a SystemOOM node event).
func (h *Harness) SystemOOM(process string, pid int) {
	h.ooms.inbox.Put(deps.OOMKill{Process: process, PID: pid, VictimCgroup: "/", Cgroup: "/"})
}
