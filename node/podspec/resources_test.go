package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLinuxResources(t *testing.T) {
	const gi = int64(1) << 30
	node := testNode() // 8 GiB
	tests := []struct {
		name      string
		req, lim  corev1.ResourceList
		priority  string
		other     *corev1.Container // a second regular container
		want      *runtimeapi.LinuxContainerResources
		wantQOS   corev1.PodQOSClass
		statusQOS corev1.PodQOSClass
	}{
		{
			name:    "best effort",
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
			wantQOS: corev1.PodQOSBestEffort,
		},
		{
			name: "guaranteed",
			req:  rl("cpu", "1", "memory", "1Gi"), lim: rl("cpu", "1", "memory", "1Gi"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: gi, OomScoreAdj: -997},
			wantQOS: corev1.PodQOSGuaranteed,
		},
		{
			name:    "limits only: requests default to limits, guaranteed",
			lim:     rl("cpu", "250m", "memory", "128Mi"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000, CpuQuota: 25000, MemoryLimitInBytes: 128 << 20, OomScoreAdj: -997},
			wantQOS: corev1.PodQOSGuaranteed,
		},
		{
			name: "burstable, request 2 GiB of 8",
			req:  rl("cpu", "100m", "memory", "2Gi"), lim: rl("memory", "4Gi"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, MemoryLimitInBytes: 4 * gi, OomScoreAdj: 750},
			wantQOS: corev1.PodQOSBurstable,
		},
		{
			name:    "burstable, tiny cpu request gets the minimum shares",
			req:     rl("cpu", "1m"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 999}, // no memory request: 1000 → 999
			wantQOS: corev1.PodQOSBurstable,
		},
		{
			name: "burstable, tiny cpu limit gets the minimum quota",
			req:  rl("cpu", "1m", "memory", "1Mi"), lim: rl("cpu", "5m"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999}, // 1000 - 1000*1Mi/8Gi rounds to 1000: one below best effort,
			wantQOS: corev1.PodQOSBurstable,
		},
		{
			name: "burstable, request of all memory is clamped to 3",
			req:  rl("memory", "8Gi"), lim: rl("memory", "16Gi"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 16 * gi, OomScoreAdj: 3},
			wantQOS: corev1.PodQOSBurstable,
		},
		{
			name:    "huge cpu request is capped",
			req:     rl("cpu", "1000"),
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 262144, CpuPeriod: 100000, OomScoreAdj: 999},
			wantQOS: corev1.PodQOSBurstable,
		},
		{
			name: "one guaranteed container beside a best-effort one is burstable",
			req:  rl("cpu", "1", "memory", "1Gi"), lim: rl("cpu", "1", "memory", "1Gi"),
			other:   &corev1.Container{Name: "other"},
			want:    &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: gi, OomScoreAdj: 875},
			wantQOS: corev1.PodQOSBurstable,
		},
		{
			name:      "the apiserver's QoS class wins",
			statusQOS: corev1.PodQOSGuaranteed,
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: -997},
			wantQOS:   corev1.PodQOSGuaranteed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: tt.req, Limits: tt.lim}
				if tt.other != nil {
					p.Spec.Containers = append(p.Spec.Containers, *tt.other)
				}
				p.Status.QOSClass = tt.statusQOS
			})
			if got := QOSClass(pod); got != tt.wantQOS {
				t.Errorf("QOSClass = %s, want %s", got, tt.wantQOS)
			}
			cfg, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, node)
			if err != nil {
				t.Fatal(err)
			}
			diffProto(t, tt.want, cfg.GetLinux().GetResources())
		})
	}
}

