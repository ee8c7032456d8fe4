package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// envOf returns the environment of a pod's first running container as the
// runtime got it, as a map.
func envOf(t *testing.T, h *harness.Harness, uid types.UID) map[string]string {
	t.Helper()
	cs := PodContainers(h, uid)
	if len(cs) == 0 {
		t.Fatalf("pod %s has no container", uid)
	}
	cfg, _ := h.Runtime.TrueContainerConfig(cs[len(cs)-1].ID)
	out := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		out[kv.GetKey()] = string(kv.GetValue())
	}
	return out
}

// pickKeys returns the entries of m whose keys are listed.
func pickKeys(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// TestEnvFromConfigMapThatAppearsLater: a container whose env needs a
// configMap that does not exist yet waits in CreateContainerConfigError
// with a message naming it, and starts with the value once a user creates
// it; an env var from a Secret and an envFrom with a prefix arrive too.
// Before configMaps and secrets were read the container never started.
func TestEnvFromConfigMapThatAppearsLater(t *testing.T) {
	h := start(t, 135)
	h.API.User().PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte("s3cr3t")}})
	pod := mustCreate(t, h, NewPod("later", h.NodeName, func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		c.Env = []corev1.EnvVar{
			{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
		}
	}))
	runUntil(t, h, "later waits in CreateContainerConfigError", time.Minute, func() bool {
		r, _ := waitingReason(h, "later")
		return r == "CreateContainerConfigError"
	})
	if _, msg := waitingReason(h, "later"); msg != `configmap "settings" not found` {
		t.Errorf("waiting message %q, want the kubelet's %q", msg, `configmap "settings" not found`)
	}
	if cs := PodContainers(h, pod.UID); len(cs) != 0 {
		t.Fatalf("containers created before the configMap exists: %+v", cs)
	}
	h.API.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast", "level": "3"}})
	runUntil(t, h, "later Running", time.Minute, func() bool { return PodIs(h, "default", "later", corev1.PodRunning, true) })
	want := map[string]string{"MODE": "fast", "PASSWORD": "s3cr3t", "CFG_mode": "fast", "CFG_level": "3"}
	if d := cmp.Diff(want, pickKeys(envOf(t, h, pod.UID), "MODE", "PASSWORD", "CFG_mode", "CFG_level")); d != "" {
		t.Errorf("environment (-want +got):\n%s", d)
	}
}

// TestServiceEnvironmentVariables: every container gets the kubernetes
// service's variables; with service links (the default) also those of
// its namespace's services, not of other namespaces'; without links only
// the kubernetes service's. Before service variables were injected there
// were none.
func TestServiceEnvironmentVariables(t *testing.T) {
	h := start(t, 136)
	u := h.API.User()
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}})
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.3", Ports: []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP}}}})
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.4.4", Ports: []corev1.ServicePort{{Port: 5432}}}})
	no := false
	linked := mustCreate(t, h, NewPod("linked", h.NodeName))
	unlinked := mustCreate(t, h, NewPod("unlinked", h.NodeName, func(p *corev1.Pod) { p.Spec.EnableServiceLinks = &no }))
	runUntil(t, h, "both Running", time.Minute, func() bool {
		return PodIs(h, "default", "linked", corev1.PodRunning, true) && PodIs(h, "default", "unlinked", corev1.PodRunning, true)
	})
	keys := []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_PORT", "WEB_SERVICE_HOST", "WEB_PORT_8080_TCP_ADDR", "DB_SERVICE_HOST"}
	master := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443"}
	withLinks := map[string]string{"WEB_SERVICE_HOST": "10.96.3.3", "WEB_PORT_8080_TCP_ADDR": "10.96.3.3"}
	for k, v := range master {
		withLinks[k] = v
	}
	if d := cmp.Diff(withLinks, pickKeys(envOf(t, h, linked.UID), keys...)); d != "" {
		t.Errorf("linked pod's service variables (-want +got):\n%s", d)
	}
	if d := cmp.Diff(master, pickKeys(envOf(t, h, unlinked.UID), keys...)); d != "" {
		t.Errorf("unlinked pod's service variables (-want +got):\n%s", d)
	}
}

