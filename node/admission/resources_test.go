package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func podReq(name string, req corev1.ResourceList, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "name"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func testNode() Node {
	return Node{
		Name:        "n1",
		Labels:      map[string]string{"kubernetes.io/hostname": "n1", "disk": "ssd", "gen": "5"},
		Allocatable: rl("cpu", "2", "memory", "4Gi", "ephemeral-storage", "10Gi", "pods", "3", "example.com/gpu", "1"),
	}
}

// The kubelet's predicate admission, reason and message as upstream words
// them (pkg/kubelet/lifecycle, the scheduler's plugins).
func TestAdmitBeside(t *testing.T) {
	one := podReq("a", rl("cpu", "1500m", "memory", "1Gi"))
	cases := []struct {
		name     string
		pod      *corev1.Pod
		node     func(*Node)
		admitted []*corev1.Pod
		want     Decision
	}{
		{name: "fits", pod: podReq("p", rl("cpu", "500m", "memory", "3Gi")), admitted: []*corev1.Pod{one}},
		{name: "best effort fits anything but the pod count", pod: podReq("p", nil), admitted: []*corev1.Pod{one, one}},
		{name: "out of pods", pod: podReq("p", nil), admitted: []*corev1.Pod{one, one, one},
			want: Decision{"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"}},
		{name: "out of cpu", pod: podReq("p", rl("cpu", "600m")), admitted: []*corev1.Pod{one},
			want: Decision{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"}},
		{name: "out of memory, limit standing for the request", pod: podReq("p", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = rl("memory", "3500Mi")
		}), admitted: []*corev1.Pod{one},
			want: Decision{"OutOfmemory", "Node didn't have enough resource: memory, requested: 3670016000, used: 1073741824, capacity: 4294967296"}},
		{name: "out of ephemeral storage", pod: podReq("p", rl("ephemeral-storage", "11Gi")),
			want: Decision{"OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"}},
		{name: "out of an extended resource", pod: podReq("p", rl("example.com/gpu", "2")),
			want: Decision{"OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"}},
		{name: "an extended resource the node lacks is not the node's to account", pod: podReq("p", rl("example.com/fpga", "2"))},
		{name: "cpu is checked before memory", pod: podReq("p", rl("cpu", "3", "memory", "5Gi")),
			want: Decision{"OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"}},
		{name: "node selector", pod: podReq("p", nil, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
			want: Decision{"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"}},
		{name: "node selector matches", pod: podReq("p", nil, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })},
		{name: "required affinity, second term matches", pod: podReq("p", nil, affinity(
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpDoesNotExist}}},
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gen", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}},
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}},
		))},
		{name: "required affinity, no term matches", pod: podReq("p", nil, affinity(
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gen", Operator: corev1.NodeSelectorOpLt, Values: []string{"5"}}}},
			corev1.NodeSelectorTerm{},
		)), want: Decision{"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"}},
		{name: "node name", pod: podReq("p", nil, func(p *corev1.Pod) { p.Spec.NodeName = "n2" }),
			want: Decision{"NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name"}},
		{name: "host port taken on the wildcard address", pod: podReq("p", nil, hostPortOpt("10.0.0.1", 8080)),
			admitted: []*corev1.Pod{podReq("q", nil, hostPortOpt("", 8080))},
			want:     Decision{"NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}},
		{name: "host port on another address", pod: podReq("p", nil, hostPortOpt("10.0.0.1", 8080)),
			admitted: []*corev1.Pod{podReq("q", nil, hostPortOpt("10.0.0.2", 8080))}},
		{name: "untolerated NoExecute taint", pod: podReq("p", nil), node: taint("dedicated", "db", corev1.TaintEffectNoExecute),
			want: Decision{"TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"}},
		{name: "tolerated NoExecute taint", pod: podReq("p", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db"}}
		}), node: taint("dedicated", "db", corev1.TaintEffectNoExecute)},
		{name: "NoSchedule taints are the scheduler's business", pod: podReq("p", nil), node: taint("dedicated", "db", corev1.TaintEffectNoSchedule)},
		{name: "static pods ignore taints", pod: podReq("p", nil, func(p *corev1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		}), node: taint("dedicated", "db", corev1.TaintEffectNoExecute)},
		{name: "os label", pod: podReq("p", nil, func(p *corev1.Pod) { p.Labels = map[string]string{"kubernetes.io/os": "windows"} }),
			want: Decision{"PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}},
		{name: "os field", pod: podReq("p", nil, func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }),
			want: Decision{"PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			if tc.node != nil {
				tc.node(&n)
			}
			if diff := cmp.Diff(tc.want, AdmitBeside(tc.pod, n, UsageOf(tc.admitted))); diff != "" {
				t.Errorf("AdmitBeside (-want +got):\n%s", diff)
			}
		})
	}
}

func affinity(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func hostPortOpt(ip string, port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: port, HostIP: ip}}
	}
}

func taint(k, v string, e corev1.TaintEffect) func(*Node) {
	return func(n *Node) { n.Taints = append(n.Taints, corev1.Taint{Key: k, Value: v, Effect: e}) }
}

// The eviction manager's admission: memory pressure refuses BestEffort
// pods only (unless they tolerate the memory-pressure taint), any other
// pressure every pod but a critical one.
func TestAdmitUnderPressure(t *testing.T) {
	mem := []corev1.NodeConditionType{corev1.NodeMemoryPressure}
	disk := []corev1.NodeConditionType{corev1.NodeDiskPressure}
	critical := int32(2_000_001_000)
	cases := []struct {
		name  string
		pod   *corev1.Pod
		qos   corev1.PodQOSClass
		conds []corev1.NodeConditionType
		want  Decision
	}{
		{name: "no pressure", pod: podReq("p", nil), qos: corev1.PodQOSBestEffort},
		{name: "memory pressure, burstable", pod: podReq("p", nil), qos: corev1.PodQOSBurstable, conds: mem},
		{name: "memory pressure, best effort", pod: podReq("p", nil), qos: corev1.PodQOSBestEffort, conds: mem,
			want: Decision{"Evicted", "The node had condition: [MemoryPressure]. "}},
		{name: "memory pressure, best effort tolerating it", pod: podReq("p", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists}}
		}), qos: corev1.PodQOSBestEffort, conds: mem},
		{name: "disk pressure, guaranteed", pod: podReq("p", nil), qos: corev1.PodQOSGuaranteed, conds: disk,
			want: Decision{"Evicted", "The node had condition: [DiskPressure]. "}},
		{name: "disk pressure, critical", pod: podReq("p", nil, func(p *corev1.Pod) { p.Spec.Priority = &critical }),
			qos: corev1.PodQOSBestEffort, conds: disk},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AdmitUnderPressure(tc.pod, tc.qos, tc.conds)); diff != "" {
				t.Errorf("AdmitUnderPressure (-want +got):\n%s", diff)
			}
		})
	}
}

// Requests as the scheduler counts them: regular containers and sidecars
// summed, or an init container with the sidecars before it if larger, plus
// the overhead.
func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("memory", "100Mi")}},
			{Name: "big-init", Resources: corev1.ResourceRequirements{Requests: rl("memory", "1Gi", "cpu", "100m")}},
		},
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("memory", "200Mi", "cpu", "1")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Limits: rl("memory", "300Mi")}},
		},
		Overhead: rl("memory", "10Mi"),
	}}
	got := map[string]int64{"cpu": Request(p, corev1.ResourceCPU), "memory": Request(p, corev1.ResourceMemory)}
	want := map[string]int64{"cpu": 1000, "memory": (1024 + 100 + 10) << 20}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
