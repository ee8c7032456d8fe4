package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/lockstep-dev/lockstep/scenarios"
)

// timelineWriter collects a run's trace lines for its HTML timeline.
type timelineWriter struct{ buf bytes.Buffer }

func newTimelineWriter() *timelineWriter { return &timelineWriter{} }

func (t *timelineWriter) Write(p []byte) (int, error) { return t.buf.Write(p) }

// write renders the timeline of res to path.
func (t *timelineWriter) write(path string, res scenarios.Result) error {
	page, err := scenarios.Timeline(t.buf.Bytes(), res)
	if err != nil {
		return fmt.Errorf("timeline of %s seed %d: %w", res.Plan.Scenario, res.Plan.Seed, err)
	}
	if err := os.WriteFile(path, page, 0o644); err != nil {
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	return nil
}
