package fakecri

import (
	"fmt"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FuzzRuntime drives the runtime with arbitrary FAKECRI_ values and call
// sequences: it must never panic, and its answers must stay consistent.
// Run with: go test -fuzz FuzzRuntime ./fakecri/
func FuzzRuntime(f *testing.F) {
	f.Add("FAKECRI_EXIT_AFTER=1s\nFAKECRI_EXIT_CODE=3", []byte{0, 0, 1, 0, 2, 0, 12, 20, 8, 0, 7, 1})
	f.Add("FAKECRI_MEMORY=1Mi\nFAKECRI_MEMORY_GROWTH=1Mi/s", []byte{0, 1, 1, 4, 2, 0, 12, 50, 9, 0, 15, 0, 8, 0})
	f.Add("FAKECRI_IGNORE_SIGTERM=true\nFAKECRI_LOG=x\nFAKECRI_LOG_EVERY=1ms", []byte{0, 0, 1, 0, 2, 0, 3, 4, 12, 255, 4, 0, 6, 0})
	f.Add("FAKECRI_EXEC=ls=0,1s:hang;1\nFAKECRI_HTTP=80=200,1s:down\nFAKECRI_TCP=*=hang", []byte{0, 0, 1, 0, 2, 0, 10, 0, 11, 1, 12, 20, 10, 1, 11, 2})
	f.Add("FAKECRI_STOP_DELAY=2s\nFAKECRI_STARTUP_DELAY=1s", []byte{0, 0, 1, 0, 2, 0, 14, 30, 3, 3, 7, 2, 5, 0, 16, 0, 17, 0})
	f.Add("FAKECRI_EXIT_AFTER=9223372036s", []byte{0, 0, 1, 0, 2, 0, 12, 255, 13, 0, 3, 4})
	f.Add("FAKECRI_MEMORY=16Ei\nFAKECRI_CPU=1099511627776", []byte{0, 0, 1, 0})
	f.Add("NOT_OURS=1\nFAKECRI_GRPC=1/a=hang,1h:serving", []byte{0, 0, 0, 0, 1, 1, 2, 1, 11, 3, 6, 1, 7, 3})
	f.Fuzz(func(t *testing.T, env string, ops []byte) {
		if len(env) > 4096 || len(ops) > 512 {
			return
		}
		fx := newFixture(t, func(c *Config) { c.Files = &countFiles{} })
		r, ctx := fx.r, fx.ctx
		var envs []string
		for _, line := range strings.Split(env, "\n") {
			if line != "" {
				envs = append(envs, line)
			}
		}
		var pods, ctrs []string
		sub := r.SubscribeEvents("fuzz")
		pick := func(ids []string, arg byte) string {
			if len(ids) == 0 {
				return "none"
			}
			return ids[int(arg)%len(ids)]
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			switch op % 18 {
			case 0:
				if id, err := r.RunPodSandbox(ctx, podConfig(fmt.Sprint("p", arg%8)), ""); err == nil {
					pods = append(pods, id)
				}
			case 1:
				cfg := ctrConfig(fmt.Sprint("c", i), envs...)
				if arg%2 == 1 {
					cfg = withLimit(cfg, int64(arg)<<20)
				}
				if arg%3 == 0 {
					cfg.Command = []string{"sh", "-c", env}
				}
				if id, err := r.CreateContainer(ctx, pick(pods, arg), cfg, nil); err == nil {
					ctrs = append(ctrs, id)
				}
			case 2:
				_ = r.StartContainer(ctx, pick(ctrs, arg))
			case 3:
				_ = r.StopContainer(ctx, pick(ctrs, arg), int64(arg%5))
			case 4:
				_ = r.RemoveContainer(ctx, pick(ctrs, arg))
			case 5:
				_ = r.StopPodSandbox(ctx, pick(pods, arg))
			case 6:
				_ = r.RemovePodSandbox(ctx, pick(pods, arg))
			case 7:
				filter := &runtimeapi.ContainerFilter{}
				switch arg % 4 {
				case 1:
					filter.PodSandboxId = pick(pods, arg)
				case 2:
					filter.Id = pick(ctrs, arg)[:min(4, len(pick(ctrs, arg)))]
				case 3:
					filter.State = &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState(arg % 3)}
				}
				_, _ = r.ListContainers(ctx, filter)
				_, _ = r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: pick(pods, arg)})
			case 8:
				_, _ = r.ContainerStatus(ctx, pick(ctrs, arg), arg%2 == 0)
				_, _ = r.PodSandboxStatus(ctx, pick(pods, arg), arg%2 == 0)
			case 9:
				_, _ = r.ListContainerStats(ctx, nil)
				_, _ = r.ContainerStats(ctx, pick(ctrs, arg))
				_, _ = r.PodSandboxStats(ctx, pick(pods, arg))
				_, _ = r.ListPodSandboxStats(ctx, nil)
			case 10:
				cmd := []string{"ls"}
				if arg%2 == 0 {
					cmd = strings.Fields(env)
				}
				_, _, _ = r.ExecSync(ctx, pick(ctrs, arg), cmd, time.Second)
			case 11:
				ep := Endpoint{Addr: "10.88.0.2", Port: int(arg), Sandbox: pick(pods, arg)}
				_ = r.AnswerHTTP(ep, env)
				_ = r.AnswerTCP(ep)
				ep.Sandbox = ""
				_ = r.AnswerGRPC(ep, env)
				_, _ = r.ListeningAt("10.88.0.2")
			case 12:
				fx.clock.Advance(time.Duration(arg) * 100 * time.Millisecond)
			case 13:
				_ = r.UpdateContainerResources(ctx, pick(ctrs, arg), &runtimeapi.ContainerResources{
					Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: int64(arg) << 20},
				})
			case 14:
				r.SetListStaleness(time.Duration(arg) * 50 * time.Millisecond)
			case 15:
				for sub.Pending() > 0 {
					if _, err := sub.Next(ctx); err != nil {
						t.Fatalf("Next with pending events: %v", err)
					}
				}
			case 16:
				_, _ = r.PullImage(ctx, &runtimeapi.ImageSpec{Image: env}, nil, nil)
				if arg%2 == 0 {
					_ = r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: env})
				}
				_, _ = r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: env}, true)
			case 17:
				_ = r.NodeUsage()
				_, _ = r.ImageFsInfo(ctx)
				_ = r.ReopenContainerLog(ctx, pick(ctrs, arg))
			}
			checkInvariants(t, r)
		}
	})
}

