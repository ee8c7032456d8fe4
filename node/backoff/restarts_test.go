package backoff

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// crashLoop drives r the way the kubelet does for a container that runs
// for run each time, then exits: at every sync (1 s apart) after an exit
// it asks InBackOff and, when not held, restarts (Next). It returns how
// long each exit waited for its restart.
func crashLoop(r *Restarts, run time.Duration, exits int) []time.Duration {
	var waits []time.Duration
	at := t0
	for range exits {
		finished := at.Add(run)
		now := finished
		for {
			if _, held := r.InBackOff("k", finished, now); !held {
				break
			}
			now = now.Add(time.Second)
		}
		r.Next("k", finished, now)
		waits = append(waits, now.Sub(finished))
		at = now
	}
	return waits
}

func seconds(ds ...time.Duration) []time.Duration {
	for i := range ds {
		ds[i] *= time.Second
	}
	return ds
}

// TestRestartsCurve: the kubelet's curve: the first exit restarts at
// once, then 10 s, 20 s, … capped at 300 s.
func TestRestartsCurve(t *testing.T) {
	got := crashLoop(NewRestarts(Config{}), 2*time.Second, 9)
	if diff := cmp.Diff(seconds(0, 10, 20, 40, 80, 160, 300, 300, 300), got); diff != "" {
		t.Errorf("waits after each exit (-want +got):\n%s", diff)
	}
}

// TestRestartsMessageDelay: while held, InBackOff reports the delay the
// exit waits (the waiting message's), and not once it has passed.
func TestRestartsMessageDelay(t *testing.T) {
	r := NewRestarts(Config{})
	if d, held := r.InBackOff("k", t0, t0); held {
		t.Fatalf("first exit held (%v): the kubelet restarts it at once", d)
	}
	r.Next("k", t0, t0)
	exit := t0.Add(3 * time.Second)
	if d, held := r.InBackOff("k", exit, exit.Add(9*time.Second)); !held || d != 10*time.Second {
		t.Errorf("9 s after the second exit: held=%v delay %v, want held 10s", held, d)
	}
	if _, held := r.InBackOff("k", exit, exit.Add(10*time.Second)); held {
		t.Errorf("10 s after the second exit: still held")
	}
}

// TestRestartsExpire: an exit more than 10 min after the last restart
// (a clean run) starts the curve again, at once; so does a sync more
// than 10 min after it (the kubelet's housekeeping dropped the entry).
func TestRestartsExpire(t *testing.T) {
	r := NewRestarts(Config{})
	crashLoop(r, time.Second, 5) // the delay is now 80 s
	at := t0.Add(time.Hour)
	r.Next("k", at, at)
	r.Next("k", at, at.Add(10*time.Second)) // delay 20 s, last restart at+10s
	exit := at.Add(10*time.Second + 10*time.Minute + time.Second)
	if d, held := r.InBackOff("k", exit, exit); held {
		t.Errorf("exit after a clean run of 10 min: held %v, want a restart at once", d)
	}
	r.Next("k", exit, exit)
	if d, _ := r.InBackOff("k", exit.Add(time.Second), exit.Add(time.Second)); d != 10*time.Second {
		t.Errorf("the exit after the reset waits %v, want 10s", d)
	}
	r.Forget("k")
	if _, held := r.InBackOff("k", exit.Add(time.Second), exit.Add(time.Second)); held {
		t.Errorf("held after Forget")
	}
}
