package scenarios

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// terminalWrite is an agent status write that moved a pod to Succeeded or
// Failed, waiting for the next check to be judged against the runtime.
type terminalWrite struct {
	at    time.Duration
	phase corev1.PodPhase
	pod   string
}

// onWriteTerminal records the agent's status writes that move a pod to a
// terminal phase (terminal-after-stopped judges them at the next check).
func (c *Checker) onWriteTerminal(r apiserver.Record) {
	p := r.Pod
	if r.Actor != apiserver.ActorAgent || r.Verb != apiserver.VerbPatchStatus {
		return
	}
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return
	}
	if prev, seen := c.lastPhase[p.UID]; seen && (prev == corev1.PodSucceeded || prev == corev1.PodFailed) {
		return // terminal already
	}
	if c.terminalWrites == nil {
		c.terminalWrites = map[types.UID]terminalWrite{}
	}
	c.terminalWrites[p.UID] = terminalWrite{at: r.At.Sub(c.epoch()), phase: p.Status.Phase, pod: p.Namespace + "/" + p.Name}
}

// checkTerminalAfterStopped: terminal-after-stopped — the agent shows a
// pod Succeeded or Failed only once none of its containers runs: no
// container of the pod started before the write and ended after it (or
// still runs). Upstream's status manager withholds a terminal phase
// while the pod worker could still have running containers
// (mergePodStatus): a Job-like pod's sidecars, or a restartPolicy=Never
// pod's sidecars after its init container failed, stop first (the node
// suite reads their logs as soon as the pod is terminal). A runtime or
// API impairment around the write excuses it.
func (c *Checker) checkTerminalAfterStopped() {
	if len(c.terminalWrites) == 0 {
		return
	}
	t := c.truth()
	for _, uid := range slices.Sorted(maps.Keys(c.terminalWrites)) {
		w := c.terminalWrites[uid]
		delete(c.terminalWrites, uid)
		if c.suite.runtimeImpaired >= w.at {
			continue
		}
		for _, ct := range t.byPod[uid] {
			started, ok := c.h.Runtime.TrueStartedAt(ct.ID)
			if !ok || time.Unix(0, started).Sub(c.epoch()) > w.at {
				continue
			}
			ended := "it still runs"
			if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				exit, ok := c.h.Runtime.TrueExit(ct.ID)
				if !ok {
					continue
				}
				end := time.Unix(0, exit.FinishedAt).Sub(c.epoch())
				if end <= w.at {
					continue
				}
				ended = "it ended " + (end - w.at).String() + " later"
			}
			c.fail("terminal-after-stopped", "pod %s (%s) shown %s at %v while its container %s (attempt %d) ran: %s",
				w.pod, uid, w.phase, w.at, ct.Name, ct.Attempt, ended)
		}
	}
}
