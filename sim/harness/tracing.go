package harness

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/trace"
)

// The trace kinds of the node's traffic: with the scheduling events they
// make the trace hash fingerprint behaviour, not only the schedule.
const (
	// KindCRI is a CRI call's answer: method, what it concerned, the
	// outcome (a digest of lists), the error.
	KindCRI = "cri"
	// KindAPIWrite is a committed apiserver write (anyone's).
	KindAPIWrite = "api-write"
	// KindWatch is a pod watch event delivered to the agent.
	KindWatch = "watch"
)

// tracingRuntime records the CRI calls that change or read the node's
// state as trace events; the rest pass through.
type tracingRuntime struct {
	cri.RuntimeService
	k     *kernel.Kernel
	names map[string]string // container or sandbox ID → namespace/pod[/container]
	// onStop are told of every StopContainer call as it is made.
	onStop []func(id string, grace int64)
}

func newTracingRuntime(rs cri.RuntimeService, k *kernel.Kernel) *tracingRuntime {
	return &tracingRuntime{RuntimeService: rs, k: k, names: map[string]string{}}
}

func (t *tracingRuntime) record(method, target string, err error, fs ...trace.Field) {
	fields := append([]trace.Field{trace.F("method", method), trace.F("target", target)}, fs...)
	if err != nil {
		fields = append(fields, trace.F("err", err.Error()))
	}
	t.k.Record(KindCRI, fields...)
}

func (t *tracingRuntime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	id, err := t.RuntimeService.RunPodSandbox(ctx, cfg, handler)
	pod := cfg.GetMetadata().GetNamespace() + "/" + cfg.GetMetadata().GetName()
	if err == nil {
		t.names[id] = pod
	}
	t.record("RunPodSandbox", pod, err, trace.F("id", id), trace.F("attempt", cfg.GetMetadata().GetAttempt()))
	return id, err
}

func (t *tracingRuntime) StopPodSandbox(ctx context.Context, id string) error {
	err := t.RuntimeService.StopPodSandbox(ctx, id)
	t.record("StopPodSandbox", t.name(id), err, trace.F("id", id))
	return err
}

func (t *tracingRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	err := t.RuntimeService.RemovePodSandbox(ctx, id)
	t.record("RemovePodSandbox", t.name(id), err, trace.F("id", id))
	return err
}

func (t *tracingRuntime) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := t.RuntimeService.CreateContainer(ctx, sandboxID, cfg, sb)
	name := sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName() + "/" + cfg.GetMetadata().GetName()
	if err == nil {
		t.names[id] = name
	}
	t.record("CreateContainer", name, err, trace.F("id", id), trace.F("attempt", cfg.GetMetadata().GetAttempt()))
	return id, err
}

func (t *tracingRuntime) StartContainer(ctx context.Context, id string) error {
	err := t.RuntimeService.StartContainer(ctx, id)
	t.record("StartContainer", t.name(id), err, trace.F("id", id))
	return err
}

func (t *tracingRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	for _, fn := range t.onStop {
		fn(id, timeout)
	}
	err := t.RuntimeService.StopContainer(ctx, id, timeout)
	t.record("StopContainer", t.name(id), err, trace.F("id", id), trace.F("grace", timeout))
	return err
}

func (t *tracingRuntime) RemoveContainer(ctx context.Context, id string) error {
	err := t.RuntimeService.RemoveContainer(ctx, id)
	t.record("RemoveContainer", t.name(id), err, trace.F("id", id))
	return err
}

func (t *tracingRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	cs, err := t.RuntimeService.ListContainers(ctx, f)
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Id + "=" + c.State.String()
	}
	t.record("ListContainers", "", err, trace.F("n", len(cs)), trace.F("digest", digest(parts)))
	return cs, err
}

func (t *tracingRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	sbs, err := t.RuntimeService.ListPodSandbox(ctx, f)
	parts := make([]string, len(sbs))
	for i, s := range sbs {
		parts[i] = s.Id + "=" + s.State.String()
	}
	t.record("ListPodSandbox", "", err, trace.F("n", len(sbs)), trace.F("digest", digest(parts)))
	return sbs, err
}

func (t *tracingRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r, err := t.RuntimeService.ContainerStatus(ctx, id, verbose)
	st := r.GetStatus()
	t.record("ContainerStatus", t.name(id), err, trace.F("id", id), trace.F("state", st.GetState().String()),
		trace.F("exit", st.GetExitCode()), trace.F("reason", st.GetReason()))
	return r, err
}

func (t *tracingRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r, err := t.RuntimeService.PodSandboxStatus(ctx, id, verbose)
	t.record("PodSandboxStatus", t.name(id), err, trace.F("id", id), trace.F("state", r.GetStatus().GetState().String()),
		trace.F("ip", r.GetStatus().GetNetwork().GetIp()))
	return r, err
}

func (t *tracingRuntime) name(id string) string { return t.names[id] }

// digest is a short hash of a list, sorted so that order does not count.
func digest(parts []string) string {
	parts = slices.Clone(parts)
	slices.Sort(parts)
	h := fnv.New64a()
	h.Write([]byte(strings.Join(parts, ",")))
	return fmt.Sprintf("%016x", h.Sum64())
}

// tracingPods records every pod watch event the agent receives.
type tracingPods struct {
	deps.PodAPI
	k *kernel.Kernel
}

func (p tracingPods) WatchPods(ctx context.Context, node, rv string) (deps.PodWatch, error) {
	w, err := p.PodAPI.WatchPods(ctx, node, rv)
	if err != nil {
		return nil, err
	}
	return tracingWatch{w, p.k}, nil
}

type tracingWatch struct {
	deps.PodWatch
	k *kernel.Kernel
}

func (w tracingWatch) Next(ctx context.Context) (deps.PodEvent, error) {
	ev, err := w.PodWatch.Next(ctx)
	if err != nil {
		w.k.Record(KindWatch, trace.F("err", err.Error()))
		return ev, err
	}
	w.k.Record(KindWatch, trace.F("type", string(ev.Type)), trace.F("pod", podName(ev.Pod)), trace.F("rv", ev.Pod.GetResourceVersion()))
	return ev, nil
}

func podName(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return p.Namespace + "/" + p.Name
}

// traceWrites records every committed apiserver write.
func traceWrites(k *kernel.Kernel, api *apiserver.Server) {
	api.OnWrite(func(r apiserver.Record) {
		fs := []trace.Field{trace.F("verb", r.Verb), trace.F("object", r.Kind), trace.F("name", r.Namespace+"/"+r.Name),
			trace.F("actor", r.Actor), trace.F("rv", r.RV), trace.F("uid", string(r.UID))}
		if r.Pod != nil {
			fs = append(fs, trace.F("phase", string(r.Pod.Status.Phase)), trace.F("containers", containerStates(r.Pod)))
		}
		k.Record(KindAPIWrite, fs...)
	})
}

// containerStates summarises a pod status's containers: name=state/restarts.
func containerStates(p *corev1.Pod) string {
	var parts []string
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		st := "waiting"
		switch {
		case cs.State.Running != nil:
			st = "running"
		case cs.State.Terminated != nil:
			st = fmt.Sprintf("terminated(%d)", cs.State.Terminated.ExitCode)
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%d", cs.Name, st, cs.RestartCount))
	}
	return strings.Join(parts, ",")
}
