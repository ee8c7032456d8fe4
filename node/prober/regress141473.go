//go:build !regress_141473

package prober

// regress141473 is false in every normal build; see firstVerdict.
const regress141473 = false

// firstVerdict is the verdict a new instance of w's container starts
// from: the initial one of its probe type, never its predecessor's.
// Built with the tag regress_141473 (tests only, never the daemon) it
// re-creates upstream bug kubernetes#141473: the readiness verdict of the
// previous instance is carried to its replacement.
func firstVerdict(w *Worker) Result { return initial(w.Type) }