// TestEnvSourcesWhileAPIDown: a crashing container whose environment
// reads a configMap, a secret and services restarts while the apiserver is
// unreachable, configured from the last objects read, as upstream's
// caches allow. Before the agent kept them the restart failed with
// CreateContainerConfigError until the apiserver came back.
func TestEnvSourcesWhileAPIDown(t *testing.T) {
	h := start(t, 139)
	u := h.API.User()
	u.PutConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}})
	u.PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte("s3cr3t")}})
	u.PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 443}}}})
	pod := mustCreate(t, h, NewPod("crashy", h.NodeName, Exits("app", 5*time.Second, 1), func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env,
			corev1.EnvVar{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
			corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}})
	}))
	runUntil(t, h, "crashy's first instance", time.Minute, func() bool { return len(PodContainers(h, pod.UID)) >= 1 })
	h.API.Down(true)
	runUntil(t, h, "two restarts with the apiserver down", 2*time.Minute, func() bool {
		cs := PodContainers(h, pod.UID)
		return len(cs) > 0 && cs[len(cs)-1].Attempt >= 2
	})
	want := map[string]string{"MODE": "fast", "PASSWORD": "s3cr3t", "KUBERNETES_SERVICE_HOST": "10.96.0.1"}
	if d := cmp.Diff(want, pickKeys(envOf(t, h, pod.UID), "MODE", "PASSWORD", "KUBERNETES_SERVICE_HOST")); d != "" {
		t.Errorf("environment of the instance started while the apiserver was down (-want +got):\n%s", d)
	}
}

// TestEnvObjectsReadFromTheWatchedCache: the configMap and secret a
// container's environment names are kept by the same single-object
// watches as volumes' (one each), not read with a GET per container: a
// container that exits every 20 s is created again and again without a
// single GET of either object, and a new instance gets the configMap's
// updated value. Before, each container creation made one GET per
// referenced object.
func TestEnvObjectsReadFromTheWatchedCache(t *testing.T) {
	h := start(t, 139)
	c := NewChecker(h)
	putConfigMap(h, "settings", map[string]string{"mode": "fast"})
	h.API.User().PutSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Data: map[string][]byte{"password": []byte("s3cr3t")}})
	pod := mustCreate(t, h, NewPod("envy", h.NodeName, Exits("app", 20*time.Second, 1), func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
			corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}})
	}))
	runUntil(t, h, "envy Running", time.Minute, func() bool { return PodIs(h, "default", "envy", corev1.PodRunning, false) })
	if d := cmp.Diff(map[string]string{"MODE": "fast", "CFG_mode": "fast", "PASSWORD": "s3cr3t"},
		pickKeys(envOf(t, h, pod.UID), "MODE", "CFG_mode", "PASSWORD")); d != "" {
		t.Errorf("first environment (-want +got):\n%s", d)
	}
	putConfigMap(h, "settings", map[string]string{"mode": "slow"})
	runChecked(t, h, c, 3*time.Minute)
	if p, _ := APIPod(h, "default", "envy"); len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount < 2 {
		t.Fatalf("statuses %+v; want at least 2 restarts in 3 minutes (the test needs new instances)", p.Status.ContainerStatuses)
	}
	if d := cmp.Diff(map[string]string{"MODE": "slow", "CFG_mode": "slow", "PASSWORD": "s3cr3t"},
		pickKeys(envOf(t, h, pod.UID), "MODE", "CFG_mode", "PASSWORD")); d != "" {
		t.Errorf("environment of the latest instance after the update (-want +got):\n%s", d)
	}
	want := map[string]int{"watch configmaps": 1, "watch secrets": 1}
	if d := cmp.Diff(want, h.API.User().ObjectRequests()); d != "" {
		t.Errorf("requests about configMaps and secrets (-want +got):\n%s", d)
	}
	if got := h.API.User().OpenObjectWatches(); got != 2 {
		t.Errorf("%d object watches open, want 2", got)
	}
	if err := h.API.User().DeletePodGracefully("default", "envy", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 45*time.Second)
	if got := h.API.User().OpenObjectWatches(); got != 0 {
		t.Errorf("%d object watches still open after the pod was deleted", got)
	}
}
