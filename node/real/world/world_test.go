package world

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// These tests exercise the real primitives without waiting on the wall
// clock: every wait is released by another goroutine or a cancelled context.

func TestSignalRemembersOneNotification(t *testing.T) {
	s := Tasks{}.NewSignal("s")
	s.Notify()
	s.Notify()
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("second Wait = %v, want context.Canceled (only one notification is kept)", err)
	}
}

func TestInboxAcrossGoroutines(t *testing.T) {
	ts := Tasks{}
	in := deps.NewInbox[int](ts, "in")
	const producers, each = 4, 250
	got := make(chan int, producers*each)
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		wg.Add(1)
		ts.Go("consumer", func() {
			defer wg.Done()
			for {
				v, err := in.Get(context.Background())
				if err != nil || v < 0 {
					return
				}
				got <- v
			}
		})
	}
	for p := 0; p < producers; p++ {
		ts.Go("producer", func() {
			for i := 0; i < each; i++ {
				in.Put(p*each + i)
			}
		})
	}
	seen := map[int]bool{}
	for len(seen) < producers*each {
		v := <-got
		if seen[v] {
			t.Fatalf("value %d delivered twice", v)
		}
		seen[v] = true
	}
	for c := 0; c < 3; c++ {
		in.Put(-1)
	}
	wg.Wait()
}

func TestSleepAndTickerReturnOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ts := Tasks{}
	if err := ts.Sleep(ctx, 1<<62); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep = %v, want context.Canceled", err)
	}
	tk := ts.NewTicker("t", 1<<62)
	defer tk.Stop()
	if err := tk.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Ticker.Wait = %v, want context.Canceled", err)
	}
}

func TestAfterFuncStop(t *testing.T) {
	tm := Tasks{}.AfterFunc("never", 1<<62, func() { t.Error("fired") })
	if !tm.Stop() {
		t.Error("Stop of a pending timer = false")
	}
	if tm.Stop() {
		t.Error("second Stop = true")
	}
}

func TestRandInRange(t *testing.T) {
	r := NewRand()
	for i := 1; i < 1000; i++ {
		if v := r.IntN(i); v < 0 || v >= i {
			t.Fatalf("IntN(%d) = %d", i, v)
		}
	}
	var _ deps.Clock = Clock()
}
