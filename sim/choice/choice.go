// Package choice provides the simulator's sources of choices: which ready
// task runs next, which fault strikes, every random draw. A seeded source
// replays a run from its seed; a rapid-backed source lets rapid shrink the
// schedule and the faults themselves.
package choice

import (
	"math/rand/v2"

	"pgregory.net/rapid"
)

// Source picks among n possibilities.
type Source interface {
	// IntN returns an integer in [0, n); n must be > 0.
	IntN(n int) int
}

// Seeded is a PCG stream seeded explicitly: the same seed gives the same
// choices on every machine.
type Seeded struct{ r *rand.Rand }

// NewSeeded returns the choice stream for seed.
func NewSeeded(seed uint64) *Seeded {
	return &Seeded{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// IntN returns a uniform integer in [0, n).
func (s *Seeded) IntN(n int) int { return s.r.IntN(n) }

// First always picks 0: the oldest ready task, the first option. It gives
// the FIFO schedule, useful to test ordering rules in isolation.
type First struct{}

// IntN returns 0.
func (First) IntN(int) int { return 0 }

// Rapid draws every choice from a rapid test, so that rapid's shrinking
// minimises the choices (the schedule, the faults) rather than a seed.
type Rapid struct {
	T     *rapid.T
	Label string
}

// IntN draws an integer in [0, n) from rapid.
func (s Rapid) IntN(n int) int {
	if n == 1 {
		return 0
	}
	label := s.Label
	if label == "" {
		label = "choice"
	}
	return rapid.IntRange(0, n-1).Draw(s.T, label)
}
