package podspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b", "EMPTY": "", "D": "$(A)"}
	lookup := func(n string) (string, bool) {
		v, ok := vars[n]
		return v, ok
	}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybz"},
		{"$(A)$(A)", "aa"},
		{"$(EMPTY)", ""},
		{"<$(EMPTY)>", "<>"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"pre-$(UNKNOWN)-$(A)", "pre-$(UNKNOWN)-a"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$$$(A)", "$$(A)"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$é", "$é"},
		{"$-$(A)", "$-a"},
		{"$()", "$()"},
		{"$(A", "$(A"},
		{"$(A $$", "$(A $"},
		{"$(A $(B)", "$(A $(B)"},
		{"$(D)", "$(A)"}, // values are not expanded again
		{"(A)$", "(A)$"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, lookup); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnvironmentOrderAndExpansion(t *testing.T) {
	c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "A", Value: "1"},
		{Name: "B", Value: "$(A)-$(C)"}, // C is declared later: left as written
		{Name: "C", Value: "3"},
		{Name: "A", Value: "$(A)$(A)"}, // redeclared: first position, last value, sees the old A
		{Name: "E", Value: ""},
		{Name: "F", Value: "[$(E)][$$(A)]"},
		{Name: "G", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "H", Value: "$(G).$(A)"},
	}}
	got, _, err := environment(testPod(), c, nil, testNode(), ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []envVar{
		{"A", "11"}, {"B", "1-$(C)"}, {"C", "3"}, {"E", ""}, {"F", "[][$(A)]"}, {"G", "web"}, {"H", "web.11"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(envVar{})); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
}

func TestFieldRef(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web", "tier": "front"}
		p.Annotations = map[string]string{"example.com/owner": "team-a"}
		p.Spec.ServiceAccountName = "sa"
	})
	node := testNode()
	node.HostIPs = []string{"10.0.0.5", "fd00::5"}
	podIPs := []string{"10.1.0.7", "fd01::7"}
	tests := []struct {
		path, apiVersion string
		pod              *corev1.Pod
		node             *NodeInfo
		podIPs           []string
		want             string
		wantErr          string
	}{
		{path: "metadata.name", want: "web"},
		{path: "metadata.namespace", want: "prod"},
		{path: "metadata.uid", want: "uid-1"},
		{path: "metadata.labels['app']", want: "web"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['example.com/owner']", want: "team-a"},
		{path: "metadata.labels", want: "app=\"web\"\ntier=\"front\""},
		{path: "metadata.annotations", want: "example.com/owner=\"team-a\""},
		{path: "spec.nodeName", want: "node-a"},
		{path: "spec.nodeName", pod: testPod(func(p *corev1.Pod) { p.Spec.NodeName = "" }), want: "node-a"},
		{path: "spec.host", want: "node-a"},
		{path: "spec.serviceAccountName", want: "sa"},
		{path: "status.hostIP", want: "10.0.0.5"},
		{path: "status.hostIPs", want: "10.0.0.5,fd00::5"},
		{path: "status.hostIPs", node: &NodeInfo{HostIP: "10.0.0.9"}, want: "10.0.0.9"},
		{path: "status.hostIP", node: &NodeInfo{}, wantErr: "node's IP is not known"},
		{path: "status.podIP", want: "10.1.0.7"},
		{path: "status.podIPs", want: "10.1.0.7,fd01::7"},
		{path: "status.podIP", podIPs: []string{}, want: ""},
		{path: "metadata.name", apiVersion: "v1", want: "web"},
		{path: "metadata.name", apiVersion: "v2", wantErr: `apiVersion "v2" is not supported`},
		{path: "metadata.name['x']", wantErr: "takes no subscript"},
		{path: "metadata.labels['bad key!']", wantErr: "invalid label key"},
		{path: "status.phase", wantErr: "is not supported"},
	}
	for _, tt := range tests {
		p, n, ips := pod, node, podIPs
		if tt.pod != nil {
			p = tt.pod
		}
		if tt.node != nil {
			n = *tt.node
		}
		if tt.podIPs != nil {
			ips = tt.podIPs
		}
		got, err := fieldRefValue(p, &corev1.ObjectFieldSelector{FieldPath: tt.path, APIVersion: tt.apiVersion}, ips, n)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want one containing %q", tt.path, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}

func TestResourceFieldRef(t *testing.T) {
	app := corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "250m", "memory", "100Mi", "hugepages-2Mi", "4Mi"),
		Limits:   rl("cpu", "1500m", "memory", "1Gi", "hugepages-2Mi", "4Mi"),
	}}
	bare := corev1.Container{Name: "bare"}
	limitOnly := corev1.Container{Name: "limit-only", Resources: corev1.ResourceRequirements{Limits: rl("memory", "64Mi")}}
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{app, bare, limitOnly}
	})
	node := testNode()
	node.Allocatable = rl("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi")
	tests := []struct {
		c             *corev1.Container
		res, divisor  string
		containerName string
		want, wantErr string
	}{
		{c: &app, res: "limits.cpu", want: "2"}, // 1.5 cores rounded up
		{c: &app, res: "limits.cpu", divisor: "1m", want: "1500"},
		{c: &app, res: "requests.cpu", want: "1"}, // 250m rounded up
		{c: &app, res: "requests.cpu", divisor: "1m", want: "250"},
		{c: &app, res: "requests.cpu", divisor: "100m", want: "3"},
		{c: &app, res: "limits.memory", want: "1073741824"},
		{c: &app, res: "limits.memory", divisor: "1Mi", want: "1024"},
		{c: &app, res: "requests.memory", divisor: "1M", want: "105"}, // 104.8576 rounded up
		{c: &app, res: "requests.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{c: &bare, res: "limits.cpu", want: "4"}, // no limit: node allocatable
		{c: &bare, res: "limits.memory", divisor: "1Gi", want: "8"},
		{c: &bare, res: "limits.ephemeral-storage", divisor: "1Gi", want: "100"},
		{c: &bare, res: "requests.cpu", want: "0"},
		{c: &bare, res: "requests.memory", want: "0"},
		{c: &limitOnly, res: "requests.memory", divisor: "1Mi", want: "64"}, // request defaults to the limit
		{c: &bare, res: "limits.memory", containerName: "app", divisor: "1Mi", want: "1024"},
		{c: &bare, res: "limits.memory", containerName: "nope", wantErr: `no container "nope"`},
		{c: &app, res: "limits.nvidia.com/gpu", wantErr: "is not supported"},
		{c: &app, res: "usage.cpu", wantErr: "is not supported"},
	}
	for _, tt := range tests {
		fs := &corev1.ResourceFieldSelector{Resource: tt.res, ContainerName: tt.containerName}
		if tt.divisor != "" {
			fs.Divisor = resource.MustParse(tt.divisor)
		}
		got, err := resourceFieldRefValue(pod, tt.c, fs, node)
		name := tt.c.Name + ":" + tt.res + "/" + tt.divisor
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want one containing %q", name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, tt.want)
		}
	}
}

