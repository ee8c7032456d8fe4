package admission

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
)

// Quantities in several units and formats, so that sums and differences
// mix them.
var (
	cpuAmounts     = []string{"1m", "100m", "250m", "0.5", "1", "1500m", "2"}
	memoryAmounts  = []string{"1Ki", "100Mi", "1Gi", "512M", "1e9", "3"}
	storageAmounts = []string{"1Gi", "5Gi", "100M"}
	countAmounts   = []string{"1", "2"}
)

func genRequests(t *rapid.T, label string) corev1.ResourceList {
	out := corev1.ResourceList{}
	add := func(name corev1.ResourceName, amounts []string) {
		if rapid.Bool().Draw(t, label+" has "+string(name)) {
			out[name] = resource.MustParse(rapid.SampledFrom(amounts).Draw(t, label+" "+string(name)))
		}
	}
	add(corev1.ResourceCPU, cpuAmounts)
	add(corev1.ResourceMemory, memoryAmounts)
	add(corev1.ResourceEphemeralStorage, storageAmounts)
	add("example.com/gpu", countAmounts)
	add("example.com/fpga", countAmounts) // not the node's
	return out
}

func genPorts(t *rapid.T, label string) []corev1.ContainerPort {
	n := rapid.IntRange(0, 2).Draw(t, label+" ports")
	out := make([]corev1.ContainerPort, n)
	for i := range out {
		out[i] = corev1.ContainerPort{
			ContainerPort: 80,
			HostPort:      rapid.SampledFrom([]int32{0, 80, 8080}).Draw(t, label+" host port"),
			HostIP:        rapid.SampledFrom([]string{"", "0.0.0.0", "10.0.0.1", "10.0.0.2"}).Draw(t, label+" host ip"),
			Protocol:      rapid.SampledFrom([]corev1.Protocol{"", corev1.ProtocolTCP, corev1.ProtocolUDP}).Draw(t, label+" protocol"),
		}
	}
	return out
}

func genContainer(t *rapid.T, label string) corev1.Container {
	c := corev1.Container{Name: label, Ports: genPorts(t, label)}
	c.Resources.Requests = genRequests(t, label+" requests")
	if rapid.Bool().Draw(t, label+" has limits") {
		c.Resources.Limits = genRequests(t, label+" limits")
	}
	return c
}

// genPod is a pod of uid with one or two containers and maybe an init
// container, requesting random resources and binding random host ports.
func genPod(t *rapid.T, uid types.UID) *corev1.Pod {
	p := podReq(string(uid), nil)
	p.UID = uid
	p.Spec.Containers = nil
	for i := range rapid.IntRange(1, 2).Draw(t, "containers") {
		p.Spec.Containers = append(p.Spec.Containers, genContainer(t, fmt.Sprintf("c%d", i)))
	}
	if rapid.Bool().Draw(t, "has init") {
		p.Spec.InitContainers = []corev1.Container{genContainer(t, "init")}
	}
	return p
}

// listRequested is what the pods request of r, summed over the list.
func listRequested(pods []*corev1.Pod, r corev1.ResourceName) int64 {
	sum := corev1.ResourceList{}
	for _, p := range pods {
		addTo(sum, PodRequests(p))
	}
	return amount(sum, r)
}

// listConflicts reports whether some pod of the list binds a port that
// overlaps w, checking every pair.
func listConflicts(pods []*corev1.Pod, w hostPort) bool {
	for _, p := range pods {
		for _, h := range hostPorts(p) {
			if w.port == h.port && w.protocol == h.protocol && (w.ip == h.ip || w.ip == wildcardIP || h.ip == wildcardIP) {
				return true
			}
		}
	}
	return false
}

// An Admitted set kept up to date through admissions, resizes and
// removals decides as AdmitBeside over the Usage of the list of the pods it holds, and
// its Usage counts what summing and walking that list gives.
func TestAdmittedDecidesAsTheList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		node := Node{Name: "n1", Allocatable: rl(
			"cpu", rapid.SampledFrom([]string{"2", "4", "3500m"}).Draw(t, "node cpu"),
			"memory", rapid.SampledFrom([]string{"4Gi", "2e9"}).Draw(t, "node memory"),
			"ephemeral-storage", "10Gi",
			"pods", rapid.SampledFrom([]string{"3", "6", "20"}).Draw(t, "max pods"),
			"example.com/gpu", "2")}
		s := NewAdmitted()
		ref := map[types.UID]*corev1.Pod{}
		next := 0
		for step := range rapid.IntRange(1, 25).Draw(t, "steps") {
			uids := slices.Sorted(maps.Keys(ref))
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0 || len(uids) == 0: // admit a new pod
				uid := types.UID(fmt.Sprintf("uid-%d", next))
				next++
				p := genPod(t, uid)
				s.Set(p)
				ref[uid] = p
			case op == 1: // a resize replaces an admitted pod
				uid := rapid.SampledFrom(uids).Draw(t, "resized")
				p := genPod(t, uid)
				p.Spec.Containers[0].Ports = ref[uid].Spec.Containers[0].Ports
				s.Set(p)
				ref[uid] = p
			default:
				uid := rapid.SampledFrom(uids).Draw(t, "removed")
				if !s.Remove(uid) {
					t.Fatalf("step %d: Remove(%s) found nothing", step, uid)
				}
				delete(ref, uid)
			}
			var list []*corev1.Pod
			for _, p := range ref {
				list = append(list, p)
			}
			u := s.Usage()
			if u.Pods() != len(list) || s.Len() != len(list) {
				t.Fatalf("step %d: %d pods counted, %d in the set, %d admitted", step, u.Pods(), s.Len(), len(list))
			}
			for _, r := range []corev1.ResourceName{"cpu", "memory", "ephemeral-storage", "example.com/gpu", "example.com/fpga"} {
				if got, want := u.Requested(r), listRequested(list, r); got != want {
					t.Fatalf("step %d: %s requested %d, the list sums %d", step, r, got, want)
				}
			}
			for _, port := range []int32{80, 8080} {
				for _, ip := range []string{wildcardIP, "10.0.0.1", "10.0.0.3"} {
					for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
						w := hostPort{ip: ip, protocol: proto, port: port}
						if got, want := u.conflicts(w), listConflicts(list, w); got != want {
							t.Fatalf("step %d: conflict on %v %t, the list says %t", step, w, got, want)
						}
					}
				}
			}
			pod := genPod(t, "candidate")
			if diff := cmp.Diff(AdmitBeside(pod, node, UsageOf(list)), AdmitBeside(pod, node, u)); diff != "" {
				t.Fatalf("step %d: AdmitBeside over the kept Usage differs from over the list's (-list +usage):\n%s", step, diff)
			}
		}
	})
}
