package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources sets a container's requests and limits (cpu in millicores,
// memory in MiB; 0 leaves one unset), creating the container if missing.
func Resources(container string, reqCPU, reqMemMi, limCPU, limMemMi int) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		set := func(rl *corev1.ResourceList, cpu, mem int) {
			if cpu == 0 && mem == 0 {
				return
			}
			if *rl == nil {
				*rl = corev1.ResourceList{}
			}
			if cpu > 0 {
				(*rl)[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpu), resource.DecimalSI)
			}
			if mem > 0 {
				(*rl)[corev1.ResourceMemory] = *resource.NewQuantity(int64(mem)<<20, resource.BinarySI)
			}
		}
		set(&c.Resources.Requests, reqCPU, reqMemMi)
		set(&c.Resources.Limits, limCPU, limMemMi)
	}
}

// QOSPod returns a pod of QoS class qos%3 (Guaranteed, Burstable,
// BestEffort) with one or two containers whose resources derive from size
// (cpu 100m–1.6 CPU, memory 16–256 MiB), and which exits (and so
// terminates under restartPolicy OnFailure) when size is odd.
func QOSPod(name, node string, qos, size int) *corev1.Pod {
	cpu, mem := 100*(1+size%16), 16*(1+size%16)
	opts := []PodOption{}
	two := size%4 >= 2
	switch pick(qos, 3) {
	case 0:
		opts = append(opts, Resources("app", cpu, mem, cpu, mem))
		if two {
			opts = append(opts, Resources("web", 100, 16, 100, 16))
		}
	case 1:
		opts = append(opts, Resources("app", cpu, mem, 0, 0))
		if two {
			opts = append(opts, Resources("web", 100, 16, 2*cpu, 4*mem))
		}
	default:
		if two {
			opts = append(opts, Container("web"))
		}
	}
	if size%2 == 1 {
		opts = append(opts, Restart(corev1.RestartPolicyOnFailure), Exits("app", time.Duration(1+size%5)*time.Second, 0))
		if two {
			opts = append(opts, Exits("web", 2*time.Second, 0))
		}
	}
	return NewPod(name, node, opts...)
}

func opCreateQOS(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, QOSPod(name, r.h.NodeName, a[0], a[1])); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}
