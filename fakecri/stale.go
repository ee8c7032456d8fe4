package fakecri

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stale lists are exact: every object keeps the times of its state changes
// (created, started, finished/stopped, removed) and removed objects stay as
// tombstones for the stale retention, so the state as of any instant in
// that window can be recomputed.

// listTime is the instant lists answer for, and whether it is in the past.
func (r *Runtime) listTime(now int64) (int64, bool) {
	if r.faults.staleness <= 0 {
		return now, false
	}
	return addSat(now, -durNS(r.faults.staleness)), true
}

// stateAt is sb's state at t (its current state unless stale), and whether
// it existed then.
func (sb *sandbox) stateAt(t int64, stale bool) (runtimeapi.PodSandboxState, bool) {
	if !stale {
		return sb.state, !sb.removed
	}
	if sb.createdAt > t || (sb.removed && sb.removedAt <= t) {
		return notReady, false
	}
	if sb.stoppedAt != 0 && sb.stoppedAt <= t {
		return notReady, true
	}
	return readyState, true
}

// stateAt is c's state at t (its current state unless stale), and whether
// it existed then.
func (c *container) stateAt(t int64, stale bool) (runtimeapi.ContainerState, bool) {
	if !stale {
		return c.state, !c.removed
	}
	if c.createdAt > t || (c.removed && c.removedAt <= t) {
		return createdState, false
	}
	if c.finishedAt != 0 && c.finishedAt <= t {
		return exitedState, true
	}
	if c.startedAt != 0 && c.startedAt <= t {
		return runningState, true
	}
	return createdState, true
}

// findSandboxAt resolves a list filter's sandbox ID (or unique prefix)
// among the sandboxes that existed at t; nil if none or ambiguous.
func (r *Runtime) findSandboxAt(id string, t int64, stale bool) *sandbox {
	if !stale {
		sb, err := r.getSandbox(id)
		if err != nil {
			return nil
		}
		return sb
	}
	var found *sandbox
	for _, sb := range r.sandboxOrder {
		if _, ok := sb.stateAt(t, true); ok && strings.HasPrefix(sb.id, id) {
			if sb.id == id {
				return sb
			}
			if found != nil {
				return nil
			}
			found = sb
		}
	}
	return found
}

// findContainerAt resolves a list filter's container ID (or unique prefix)
// among the containers that existed at t; nil if none or ambiguous.
func (r *Runtime) findContainerAt(id string, t int64, stale bool) *container {
	if !stale {
		c, err := r.getContainer(id)
		if err != nil {
			return nil
		}
		return c
	}
	var found *container
	for _, c := range r.containerOrder {
		if _, ok := c.stateAt(t, true); ok && strings.HasPrefix(c.id, id) {
			if c.id == id {
				return c
			}
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// containersAt returns the candidates of a container list: by ID, by
// sandbox, by the pod UID label of selector (from the per-pod index, for a
// current view), or all, in creation order. ok is false when the filter
// matches nothing. The caller still applies the rest of the filter.
func (r *Runtime) containersAt(id, sandboxID string, selector map[string]string, t int64, stale bool) ([]*container, bool) {
	var sb *sandbox
	if sandboxID != "" {
		if sb = r.findSandboxAt(sandboxID, t, stale); sb == nil {
			return nil, false
		}
	}
	if id != "" {
		c := r.findContainerAt(id, t, stale)
		if c == nil || (sb != nil && c.sb != sb) {
			return nil, false
		}
		return []*container{c}, true
	}
	if sb == nil {
		if e, ok := r.indexedPod(selector); ok && !stale {
			return e.containers, true
		}
		return r.containerOrder, true
	}
	if !stale {
		return sb.containers, true
	}
	var out []*container
	for _, c := range r.containerOrder {
		if c.sb == sb {
			out = append(out, c)
		}
	}
	return out, true
}
