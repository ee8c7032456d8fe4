package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// sizedResources is Resources in numbers: cpu in millicores, memory in
// MiB, 0 leaving one unset.
func sizedResources(container string, reqCPU, reqMemMi, limCPU, limMemMi int) PodOption {
	milli := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("%dm", n)
	}
	mi := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("%dMi", n)
	}
	return Resources(container, milli(reqCPU), mi(reqMemMi), milli(limCPU), mi(limMemMi))
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
		opts = append(opts, sizedResources("app", cpu, mem, cpu, mem))
		if two {
			opts = append(opts, sizedResources("web", 100, 16, 100, 16))
		}
	case 1:
		opts = append(opts, sizedResources("app", cpu, mem, 0, 0))
		if two {
			opts = append(opts, sizedResources("web", 100, 16, 2*cpu, 4*mem))
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
