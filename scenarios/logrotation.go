package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/node/logrotate"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// The log-rotation scenario's policy and its chatty containers: a
// numbered line of about chattyLineBytes every chattyEvery, far more per
// check than the maximum size, so every check rotates.
const (
	rotateMaxSize   = 4 << 10
	rotateMaxFiles  = 3
	chattyEvery     = 100 * time.Millisecond
	chattyLineBytes = 110 // at most: "2006-01-02T15:04:05.000000000Z stdout F line 1234567 ", the padding and the newline
)

func logRotationScenario() Scenario {
	return Scenario{Name: "log-rotation",
		Doc:      "chatty containers come and go with agent crashes while their logs are rotated (log-bounded, log-lines-once)",
		Mix:      map[string]int{"create-chatty": 4, "delete": 2, "crash": 1, "crash-in-sync": 1, "wait": 3},
		MaxSteps: 10, // a small make-test budget: every check rotates
		Configure: func(c *harness.Config) {
			c.Agent.LogRotation = logrotate.Config{MaxSize: rotateMaxSize, MaxFiles: rotateMaxFiles}
		},
	}
}

// opCreateChatty creates a pod whose container logs a numbered line every
// chattyEvery; with a=1 it also has a quiet second container.
func opCreateChatty(r *run, a [3]int) error {
	name := fmt.Sprintf("c%d", r.step)
	opts := []PodOption{Env("app", "FAKECRI_LOG", "line {n} "+strings.Repeat("x", 48)), Env("app", "FAKECRI_LOG_EVERY", chattyEvery.String()), Grace(2)}
	if a[0] == 1 {
		opts = append(opts, Container("quiet"))
	}
	if _, err := Create(r.h, NewPod(name, r.h.NodeName, opts...)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}
