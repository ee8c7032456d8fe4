package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// ResourceEnv sets env name on container to a resourceFieldRef of its own
// resource (e.g. "limits.memory"), with divisor ("" for 1).
func ResourceEnv(container, name, res, divisor string) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		sel := &corev1.ResourceFieldSelector{Resource: res}
		if divisor != "" {
			sel.Divisor = resource.MustParse(divisor)
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: sel}})
	}
}

// logOf returns the first log line of a container's first instance, its
// CRI prefix (time, stream, tag) cut off.
func logOf(h *harness.Harness, pod *corev1.Pod, container string) string {
	dir := podspec.LogDirectory("", podspec.RefOf(pod))
	data, err := h.Files.ReadFile(dir + "/" + podspec.ContainerLogPath(container, 0))
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(data), "\n")
	if f := strings.SplitN(line, " ", 4); len(f) == 4 {
		return f[3]
	}
	return line
}

// TestResourceFieldRefWithoutLimits: a resourceFieldRef to a limit the
// container does not set reads the node's allocatable amount, the same
// number the node status reports, as upstream; not 0.
func TestResourceFieldRefWithoutLimits(t *testing.T) {
	h := start(t, 61)
	pod := mustCreate(t, h, NewPod("downward", h.NodeName,
		ResourceEnv("app", "MEM", "limits.memory", ""),
		ResourceEnv("app", "CPU", "limits.cpu", "1m"),
		ResourceEnv("app", "DISK", "limits.ephemeral-storage", "1Mi"),
		Env("app", "FAKECRI_LOG", "mem=$(MEM) cpu=$(CPU) disk=$(DISK)")))
	runUntil(t, h, "downward logs a line", time.Minute, func() bool { return logOf(h, pod, "app") != "" })
	runUntil(t, h, "the node registered", time.Minute, func() bool { return len(h.API.User().Nodes()) == 1 })

	alloc := h.API.User().Nodes()[0].Status.Allocatable
	disk := alloc[corev1.ResourceEphemeralStorage]
	want := fmt.Sprintf("mem=%d cpu=%d disk=%d", alloc.Memory().Value(), alloc.Cpu().MilliValue(), (disk.Value()+(1<<20)-1)/(1<<20))
	if alloc.Memory().Value() == 0 || alloc.Cpu().MilliValue() == 0 || disk.Value() == 0 {
		t.Fatalf("node allocatable %v has zeros", alloc)
	}
	if got := logOf(h, pod, "app"); got != want {
		t.Errorf("container environment: %q, want the node's allocatable %q", got, want)
	}
}
