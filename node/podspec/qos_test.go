package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestQOSClass is the rule of the QoS class as upstream v1.37.2 has it
// (pkg/apis/core/v1/helper/qos GetPodQOS and ComputePodQOS, with
// PodLevelResources and PodLevelResourcesFixKubeletQOSClass on, their
// defaults): the cases of its table test, re-expressed, then the requests
// the apiserver defaults (pkg/apis/core/v1 SetDefaults_Pod and
// defaultPodRequests), which QOSClass applies itself to undefaulted pods.
func TestQOSClass(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	guaranteed := func(name string) corev1.Container {
		return ctr(name, rl("cpu", "100m", "memory", "100Mi", "ephemeral-storage", "10Gi"), rl("cpu", "100m", "memory", "100Mi"))
	}
	res := func(name string, req, lim corev1.ResourceList) corev1.Container { return ctr(name, req, lim) }
	bestEffort := []corev1.Container{
		res("be0", nil, nil),
		res("be1", rl("cpu", "0", "memory", "0"), nil),
		res("be2", rl("cpu", "0", "memory", "0"), rl("cpu", "0", "memory", "0")),
		res("be3", rl("ephemeral-storage", "10Gi"), nil),
		res("be4", rl("ephemeral-storage", "10Gi"), rl("ephemeral-storage", "10Gi")),
	}
	burstable := []corev1.Container{
		res("bu0", rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")),
		res("bu1", rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "200Mi")),
		res("bu2", rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "100Mi")),
		res("bu3", rl("cpu", "100m", "memory", "100Mi"), nil),
		res("bu4", rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m")),
	}
	containers := func(cs ...corev1.Container) *corev1.Pod { return podWith(cs, nil) }
	withInit := func(app, init corev1.Container) *corev1.Pod {
		return podWith([]corev1.Container{app}, func(s *corev1.PodSpec) { s.InitContainers = []corev1.Container{init} })
	}
	podLevelOnGuaranteed := func(req, lim corev1.ResourceList) *corev1.Pod {
		return podWith([]corev1.Container{guaranteed("g")}, podLevel(req, lim))
	}
	type tc struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}
	tests := []tc{
		{"guaranteed container", containers(guaranteed("g")), corev1.PodQOSGuaranteed},
		{"two guaranteed containers", containers(guaranteed("a"), guaranteed("b")), corev1.PodQOSGuaranteed},
		{"two best-effort containers", containers(bestEffort[0], bestEffort[1]), corev1.PodQOSBestEffort},
		{"two burstable containers", containers(burstable[0], burstable[1]), corev1.PodQOSBurstable},
		{"guaranteed and best-effort mix", containers(guaranteed("g"), bestEffort[1]), corev1.PodQOSBurstable},
		{"best-effort and guaranteed mix", containers(bestEffort[0], guaranteed("g")), corev1.PodQOSBurstable},
		{"guaranteed and burstable mix", containers(guaranteed("g"), burstable[1]), corev1.PodQOSBurstable},
		{"init: guaranteed app, best-effort init", withInit(guaranteed("g"), bestEffort[1]), corev1.PodQOSBurstable},
		{"init: both guaranteed", withInit(guaranteed("a"), guaranteed("b")), corev1.PodQOSGuaranteed},
		{"init: burstable init", withInit(guaranteed("g"), burstable[1]), corev1.PodQOSBurstable},
		{"an ephemeral container does not count", podWith([]corev1.Container{guaranteed("g")}, func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "ec"}}}
		}), corev1.PodQOSGuaranteed},
		{"guaranteed sidecar and app", podWith([]corev1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))}, func(s *corev1.PodSpec) {
			side := ctr("side", nil, rl("cpu", "100m", "memory", "64Mi"))
			side.RestartPolicy = &always
			s.InitContainers = []corev1.Container{side}
		}), corev1.PodQOSGuaranteed},

		// Pod-level resources, over a guaranteed container.
		{"empty pod-level lists fall back to the containers", podLevelOnGuaranteed(corev1.ResourceList{}, corev1.ResourceList{}), corev1.PodQOSGuaranteed},
		{"empty pod-level resources fall back to the containers", podLevelOnGuaranteed(nil, nil), corev1.PodQOSGuaranteed},
		{"zero pod-level resources count, best effort", podLevelOnGuaranteed(rl("cpu", "0", "memory", "0"), rl("cpu", "0", "memory", "0")), corev1.PodQOSBestEffort},
		{"pod-level requests below limits, burstable", podLevelOnGuaranteed(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")), corev1.PodQOSBurstable},
		{"pod-level ephemeral-storage only does not count", podLevelOnGuaranteed(rl("ephemeral-storage", "1Gi"), nil), corev1.PodQOSGuaranteed},
		{"pod-level with only an extended resource does not count", podLevelOnGuaranteed(nil, rl("example.com/gpu", "1")), corev1.PodQOSGuaranteed},
		{"pod-level with only hugepages, over best-effort containers: best effort", podWith([]corev1.Container{ctr("be", nil, nil)},
			podLevel(nil, rl("hugepages-2Mi", "4Mi"))), corev1.PodQOSBestEffort},
		{"pod-level guaranteed with hugepages", podWith([]corev1.Container{ctr("be", nil, nil)},
			podLevel(rl("cpu", "10m", "memory", "100Mi", "hugepages-2Mi", "100Mi"), rl("cpu", "10m", "memory", "100Mi", "hugepages-2Mi", "100Mi"))), corev1.PodQOSGuaranteed},
		{"pod-level cpu request, hugepages limit: burstable", podWith([]corev1.Container{ctr("be", nil, nil)},
			podLevel(rl("cpu", "10m", "hugepages-2Mi", "100Mi"), rl("hugepages-2Mi", "100Mi"))), corev1.PodQOSBurstable},
		{"pod-level guaranteed over unset containers", podWith([]corev1.Container{ctr("a", nil, nil)},
			podLevel(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},

		// Requests and pod-level limits completed as the apiserver does at
		// creation, before it computes the class: upstream's own table
		// feeds ComputePodQOS raw pods, on which every Guaranteed case
		// below but the first would be Burstable (the hugepages one
		// BestEffort).
		{"container limits only: requests default to them", containers(ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},
		{"pod-level limits only: requests default to them", podWith([]corev1.Container{ctr("a", nil, nil)},
			podLevel(nil, rl("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},
		{"pod-level limits, containers' requests below: burstable", podWith([]corev1.Container{ctr("a", rl("cpu", "500m"), nil)},
			podLevel(nil, rl("cpu", "1", "memory", "1Gi"))), corev1.PodQOSBurstable},
		{"pod-level burstable wins over guaranteed containers", podWith([]corev1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))},
			podLevel(rl("cpu", "1"), rl("cpu", "2", "memory", "2Gi"))), corev1.PodQOSBurstable},
		{"pod-level cpu limit only: burstable", podWith([]corev1.Container{ctr("a", nil, nil)}, podLevel(nil, rl("cpu", "1"))), corev1.PodQOSBurstable},
		{"pod-level requests above every container's limits raise the limits: guaranteed",
			podLevelOnGuaranteed(rl("cpu", "1", "memory", "1Gi"), nil), corev1.PodQOSGuaranteed},
		{"pod-level limits only of a pod whose containers limit each one resource: guaranteed",
			podWith([]corev1.Container{ctr("a", nil, rl("cpu", "1")), ctr("b", nil, rl("memory", "1Gi"))}, podLevel(nil, rl("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},
		{"pod-level hugepages limit over guaranteed containers: completed from them, guaranteed",
			podLevelOnGuaranteed(nil, rl("hugepages-2Mi", "4Mi")), corev1.PodQOSGuaranteed},
		{"pod-level memory request over a container limiting cpu only: burstable",
			podWith([]corev1.Container{ctr("a", nil, rl("cpu", "1"))}, podLevel(rl("memory", "1Gi"), nil)), corev1.PodQOSBurstable},
		{"pod-level cpu limit, a container without limits: the memory limit stays unset, burstable",
			podWith([]corev1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi")), ctr("b", nil, nil)}, podLevel(nil, rl("cpu", "1"))), corev1.PodQOSBurstable},
	}
	for _, c := range bestEffort {
		tests = append(tests, tc{"best-effort container " + c.Name, containers(c), corev1.PodQOSBestEffort})
	}
	for _, c := range burstable {
		tests = append(tests, tc{"burstable container " + c.Name, containers(c), corev1.PodQOSBurstable})
		tests = append(tests, tc{"burstable pod-level " + c.Name, podWith([]corev1.Container{ctr("be", nil, nil)}, podLevel(c.Resources.Requests, c.Resources.Limits)), corev1.PodQOSBurstable})
	}

	// The class the status carries wins over every spec.
	for _, base := range tests {
		for _, class := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
			if class == base.want {
				continue
			}
			p := base.pod.DeepCopy()
			p.Status.QOSClass = class
			tests = append(tests, tc{base.name + ", status says " + string(class), p, class})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := QOSClass(tc.pod); got != tc.want {
				t.Errorf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}
