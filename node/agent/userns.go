package agent

import (
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/node/userns"
)

// newUserNamespaces returns the user namespace allocator over the pods'
// directories, with upstream's default node range (nil without files, or
// when the range cannot hold maxPods pods: hostUsers: false pods then
// fail with a clear error).
func newUserNamespaces(d deps.Deps, cfg Config) *userns.Manager {
	if d.Files == nil {
		return nil
	}
	maxPods := cfg.NodeStatus.MaxPods
	if maxPods <= 0 {
		maxPods = nodestatus.DefaultMaxPods
	}
	m, err := userns.New(d.Core, d.Files, userns.Config{RootDir: cfg.Node.RootDir, MaxPods: maxPods})
	if err != nil {
		d.Log.Error("user namespaces disabled", "error", err.Error())
		return nil
	}
	return m
}

// usernsPort is m as the executor's port (a nil interface for nil).
func usernsPort(m *userns.Manager) runtimesync.UserNamespaces {
	if m == nil {
		return nil
	}
	return m
}
