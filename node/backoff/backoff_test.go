package backoff

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestCurveDoublesToCapAndAsksAreIdempotent(t *testing.T) {
	b := New(Config{})
	var got []time.Duration
	at := t0
	for range 8 {
		started := at
		at = at.Add(2 * time.Second) // ran 2 s, then crashed
		d := b.Delay("pod/c", started, at)
		if again := b.Delay("pod/c", started, at); again != d {
			t.Fatalf("asking twice about one failure changed the delay: %v then %v", d, again)
		}
		got = append(got, d)
		at = at.Add(d)
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300, 300}
	for i := range want {
		want[i] *= time.Second
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
}

func TestResetsAfterACleanRun(t *testing.T) {
	b := New(Config{})
	b.Delay("k", t0, t0.Add(time.Second))
	b.Delay("k", t0.Add(11*time.Second), t0.Add(12*time.Second))
	if d := b.Delay("k", t0.Add(40*time.Second), t0.Add(41*time.Second)); d != 40*time.Second {
		t.Fatalf("third failure: %v, want 40s", d)
	}
	start := t0.Add(100 * time.Second)
	if d := b.Delay("k", start, start.Add(10*time.Minute)); d != 10*time.Second {
		t.Errorf("failure after 10 min of clean running: %v, want the initial 10s", d)
	}
}

func TestRemainingAndForget(t *testing.T) {
	b := New(Config{Initial: time.Second, Max: 4 * time.Second})
	if r := b.Remaining("p1/c", t0, t0, t0.Add(300*time.Millisecond)); r != 700*time.Millisecond {
		t.Errorf("Remaining = %v, want 700ms", r)
	}
	if r := b.Remaining("p1/c", t0, t0, t0.Add(5*time.Second)); r != 0 {
		t.Errorf("Remaining after the delay = %v, want 0", r)
	}
	b.Delay("p2/c", t0, t0)
	b.Forget("p1/")
	if b.Len() != 1 {
		t.Errorf("after Forget(p1/): %d keys, want 1", b.Len())
	}
}