// TestEnvSourceErrors: a missing required source or key is an error
// naming it, the variable and the container, whose UserMessage is the
// kubelet's own words (makeEnvironmentVariables: "couldn't find key K in
// ConfigMap ns/name"; a missing object is its object manager's NotFound,
// `configmap "name" not found`).
func TestEnvSourceErrors(t *testing.T) {
	tests := []struct {
		name     string
		c        corev1.Container
		wantErr  string
		wantUser string
	}{
		{
			name: "configMapKeyRef",
			c: corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "CFG", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"},
			}}}},
			wantErr:  `container "app" of pod prod/web: env "CFG": configmap "cm" not found`,
			wantUser: `configmap "cm" not found`,
		},
		{
			name: "secretKeyRef",
			c: corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"},
			}}}},
			wantErr:  `container "app" of pod prod/web: env "PW": secret "s" not found`,
			wantUser: `secret "s" not found`,
		},
		{
			name: "envFrom configMap",
			c: corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}},
			}}},
			wantErr:  `container "app" of pod prod/web: envFrom[0]: configmap "cm" not found`,
			wantUser: `configmap "cm" not found`,
		},
		{
			name: "bad fieldRef",
			c: corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"},
			}}}},
			wantErr:  `container "app" of pod prod/web: env "X": fieldRef spec.nope is not supported`,
			wantUser: `container "app" of pod prod/web: env "X": fieldRef spec.nope is not supported`,
		},
	}
	for _, tt := range tests {
		pod := testPod(func(p *corev1.Pod) { p.Spec.Containers = []corev1.Container{tt.c} })
		_, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, testNode())
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("%s: err = %v\nwant %s", tt.name, err, tt.wantErr)
			continue
		}
		if got := UserMessage(err); got != tt.wantUser {
			t.Errorf("%s: UserMessage = %q, want %q", tt.name, got, tt.wantUser)
		}
	}
}

func TestSortPodIPs(t *testing.T) {
	tests := []struct {
		hostIP string
		in     []string
		want   []string
	}{
		{"10.0.0.1", []string{"fd00::1", "10.1.0.1"}, []string{"10.1.0.1", "fd00::1"}},
		{"fd00::9", []string{"10.1.0.1", "fd00::1"}, []string{"fd00::1", "10.1.0.1"}},
		{"", []string{"fd00::1", "10.1.0.1", "10.1.0.2"}, []string{"10.1.0.1", "fd00::1"}},
		{"10.0.0.1", []string{"garbage", "fd00::1"}, []string{"fd00::1"}},
		{"10.0.0.1", nil, nil},
	}
	for _, tt := range tests {
		got := sortPodIPs(tt.in, NodeInfo{HostIP: tt.hostIP})
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("sortPodIPs(%v) host %s (-want +got):\n%s", tt.in, tt.hostIP, d)
		}
	}
}