func TestQOSClassCountsInitContainers(t *testing.T) {
	guaranteed := corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = guaranteed
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("memory", "1Mi")}}}
	})
	if got := QOSClass(pod); got != corev1.PodQOSBurstable {
		t.Errorf("QOSClass with a burstable init container = %s, want Burstable", got)
	}
	pod.Spec.InitContainers[0].Resources = guaranteed
	if got := QOSClass(pod); got != corev1.PodQOSGuaranteed {
		t.Errorf("QOSClass with guaranteed init container = %s, want Guaranteed", got)
	}
	pod.Spec.Containers[0].Resources.Requests = rl("cpu", "500m", "memory", "1Gi")
	if got := QOSClass(pod); got != corev1.PodQOSBurstable {
		t.Errorf("QOSClass with requests below limits = %s, want Burstable", got)
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const gi = int64(1) << 30
	always := corev1.ContainerRestartPolicyAlways
	burstable := func(mem string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: rl("memory", mem)}}
	}
	tests := []struct {
		name     string
		mod      func(*corev1.Pod)
		target   func(*corev1.Pod) *corev1.Container
		capacity int64
		want     int64
	}{
		{
			name: "node-critical static pod, even best effort",
			mod: func(p *corev1.Pod) {
				p.Spec.PriorityClassName = "system-node-critical"
				p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			},
			capacity: 8 * gi, want: -997,
		},
		{
			name: "node-critical by priority",
			mod: func(p *corev1.Pod) {
				p.Spec.PriorityClassName = "system-node-critical"
				p.Spec.Priority = ptr(int32(2000001000))
			},
			capacity: 8 * gi, want: -997,
		},
		{
			name: "node-critical class on an API pod without critical priority is not critical",
			mod: func(p *corev1.Pod) {
				p.Spec.PriorityClassName = "system-node-critical"
				p.Annotations = map[string]string{"kubernetes.io/config.source": "api"}
			},
			capacity: 8 * gi, want: 1000,
		},
		{
			name: "cluster-critical is not node-critical",
			mod: func(p *corev1.Pod) {
				p.Spec.PriorityClassName = "system-cluster-critical"
				p.Spec.Priority = ptr(int32(2000000000))
			},
			capacity: 8 * gi, want: 1000,
		},
		{
			name:     "burstable, unknown node memory",
			mod:      func(p *corev1.Pod) { p.Spec.Containers[0] = burstable("1Gi") },
			capacity: 0, want: 999,
		},
		{
			name:     "burstable, 1 GiB of 4",
			mod:      func(p *corev1.Pod) { p.Spec.Containers[0] = burstable("1Gi") },
			capacity: 4 * gi, want: 750,
		},
		{
			name: "sidecar with a small request is scored like the smallest regular container",
			mod: func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{burstable("2Gi"), burstable("1Gi")}
				sc := burstable("100Mi")
				sc.Name, sc.RestartPolicy = "sidecar", &always
				p.Spec.InitContainers = []corev1.Container{sc}
			},
			target:   func(p *corev1.Pod) *corev1.Container { return &p.Spec.InitContainers[0] },
			capacity: 4 * gi, want: 750,
		},
		{
			name: "sidecar with a larger request keeps its own score",
			mod: func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{burstable("1Gi")}
				sc := burstable("2Gi")
				sc.Name, sc.RestartPolicy = "sidecar", &always
				p.Spec.InitContainers = []corev1.Container{sc}
			},
			target:   func(p *corev1.Pod) *corev1.Container { return &p.Spec.InitContainers[0] },
			capacity: 4 * gi, want: 500,
		},
		{
			name: "plain init container keeps its own score",
			mod: func(p *corev1.Pod) {
				p.Spec.Containers = []corev1.Container{burstable("2Gi")}
				ic := burstable("100Mi")
				ic.Name = "init"
				p.Spec.InitContainers = []corev1.Container{ic}
			},
			target:   func(p *corev1.Pod) *corev1.Container { return &p.Spec.InitContainers[0] },
			capacity: 4 * gi, want: 1000 - 1000*(100<<20)/(4*gi),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(tt.mod)
			c := &pod.Spec.Containers[0]
			if tt.target != nil {
				c = tt.target(pod)
			}
			if got := oomScoreAdj(pod, c, tt.capacity); got != tt.want {
				t.Errorf("oomScoreAdj = %d, want %d", got, tt.want)
			}
		})
	}
}
