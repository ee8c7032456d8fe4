package main

import "math/rand/v2"

// Sample draws at most max mutants of ms (all of them if max <= 0), in an
// order shuffled by seed: the same seed and the same mutants give the same
// sample in the same order, and a run cut short by its budget has judged
// a uniform sample rather than the first files. ms is not modified.
func Sample(ms []Mutant, max int, seed uint64) []Mutant {
	out := append([]Mutant(nil), ms...)
	r := rand.New(rand.NewPCG(seed, 0x6d757461)) // "muta"
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out
}