// checkInvariants checks what must hold after any call sequence.
func checkInvariants(t *testing.T, r *Runtime) {
	t.Helper()
	r.SetListStaleness(0)
	ctx := t.Context()
	list, err := r.ListContainers(ctx, nil)
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	var last int64
	for _, c := range list {
		if c.CreatedAt < last {
			t.Fatalf("ListContainers not in creation order")
		}
		last = c.CreatedAt
		resp, err := r.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			t.Fatalf("listed container %s has no status: %v", c.Id, err)
		}
		st := resp.Status
		if st.State != c.State {
			t.Fatalf("container %s: list says %v, status %v", c.Id, c.State, st.State)
		}
		switch st.State {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			if st.StartedAt < st.CreatedAt || st.FinishedAt != 0 {
				t.Fatalf("running container %s has times %d %d %d", c.Id, st.CreatedAt, st.StartedAt, st.FinishedAt)
			}
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			if st.FinishedAt < st.StartedAt || st.Reason == "" {
				t.Fatalf("exited container %s: started %d finished %d reason %q", c.Id, st.StartedAt, st.FinishedAt, st.Reason)
			}
		}
	}
	u := r.NodeUsage()
	if u.Containers != len(list) {
		t.Fatalf("NodeUsage counts %d containers, list has %d", u.Containers, len(list))
	}
}
