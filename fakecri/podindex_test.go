package fakecri

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"pgregory.net/rapid"
)

// Lists (containers, sandboxes, container stats) filtered by the pod UID
// label, served from the per-pod index, give
// exactly what filtering the full lists by that label gives, in the same
// order, through any sequence of creations, stops and removals, objects
// without the label and containers labelled for another pod than their
// sandbox's.
func TestPodIndexedListsMatchAScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fx := newFixture(t)
		r, ctx := fx.r, fx.ctx
		uids := []string{"uid-p0", "uid-p1", "uid-p2", ""}
		var pods, ctrs []string
		pick := func(ids []string, label string) string {
			if len(ids) == 0 {
				return "none"
			}
			return rapid.SampledFrom(ids).Draw(rt, label)
		}
		labelled := func(uid string) map[string]string {
			if uid == "" {
				return map[string]string{"app": "x"}
			}
			return map[string]string{podUIDLabel: uid, "app": "x"}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := range steps {
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0:
				cfg := podConfig(fmt.Sprint("p", i))
				cfg.Labels = labelled(rapid.SampledFrom(uids).Draw(rt, "sandbox uid"))
				if id, err := r.RunPodSandbox(ctx, cfg, ""); err == nil {
					pods = append(pods, id)
				}
			case 1:
				cfg := ctrConfig(fmt.Sprint("c", i))
				cfg.Labels = labelled(rapid.SampledFrom(uids).Draw(rt, "container uid"))
				if id, err := r.CreateContainer(ctx, pick(pods, "sandbox"), cfg, nil); err == nil {
					ctrs = append(ctrs, id)
				}
			case 2:
				_ = r.StartContainer(ctx, pick(ctrs, "start"))
			case 3:
				_ = r.RemoveContainer(ctx, pick(ctrs, "remove"))
			case 4:
				_ = r.StopPodSandbox(ctx, pick(pods, "stop sandbox"))
			case 5:
				_ = r.RemovePodSandbox(ctx, pick(pods, "remove sandbox"))
			}
			for _, uid := range uids[:3] {
				sel := map[string]string{podUIDLabel: uid}
				allSB, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
				if err != nil {
					rt.Fatal(err)
				}
				var wantSB []*runtimeapi.PodSandbox
				for _, sb := range allSB {
					if sb.Labels[podUIDLabel] == uid {
						wantSB = append(wantSB, sb)
					}
				}
				gotSB, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
				if err != nil {
					rt.Fatal(err)
				}
				if diff := cmp.Diff(wantSB, gotSB, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
					rt.Fatalf("step %d: sandboxes of %s (-scan +indexed):\n%s", i, uid, diff)
				}
				allC, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{})
				if err != nil {
					rt.Fatal(err)
				}
				var wantC []*runtimeapi.Container
				for _, c := range allC {
					if c.Labels[podUIDLabel] == uid {
						wantC = append(wantC, c)
					}
				}
				gotC, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
				if err != nil {
					rt.Fatal(err)
				}
				if diff := cmp.Diff(wantC, gotC, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
					rt.Fatalf("step %d: containers of %s (-scan +indexed):\n%s", i, uid, diff)
				}
				var wantStats, gotStats []string
				allStats, err := r.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
				if err != nil {
					rt.Fatal(err)
				}
				for _, st := range allStats {
					if st.GetAttributes().GetLabels()[podUIDLabel] == uid {
						wantStats = append(wantStats, st.GetAttributes().GetId())
					}
				}
				podStats, err := r.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{LabelSelector: sel})
				if err != nil {
					rt.Fatal(err)
				}
				for _, st := range podStats {
					gotStats = append(gotStats, st.GetAttributes().GetId())
				}
				if diff := cmp.Diff(wantStats, gotStats, cmpopts.EquateEmpty()); diff != "" {
					rt.Fatalf("step %d: container stats of %s (-scan +indexed):\n%s", i, uid, diff)
				}
			}
		}
		// The index keeps an entry for exactly the pods with a live object.
		live := map[string]bool{}
		sbs, _ := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
		for _, sb := range sbs {
			if uid, ok := sb.Labels[podUIDLabel]; ok {
				live[uid] = true
			}
		}
		cs, _ := r.ListContainers(ctx, &runtimeapi.ContainerFilter{})
		for _, c := range cs {
			if uid, ok := c.Labels[podUIDLabel]; ok {
				live[uid] = true
			}
		}
		indexed := map[string]bool{}
		for uid := range r.byPod {
			indexed[uid] = true
		}
		if diff := cmp.Diff(live, indexed, cmpopts.EquateEmpty()); diff != "" {
			rt.Fatalf("index entries (-live +indexed):\n%s", diff)
		}
	})
}
