package backoff

import (
	"math"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Curve is a retry back-off curve: the n-th consecutive failure waits
// Initial·Factorⁿ⁻¹, capped at Max, less a random part of up to Jitter of
// that delay. Next walks the curve failure by failure and Reset starts it
// again; Delay answers for any failure count without moving. A Curve is
// not safe for concurrent use.
type Curve struct {
	// Initial is the delay after the first failure.
	Initial time.Duration
	// Factor multiplies the delay after each further failure (0 or less
	// means 2; 1 keeps it constant).
	Factor int
	// Max caps the delay (0 or less: no cap).
	Max time.Duration
	// Jitter, in [0, 1], is the largest fraction of a delay taken off it
	// at random, drawn from Rand: a delay d becomes uniform in
	// [d - Jitter·d, d]. 0 (or a nil Rand) means no jitter.
	Jitter float64
	// Rand is the randomness the jitter draws from.
	Rand deps.Rand

	failures int
}

// Next counts one more failure and returns the delay it waits.
func (c *Curve) Next() time.Duration {
	c.failures++
	return c.Delay(c.failures)
}

// Reset starts the curve again: the next failure is a first one.
func (c *Curve) Reset() { c.failures = 0 }

// Failures is the number of failures counted since the last Reset.
func (c *Curve) Failures() int { return c.failures }

// Delay returns the delay after the n-th consecutive failure, jittered;
// 0 when n < 1.
func (c *Curve) Delay(n int) time.Duration {
	if n < 1 || c.Initial <= 0 {
		return 0
	}
	factor := time.Duration(c.Factor)
	if factor <= 0 {
		factor = 2
	}
	limit := c.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	d := min(c.Initial, limit)
	for i := 1; i < n && d < limit && factor > 1; i++ {
		if d > limit/factor {
			d = limit
			break
		}
		d *= factor
	}
	return c.jitter(min(d, limit))
}

// jitter takes a random part of up to Jitter of d off it.
func (c *Curve) jitter(d time.Duration) time.Duration {
	if c.Jitter <= 0 || c.Rand == nil {
		return d
	}
	spread := time.Duration(float64(d) * min(c.Jitter, 1))
	return d - spread + time.Duration(c.Rand.IntN(int(spread)+1))
}
