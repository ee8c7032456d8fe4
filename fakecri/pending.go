package fakecri

// FaultsPending reports whether an injected latency, error or hang still
// waits for the calls it will slow, fail or hold: such a fault acts only
// when a caller makes the call, perhaps long after it was injected, so an
// invariant checker that bounds how fast the caller reacts excuses it
// until then. Lists set to lag the truth (SetListStaleness) count too:
// the caller sees a change only that much later.
func (r *Runtime) FaultsPending() bool {
	r.mu.Lock()
	defer r.unlock()
	f := &r.faults
	return len(f.latencies) > 0 || len(f.errs) > 0 || len(f.hangs) > 0 || f.staleness > 0
}
