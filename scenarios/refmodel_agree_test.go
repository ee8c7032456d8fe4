package scenarios

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
)

// TestReferenceModelAgreesWithTheAgent draws pods of every shape the
// scenarios make (and more) and compares the checker's reference model
// with the agent's decision code: where they differ, one is wrong, and
// upstream decides which. The checker itself never calls the agent; this
// test is where the two meet.
func TestReferenceModelAgreesWithTheAgent(t *testing.T) {
	quantities := []string{"", "0", "100m", "250m", "1", "64Mi", "128Mi"}
	requirements := func(t *rapid.T, label string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if q := rapid.SampledFrom(quantities).Draw(t, label+"/req/"+string(name)); q != "" {
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = resource.MustParse(q)
			}
			if q := rapid.SampledFrom(quantities).Draw(t, label+"/lim/"+string(name)); q != "" {
				if r.Limits == nil {
					r.Limits = corev1.ResourceList{}
				}
				r.Limits[name] = resource.MustParse(q)
			}
		}
		return r
	}
	drawPod := func(t *rapid.T, name string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
		p.Spec.RestartPolicy = rapid.SampledFrom([]corev1.RestartPolicy{"", corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}).Draw(t, name+"/policy")
		if rapid.Bool().Draw(t, name+"/prio?") {
			prio := rapid.SampledFrom([]int32{-5, 0, 10, 1000, refmodel.SystemCriticalPriority, refmodel.SystemCriticalPriority + 1000}).Draw(t, name+"/prio")
			p.Spec.Priority = &prio
		}
		if rapid.Bool().Draw(t, name+"/static?") {
			p.Annotations = map[string]string{podutil.AnnotationConfigSource: rapid.SampledFrom([]string{"file", "http", "api"}).Draw(t, name+"/source")}
		}
		for i := range rapid.IntRange(0, 2).Draw(t, name+"/inits") {
			c := corev1.Container{Name: "init" + string(rune('a'+i)), Resources: requirements(t, name+"/init")}
			if rapid.Bool().Draw(t, name+"/sidecar?") {
				always := corev1.ContainerRestartPolicyAlways
				c.RestartPolicy = &always
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
		for i := range rapid.IntRange(1, 3).Draw(t, name+"/containers") {
			c := corev1.Container{Name: "app" + string(rune('a'+i)), Resources: requirements(t, name+"/app")}
			if rapid.Bool().Draw(t, name+"/own-policy?") {
				own := rapid.SampledFrom([]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyNever}).Draw(t, name+"/own-policy")
				c.RestartPolicy = &own
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	rapid.Check(t, func(t *rapid.T) {
		var pods []*corev1.Pod
		for i := range rapid.IntRange(1, 5).Draw(t, "pods") {
			pods = append(pods, drawPod(t, "p"+string(rune('a'+i))))
		}
		for _, p := range pods {
			if got, want := podspec.QOSClass(p), refmodel.QOSClass(p); got != want {
				t.Fatalf("pod %s: agent's QoS class %s, model's %s:\n%s", p.Name, got, want, cmp.Diff(nil, p.Spec))
			}
			if got, want := podutil.IsCriticalPod(p), refmodel.IsCritical(p); got != want {
				t.Fatalf("pod %s: agent's critical %v, model's %v", p.Name, got, want)
			}
			if got, want := podutil.RunsOnce(p), refmodel.RunsOnce(p); got != want {
				t.Fatalf("pod %s: agent's runs-once %v, model's %v", p.Name, got, want)
			}
			for i := range p.Spec.Containers {
				for _, code := range []int32{0, 1, 137} {
					if got, want := podutil.ShouldRestart(p, &p.Spec.Containers[i], false, code), refmodel.Restarts(p, &p.Spec.Containers[i], code); got != want {
						t.Fatalf("pod %s container %d exit %d: agent restarts %v, model %v", p.Name, i, code, got, want)
					}
				}
			}
		}
		usages := make([]refmodel.Usage, len(pods))
		stats := make([]bool, len(pods))
		for i := range pods {
			usages[i] = refmodel.Usage{Memory: rapid.Int64Range(0, 200<<20).Draw(t, "mem"), Disk: rapid.Int64Range(0, 200<<20).Draw(t, "disk"),
				Inodes: rapid.Int64Range(0, 100).Draw(t, "inodes"), Processes: rapid.Int64Range(0, 50).Draw(t, "procs")}
			stats[i] = rapid.IntRange(0, 5).Draw(t, "stats") > 0
		}
		for _, signal := range []refmodel.Signal{refmodel.SignalMemoryAvailable, refmodel.SignalPIDAvailable, refmodel.SignalNodeFsAvailable, refmodel.SignalImageFsAvailable, refmodel.SignalNodeFsInodesFree} {
			var theirs []eviction.Candidate
			var ours []refmodel.Candidate
			for i, p := range pods {
				u := usages[i]
				theirs = append(theirs, eviction.Candidate{Pod: p, HasStats: stats[i], Usage: eviction.PodUsage{Memory: u.Memory, Disk: u.Disk, Inodes: u.Inodes, Processes: u.Processes}})
				ours = append(ours, refmodel.Candidate{Pod: p, HasStats: stats[i], Usage: u})
			}
			eviction.Rank(eviction.Signal(signal), theirs)
			refmodel.Rank(signal, ours)
			var got, want []string
			for i := range pods {
				got, want = append(got, theirs[i].Pod.Name), append(want, ours[i].Pod.Name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s ranking (-model +agent):\n%s", signal, diff)
			}
		}
	})
}
