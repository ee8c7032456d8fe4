package kernel

import "github.com/lockstep-dev/lockstep/node/deps"

// Deps returns the time, randomness, concurrency and logging parts of the
// injected world backed by this kernel; the caller fills in the ports.
func (k *Kernel) Deps() deps.Deps {
	return deps.Deps{Core: deps.Core{Clock: k, Rand: k.Rand(), Tasks: k.Tasks(), Log: k.Logger()}}
}
