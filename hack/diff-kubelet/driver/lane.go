package main

import (
	"context"
	"fmt"
	"log"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runOneAfterTheOther is the containerd lane: both agents use one real
// runtime, so they cannot run at once. The kubelet runs every scenario
// (alone on the runtime), is stopped and the runtime emptied; then
// lockstep runs them; then each scenario's two recordings (times since
// its own start) are compared as in the fake lane.
func (h *harness) runOneAfterTheOther(ctx context.Context, scenarios []*Scenario, parallel int) ([]*Outcome, error) {
	var recs [2]map[string]*Outcome
	for i, sd := range h.sides {
		began := time.Now()
		if err := h.procs.start(sd.agent); err != nil {
			return nil, err
		}
		if err := h.waitReady(ctx, sd, began); err != nil {
			return nil, err
		}
		log.Printf("%s Ready after %.1f s; running %d scenarios on it alone", sd.node, time.Since(began).Seconds(), len(scenarios))
		var only [2]*side
		only[i] = sd
		recs[i] = map[string]*Outcome{}
		for _, o := range h.runAll(ctx, scenarios, parallel, func(ctx context.Context, s *Scenario) *Outcome {
			t := time.Now()
			o := &Outcome{Scenario: s}
			r, err := h.record(ctx, s, only)
			if err != nil {
				o.Error = err.Error()
			}
			o.Kubelet, o.Lockstep = r[0], r[1]
			o.Wall = time.Since(t).Seconds()
			return o
		}) {
			recs[i][o.Scenario.Name] = o
		}
		h.procs.stop(sd.agent)
		if err := sd.runtime.removeAllPods(ctx); err != nil {
			return nil, fmt.Errorf("empty the runtime after %s: %w", sd.agent, err)
		}
		log.Printf("%s: catalogue done in %.0f s; agent stopped, runtime emptied", sd.agent, time.Since(began).Seconds())
	}
	var outcomes []*Outcome
	for _, s := range scenarios {
		k, l := recs[0][s.Name], recs[1][s.Name]
		if k == nil || l == nil {
			continue // called off
		}
		o := &Outcome{Scenario: s, Kubelet: k.Kubelet, Lockstep: l.Lockstep, Wall: k.Wall + l.Wall}
		switch {
		case k.Error != "" || l.Error != "":
			o.Error = k.Error + l.Error
		default:
			o.Differences = compareRecordings(&o.Kubelet, &o.Lockstep, s.Tolerance.Duration)
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, nil
}

// removeAllPods stops and removes every pod sandbox (and so its
// containers) the runtime has: what an agent left behind when it stopped.
func (v *runtimeView) removeAllPods(ctx context.Context) error {
	sbs, err := v.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range sbs.GetItems() {
		if _, err := v.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("stop sandbox %s: %w", sb.Id, err)
		}
		if _, err := v.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}
