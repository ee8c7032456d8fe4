package fakecri

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventLine is a compact, comparable view of an event.
func eventLine(ev *runtimeapi.ContainerEventResponse, names map[string]string) string {
	var states []string
	for _, st := range ev.ContainersStatuses {
		states = append(states, fmt.Sprintf("%s:%s", names[st.Id], st.State))
	}
	return fmt.Sprintf("%v %s %s sandbox=%s %v", time.Duration(ev.CreatedAt-t0().UnixNano()), ev.ContainerEventType,
		names[ev.ContainerId], ev.PodSandboxStatus.GetState(), states)
}

func TestEventsLifecycle(t *testing.T) {
	f := newFixture(t)
	sub := f.r.SubscribeEvents("test")
	defer sub.Close()
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c", "FAKECRI_EXIT_AFTER=5s"))
	names := map[string]string{sb: "pod", id: "ctr"}

	var got []string
	next := func() {
		t.Helper()
		ev, err := sub.Next(f.ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, eventLine(ev, names))
	}
	for range 4 {
		next()
	}
	// Nothing is queued: Next sleeps (plain Clock) until the scripted exit.
	next()
	if err := f.r.RemovePodSandbox(f.ctx, sb); err != nil {
		t.Fatal(err)
	}
	next() // sandbox stopped
	next() // container deleted
	next() // sandbox deleted
	want := []string{
		"0s CONTAINER_CREATED_EVENT pod sandbox=SANDBOX_READY []",
		"0s CONTAINER_STARTED_EVENT pod sandbox=SANDBOX_READY []",
		"0s CONTAINER_CREATED_EVENT ctr sandbox=SANDBOX_READY [ctr:CONTAINER_CREATED]",
		"0s CONTAINER_STARTED_EVENT ctr sandbox=SANDBOX_READY [ctr:CONTAINER_RUNNING]",
		"5s CONTAINER_STOPPED_EVENT ctr sandbox=SANDBOX_READY [ctr:CONTAINER_EXITED]",
		"5s CONTAINER_STOPPED_EVENT pod sandbox=SANDBOX_NOTREADY [ctr:CONTAINER_EXITED]",
		"5s CONTAINER_DELETED_EVENT ctr sandbox=SANDBOX_NOTREADY []",
		"5s CONTAINER_DELETED_EVENT pod sandbox=SANDBOX_NOTREADY []",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// deadlineClock is a testClock whose WithDeadline stands for "nothing else
// happens until d": it moves time to d and returns an ended context.
type deadlineClock struct{ *testClock }

func (c deadlineClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	c.Advance(d.Sub(c.Now()))
	ctx, cancel := context.WithCancel(parent)
	cancel()
	return ctx, cancel
}

func TestEventsWithDeadlineClock(t *testing.T) {
	clk := deadlineClock{newTestClock()}
	r := New(Config{Clock: clk, Files: newMemFiles()})
	ctx := context.Background()
	sb, err := r.RunPodSandbox(ctx, podConfig("p"), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := withLimit(ctrConfig("c", "FAKECRI_MEMORY_GROWTH=1Mi/s"), 3<<20)
	id, err := r.CreateContainer(ctx, sb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := r.SubscribeEvents("test")
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{sb: "pod", id: "ctr"}
	var got []string
	for range 2 {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, eventLine(ev, names))
	}
	want := []string{
		"0s CONTAINER_STARTED_EVENT ctr sandbox=SANDBOX_READY [ctr:CONTAINER_RUNNING]",
		"3.000000954s CONTAINER_STOPPED_EVENT ctr sandbox=SANDBOX_READY [ctr:CONTAINER_EXITED]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	resp, err := r.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status.Reason != "OOMKilled" {
		t.Errorf("reason %q, want OOMKilled", resp.Status.Reason)
	}
}

func TestEventsOffAndRestart(t *testing.T) {
	off := newFixture(t, func(c *Config) { c.NoEvents = true })
	_, err := off.r.SubscribeEvents("x").Next(off.ctx)
	wantCode(t, "Next with events off", err, codes.Unimplemented)
	err = off.r.GetContainerEvents(off.ctx, make(chan *runtimeapi.ContainerEventResponse, 1), nil)
	wantCode(t, "GetContainerEvents with events off", err, codes.Unimplemented)
	resp, err := off.r.PodSandboxStatus(off.ctx, off.runPod("p"), false)
	if err != nil || resp.ContainersStatuses != nil || resp.Timestamp != 0 {
		t.Errorf("PodSandboxStatus with events off carries evented-PLEG fields: %v %v", resp, err)
	}

	f := newFixture(t)
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("c"))
	sub := f.r.SubscribeEvents("x")
	f.r.Restart(10 * time.Second)
	_, err = sub.Next(f.ctx)
	wantCode(t, "Next after restart", err, codes.Unavailable)
	_, err = f.r.Status(f.ctx, false)
	wantCode(t, "Status while restarting", err, codes.Unavailable)
	_, err = f.r.SubscribeEvents("y").Next(f.ctx)
	wantCode(t, "new stream while restarting", err, codes.Unavailable)
	f.clock.Advance(10 * time.Second)
	if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container after restart: %v, want RUNNING (containers survive)", st.State)
	}
	sub2 := f.r.SubscribeEvents("z")
	f.create(sb, ctrConfig("d"))
	if ev, err := sub2.Next(f.ctx); err != nil || ev.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
		t.Errorf("stream after restart: %v %v", ev, err)
	}
	sub2.Close()
	if _, err := sub2.Next(f.ctx); err == nil {
		t.Errorf("Next after Close: no error")
	}
}

func TestEventsBufferAndChannel(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.EventBuffer = 3 })
	sub := f.r.SubscribeEvents("small")
	sb := f.runPod("p")       // 2 events
	f.run(sb, ctrConfig("c")) // 2 more: one dropped
	if got := sub.Dropped(); got != 1 {
		t.Errorf("dropped %d events, want 1", got)
	}

	ctx, cancel := context.WithCancel(f.ctx)
	ch := make(chan *runtimeapi.ContainerEventResponse)
	established := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.r.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(established) })
	}()
	<-established
	id := f.create(sb, ctrConfig("d"))
	ev := <-ch
	want := &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
		CreatedAt:          ns(0),
	}
	if diff := cmp.Diff(want, ev, protocmp.Transform(), protocmp.IgnoreFields(&runtimeapi.ContainerEventResponse{}, "pod_sandbox_status", "containers_statuses")); diff != "" {
		t.Errorf("channel event (-want +got):\n%s", diff)
	}
	if len(ev.ContainersStatuses) != 2 || ev.PodSandboxStatus.GetId() != sb {
		t.Errorf("channel event statuses: %d containers, sandbox %q", len(ev.ContainersStatuses), ev.PodSandboxStatus.GetId())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("GetContainerEvents after cancel: %v, want context.Canceled", err)
	}
}
