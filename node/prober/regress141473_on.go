//go:build regress_141473

package prober

// regress141473: see regress141473.go. This build is deliberately broken.
const regress141473 = true

// firstVerdict carries a ready predecessor's readiness to the new
// instance, as if verdicts were kept per container name.
func firstVerdict(w *Worker) Result {
	if w.Type == Readiness && w.id != "" && w.last == Success && w.run >= w.Spec.SuccessThreshold {
		return Success
	}
	return initial(w.Type)
}
