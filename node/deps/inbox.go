package deps

import (
	"context"
	"sync"
)

// Inbox is an unbounded FIFO of values handed between tasks, built on a
// Signal so that a blocked Get is a scheduling point like any other wait.
// Any number of tasks may Put and Get.
type Inbox[T any] struct {
	mu    sync.Mutex
	items []T
	head  int
	ready Signal
}

// NewInbox returns an empty inbox whose waits are named name.
func NewInbox[T any](tasks Tasks, name string) *Inbox[T] {
	return &Inbox[T]{ready: tasks.NewSignal(name)}
}

// Put appends v and wakes a waiting Get.
func (b *Inbox[T]) Put(v T) {
	b.mu.Lock()
	b.items = append(b.items, v)
	b.mu.Unlock()
	b.ready.Notify()
}

// TryGet removes and returns the oldest value, if there is one.
func (b *Inbox[T]) TryGet() (T, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var zero T
	if b.head == len(b.items) {
		return zero, false
	}
	v := b.items[b.head]
	b.items[b.head] = zero
	b.head++
	if b.head == len(b.items) {
		b.items, b.head = b.items[:0], 0
	} else if b.head > 64 && b.head*2 > len(b.items) {
		n := copy(b.items, b.items[b.head:])
		clear(b.items[n:])
		b.items, b.head = b.items[:n], 0
	}
	return v, true
}

// Get removes and returns the oldest value, waiting for one if the inbox is
// empty; it returns ctx.Err() if ctx ends first.
func (b *Inbox[T]) Get(ctx context.Context) (T, error) {
	for {
		if v, ok := b.TryGet(); ok {
			if b.Len() > 0 {
				// Pass the wake-up on: another getter may be waiting.
				b.ready.Notify()
			}
			return v, nil
		}
		if err := b.ready.Wait(ctx); err != nil {
			var zero T
			return zero, err
		}
	}
}

// Len reports how many values are waiting.
func (b *Inbox[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items) - b.head
}
