package backoff

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// walk returns the next n delays of c.
func walk(c *Curve, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, c.Next())
	}
	return out
}

func secs(vs ...float64) []time.Duration {
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = time.Duration(v * float64(time.Second))
	}
	return out
}

func TestCurveShapes(t *testing.T) {
	tests := []struct {
		name  string
		curve Curve
		want  []time.Duration
	}{
		{"doubling to a cap", Curve{Initial: time.Second, Max: 30 * time.Second}, secs(1, 2, 4, 8, 16, 30, 30)},
		{"cap not a power of two", Curve{Initial: 200 * time.Millisecond, Max: 7 * time.Second}, secs(0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 7, 7)},
		{"factor 3", Curve{Initial: time.Second, Factor: 3, Max: time.Minute}, secs(1, 3, 9, 27, 60, 60)},
		{"factor 1 is constant", Curve{Initial: 5 * time.Second, Factor: 1, Max: time.Minute}, secs(5, 5, 5)},
		{"initial above the cap", Curve{Initial: 10 * time.Second, Max: 4 * time.Second}, secs(4, 4)},
		{"zero value waits nothing", Curve{}, secs(0, 0)},
	}
	for _, tt := range tests {
		c := tt.curve
		if diff := cmp.Diff(tt.want, walk(&c, len(tt.want))); diff != "" {
			t.Errorf("%s: delays (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestCurveResetAndDelay(t *testing.T) {
	c := Curve{Initial: time.Second, Max: time.Minute}
	walk(&c, 4)
	if c.Failures() != 4 {
		t.Errorf("Failures = %d, want 4", c.Failures())
	}
	c.Reset()
	if d := c.Next(); d != time.Second {
		t.Errorf("first delay after Reset = %v, want 1s", d)
	}
	for n, want := range map[int]time.Duration{-1: 0, 0: 0, 1: time.Second, 3: 4 * time.Second, 100: time.Minute, 1 << 40: time.Minute} {
		if got := c.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	if c.Failures() != 1 {
		t.Errorf("Delay moved the curve: Failures = %d, want 1", c.Failures())
	}
}

func TestCurveWithoutCapSaturates(t *testing.T) {
	c := Curve{Initial: time.Hour}
	if d := c.Delay(200); d <= 0 {
		t.Errorf("Delay(200) without a cap = %v, want a large positive delay", d)
	}
}

// fixedRand answers IntN with a fixed fraction of n and records the n asked.
type fixedRand struct {
	frac  float64
	asked []int
}

func (r *fixedRand) IntN(n int) int {
	r.asked = append(r.asked, n)
	return int(float64(n-1) * r.frac)
}

func TestCurveJitterStaysInItsBand(t *testing.T) {
	for _, frac := range []float64{0, 0.5, 1} {
		r := &fixedRand{frac: frac}
		c := Curve{Initial: time.Second, Max: 30 * time.Second, Jitter: 0.5, Rand: r}
		for n := 1; n <= 7; n++ {
			d := c.Next()
			plain := (&Curve{Initial: time.Second, Max: 30 * time.Second}).Delay(n)
			if d < plain/2 || d > plain {
				t.Errorf("draw %.1f, failure %d: %v outside [%v, %v]", frac, n, d, plain/2, plain)
			}
		}
		// One draw per delay, over the whole band [d/2, d].
		want := []int{500000001, 1000000001, 2000000001, 4000000001, 8000000001, 15000000001, 15000000001}
		if diff := cmp.Diff(want, r.asked); diff != "" {
			t.Errorf("draw %.1f: IntN arguments (-want +got):\n%s", frac, diff)
		}
	}
	r := &fixedRand{frac: 1}
	c := Curve{Initial: time.Second, Max: time.Minute, Jitter: 2, Rand: r}
	if d := c.Next(); d != time.Second {
		t.Errorf("jitter above 1 with the top draw: %v, want 1s", d)
	}
	r.frac = 0
	if d := c.Next(); d != 0 {
		t.Errorf("jitter above 1 (clamped to 1) with the bottom draw: %v, want 0", d)
	}
}
