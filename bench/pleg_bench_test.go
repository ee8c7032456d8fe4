package bench

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/pleg"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/real/world"
)

// listRuntime is a CRI runtime whose lists return prebuilt slices and whose
// status calls return prebuilt answers, so a benchmark measures the PLEG,
// not the runtime.
type listRuntime struct {
	cri.RuntimeService
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	sbStatus   map[string]*runtimeapi.PodSandboxStatusResponse
	ctrStatus  map[string]*runtimeapi.ContainerStatusResponse
	statusCall int
}

// newListRuntime builds n containers, two per pod, each pod with one sandbox.
func newListRuntime(n int) *listRuntime {
	r := &listRuntime{
		sbStatus:  map[string]*runtimeapi.PodSandboxStatusResponse{},
		ctrStatus: map[string]*runtimeapi.ContainerStatusResponse{},
	}
	for p := range n / 2 {
		ref := podstate.PodRef{UID: types.UID(fmt.Sprintf("pod-%06d", p)), Name: fmt.Sprintf("p%d", p), Namespace: "default"}
		sbID := fmt.Sprintf("sb-%06d", p)
		labels := podstate.SandboxLabels(ref)
		r.sandboxes = append(r.sandboxes, &runtimeapi.PodSandbox{Id: sbID, State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: labels, CreatedAt: int64(p)})
		r.sbStatus[sbID] = &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
			Id: sbID, State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: labels, CreatedAt: int64(p),
			Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.2.3"},
		}}
		for _, name := range []string{"app", "sidecar"} {
			id := fmt.Sprintf("c-%06d-%s", p, name)
			cl := podstate.ContainerLabels(ref, name)
			ann := podstate.ContainerAnnotations("0123456789", 0)
			md := &runtimeapi.ContainerMetadata{Name: name}
			r.containers = append(r.containers, &runtimeapi.Container{
				Id: id, PodSandboxId: sbID, Metadata: md, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
				Labels: cl, Annotations: ann, CreatedAt: int64(p),
			})
			r.ctrStatus[id] = &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
				Id: id, Metadata: md, State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: cl, Annotations: ann,
				CreatedAt: int64(p), StartedAt: int64(p) + 1, Image: &runtimeapi.ImageSpec{Image: "registry/app:1"},
			}}
		}
	}
	return r
}

func (r *listRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.sandboxes, nil
}

func (r *listRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.containers, nil
}

func (r *listRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.statusCall++
	if s, ok := r.sbStatus[id]; ok {
		return s, nil
	}
	return nil, status.Error(codes.NotFound, id)
}

func (r *listRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.statusCall++
	if s, ok := r.ctrStatus[id]; ok {
		return s, nil
	}
	return nil, status.Error(codes.NotFound, id)
}

// flip moves every step-th container between running and exited (in its
// list entry and its status), i.e. changes 1/step of them.
func (r *listRuntime) flip(step int) {
	for i := 0; i < len(r.containers); i += step {
		c := r.containers[i]
		s := runtimeapi.ContainerState_CONTAINER_EXITED
		if c.State == s {
			s = runtimeapi.ContainerState_CONTAINER_RUNNING
		}
		c.State = s
		r.ctrStatus[c.Id].Status.State = s
	}
}

// BenchmarkRelist measures one relist of the generic PLEG (ns/op is
// ns/relist) over a runtime of 1,000 and 10,000 containers (two per pod),
// when nothing changed and when 1% of the containers changed (each in a
// different pod, so 1% of the containers' pods are inspected: one sandbox
// and two container status calls each). It runs on the production world
// (wall clock, goroutine-backed primitives), as a node would.
func BenchmarkRelist(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, changed := range []bool{false, true} {
			name := fmt.Sprintf("containers=%d/changed=0%%", n)
			if changed {
				name = fmt.Sprintf("containers=%d/changed=1%%", n)
			}
			b.Run(name, func(b *testing.B) {
				rt := newListRuntime(n)
				core := deps.Core{Clock: world.Clock(), Tasks: world.Tasks{}, Rand: world.NewRand(), Log: slog.New(slog.DiscardHandler)}
				p := pleg.New(core, rt, nil, pleg.Config{})
				ctx := context.Background()
				if err := p.Relist(ctx); err != nil { // the first look sees everything
					b.Fatal(err)
				}
				drain(p)
				rt.statusCall = 0
				events := 0
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if changed {
						b.StopTimer()
						rt.flip(100)
						b.StartTimer()
					}
					if err := p.Relist(ctx); err != nil {
						b.Fatal(err)
					}
					if changed {
						b.StopTimer()
						events += drain(p)
						b.StartTimer()
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/relist")
				b.ReportMetric(float64(rt.statusCall)/float64(b.N), "status-calls/relist")
				b.ReportMetric(float64(events)/float64(b.N), "events/relist")
			})
		}
	}
}

func drain(p *pleg.PLEG) int {
	n := 0
	for {
		if _, ok := p.Events().TryGet(); !ok {
			return n
		}
		n++
	}
}
