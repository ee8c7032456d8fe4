package harness

import "testing"

// A harness built by a test without a replay command names that test, not
// the kernel demo.
func TestDefaultReplayNamesTheTest(t *testing.T) {
	h := New(Config{Seed: 42})
	defer h.Close()
	want := "go test -count=1 -run '^TestDefaultReplayNamesTheTest$' ./sim/harness/ (seed 42)"
	if got := h.ReplayCommand(); got != want {
		t.Errorf("replay command %q, want %q", got, want)
	}
}
