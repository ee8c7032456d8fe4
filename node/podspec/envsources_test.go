package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Expected values follow upstream k8s.io/kubernetes@v1.37.2
// pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (envFrom first with
// its prefix, then env in order expanded against what came before and the
// service variables, optional references skipped, service variables last
// unless the container defines them) and pkg/kubelet/envvars/envvars.go
// FromServices (the variable names and values of a service). Upstream
// emits the variables in map order; lockstep's order is the one described
// by environment.

func cmRef(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}

func TestEnvFromConfigMapsSecretsAndServices(t *testing.T) {
	yes := true
	opts := ContainerOptions{
		ConfigMaps: map[string]*corev1.ConfigMap{
			"cfg": {Data: map[string]string{"b": "2", "a": "1", "LOG": "debug"}},
		},
		Secrets: map[string]*corev1.Secret{
			"db": {Data: map[string][]byte{"password": []byte("s3cr3t"), "user": []byte("app")}},
		},
		ServiceEnv: map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "LOG": "svc"},
	}
	tests := []struct {
		name string
		c    corev1.Container
		want [][2]string
	}{
		{name: "envFrom with and without prefix, keys sorted; service vars last",
			c: corev1.Container{EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("cfg")}},
				{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("db")}},
			}},
			want: [][2]string{{"LOG", "debug"}, {"a", "1"}, {"b", "2"}, {"DB_password", "s3cr3t"}, {"DB_user", "app"},
				{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}},
		{name: "key refs; env overrides envFrom keeping its place; expansion sees envFrom and services",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("cfg")}}},
				Env: []corev1.EnvVar{
					{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("db"), Key: "password"}}},
					{Name: "a", Value: "A"},
					{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)/$(b)?pw=$(PW)"},
					{Name: "LVL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("cfg"), Key: "LOG"}}},
				}},
			want: [][2]string{{"LOG", "debug"}, {"a", "A"}, {"b", "2"}, {"PW", "s3cr3t"},
				{"URL", "https://10.96.0.1:443/2?pw=s3cr3t"}, {"LVL", "debug"},
				{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}},
		{name: "optional missing object, missing key and missing envFrom are skipped",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("nope"), Optional: &yes}}},
				Env: []corev1.EnvVar{
					{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("nope"), Key: "k", Optional: &yes}}},
					{Name: "Y", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("db"), Key: "missing", Optional: &yes}}},
					{Name: "Z", Value: "$(X)"},
				}},
			want: [][2]string{{"Z", "$(X)"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}, {"LOG", "svc"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Name = "app"
			pod := testPod(func(p *corev1.Pod) { p.Spec.Containers = []corev1.Container{tt.c} })
			env, _, err := environment(pod, &pod.Spec.Containers[0], nil, testNode(), opts)
			if err != nil {
				t.Fatal(err)
			}
			got := make([][2]string, len(env))
			for i, e := range env {
				got[i] = [2]string{e.name, e.value}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
		})
	}
}

func TestMissingKeyNamesIt(t *testing.T) {
	opts := ContainerOptions{ConfigMaps: map[string]*corev1.ConfigMap{"cfg": {}}, Secrets: map[string]*corev1.Secret{"db": {}}}
	for _, tt := range []struct {
		src  corev1.EnvVarSource
		want string
	}{
		{corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("cfg"), Key: "k"}},
			`container "app" of pod prod/web: env "V": couldn't find key k in ConfigMap prod/cfg`},
		{corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("db"), Key: "pw"}},
			`container "app" of pod prod/web: env "V": couldn't find key pw in Secret prod/db`},
	} {
		pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: &tt.src}} })
		_, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], opts, testNode())
		if err == nil || err.Error() != tt.want {
			t.Errorf("err = %v, want %s", err, tt.want)
		}
	}
}

func TestEnvSources(t *testing.T) {
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("a")}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("s1")}},
		},
		Env: []corev1.EnvVar{
			{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("b")}}},
			{Name: "Y", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("a")}}},
			{Name: "Z", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("s2")}}},
			{Name: "W", Value: "v"},
		},
	}
	cms, secrets := EnvSources(c)
	if d := cmp.Diff([][]string{{"a", "b"}, {"s1", "s2"}}, [][]string{cms, secrets}); d != "" {
		t.Errorf("EnvSources (-want +got):\n%s", d)
	}
}

func TestServiceEnv(t *testing.T) {
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	master := svc("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	web := svc("prod", "my-web", "10.96.5.5", corev1.ServicePort{Port: 80}, corev1.ServicePort{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP})
	headless := svc("prod", "db", "None", corev1.ServicePort{Port: 5432})
	other := svc("default", "other", "10.96.7.7", corev1.ServicePort{Port: 1})
	// From envvars.FromServices and makeLinkVariables.
	masterVars := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
	}
	webVars := map[string]string{
		"MY_WEB_SERVICE_HOST":         "10.96.5.5",
		"MY_WEB_SERVICE_PORT":         "80",
		"MY_WEB_SERVICE_PORT_DNS_UDP": "53",
		"MY_WEB_PORT":                 "tcp://10.96.5.5:80",
		"MY_WEB_PORT_80_TCP":          "tcp://10.96.5.5:80",
		"MY_WEB_PORT_80_TCP_PROTO":    "tcp",
		"MY_WEB_PORT_80_TCP_PORT":     "80",
		"MY_WEB_PORT_80_TCP_ADDR":     "10.96.5.5",
		"MY_WEB_PORT_53_UDP":          "udp://10.96.5.5:53",
		"MY_WEB_PORT_53_UDP_PROTO":    "udp",
		"MY_WEB_PORT_53_UDP_PORT":     "53",
		"MY_WEB_PORT_53_UDP_ADDR":     "10.96.5.5",
	}
	all := []*corev1.Service{master, web, headless, other}
	t.Run("links", func(t *testing.T) {
		want := map[string]string{}
		for k, v := range masterVars {
			want[k] = v
		}
		for k, v := range webVars {
			want[k] = v
		}
		if d := cmp.Diff(want, ServiceEnv("prod", true, all)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	t.Run("no links: the master service only", func(t *testing.T) {
		if d := cmp.Diff(masterVars, ServiceEnv("prod", false, all)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	t.Run("IPv6 cluster IP is bracketed in URLs", func(t *testing.T) {
		got := ServiceEnv("default", false, []*corev1.Service{svc("default", "kubernetes", "fd00::1", corev1.ServicePort{Port: 443})})
		if got["KUBERNETES_PORT"] != "tcp://[fd00::1]:443" {
			t.Errorf("KUBERNETES_PORT = %q", got["KUBERNETES_PORT"])
		}
	})
}
