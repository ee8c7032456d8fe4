// Package oomwatch turns the kernel's OOM kills of processes outside any
// container into SystemOOM Warning events on the node, as the kubelet's
// OOM watcher does ("System OOM encountered, victim process: stress, pid:
// 4242"). Kills inside a container's cgroup are not events: the runtime
// reports them as the container's OOMKilled termination.
package oomwatch

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Reason is the reason of a SystemOOM event.
const Reason = "SystemOOM"

// Message is a SystemOOM event's message for kill k.
func Message(k deps.OOMKill) string {
	msg := "System OOM encountered"
	if k.Process != "" && k.PID != 0 {
		msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, k.Process, k.PID)
	}
	return msg
}

// IsSystem reports whether k killed a process outside every container
// (its cgroup is the root).
func IsSystem(k deps.OOMKill) bool { return k.VictimCgroup == "/" }

// Start spawns the "oom watcher" task: it records a SystemOOM event on
// node nodeName for every system OOM kill, until ctx ends or the source
// fails. A nil source or sink starts nothing.
func Start(ctx context.Context, d deps.Core, kills deps.OOMKills, events deps.EventSink, nodeName string) {
	if kills == nil || events == nil {
		return
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeName, UID: types.UID(nodeName)}
	d.Tasks.Go("oom watcher", func() {
		for {
			k, err := kills.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("no more OOM kill notifications", "error", err.Error())
				}
				return
			}
			if !IsSystem(k) {
				continue
			}
			log.Warn("system OOM", "process", k.Process, "pid", k.PID, "cgroup", k.Cgroup)
			events.Event(ref, corev1.EventTypeWarning, Reason, Message(k))
		}
	})
}
