//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// report runs cmd, prints "END" and keeps running until TERM, so that its
// log can be read while the pod runs.
func report(cmd string) string {
	return cmd + `; echo END; trap "exit 0" TERM; while :; do sleep 1; done`
}

// logLines waits until the container's log holds "END" and returns it.
func (e *env) logLines(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	var body string
	poll(t, 30*time.Second, "the report of pod "+p.Name, func() (bool, error) {
		code, b := e.logs(t, p, "c", e.adminTok)
		body = b
		return code == 200 && strings.Contains(b, "END"), fmt.Errorf("%d %q", code, b)
	})
	return body
}

// field returns the value after "key" on the log line starting with it.
func field(log, key string) string {
	for _, line := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestSecurityContextOnContainerd: containerd runs the container as the
// pod's runAsUser/runAsGroup with fsGroup and supplementalGroups, a
// read-only root file system refuses writes, a dropped capability is
// missing from the bounding set and no_new_privs is set.
func TestSecurityContextOnContainerd(t *testing.T) {
	e := setup(t)
	uid, gid, fsGroup := int64(1234), int64(2345), int64(3456)
	yes, no := true, false
	p := e.pod("secctx", false, report(`id; if echo x > /probe 2>/dev/null; then echo ROOTFS writable; else echo ROOTFS readonly; fi; `+
		`grep -E '^(CapBnd|NoNewPrivs):' /proc/self/status`))
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &fsGroup, SupplementalGroups: []int64{4567}}
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		RunAsNonRoot: &yes, ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW", "CHOWN"}},
	}
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	log := e.logLines(t, got)
	id := field(log, "uid=")
	for _, want := range []string{"1234", "gid=2345", "3456", "4567"} {
		if !strings.Contains(id, want) {
			t.Errorf("id printed %q; want it to contain %s (log %q)", "uid="+id, want, log)
		}
	}
	if v := field(log, "ROOTFS"); v != "readonly" {
		t.Errorf("writing to / succeeded (%q); want readOnlyRootFilesystem to refuse it (log %q)", v, log)
	}
	bnd, err := strconv.ParseUint(field(log, "CapBnd:"), 16, 64)
	if err != nil {
		t.Fatalf("CapBnd in %q: %v", log, err)
	}
	const capChown, capNetRaw = 0, 13
	if bnd&(1<<capChown) != 0 || bnd&(1<<capNetRaw) != 0 {
		t.Errorf("CapBnd %016x still holds CAP_CHOWN or CAP_NET_RAW", bnd)
	}
	if bnd == 0 {
		t.Errorf("CapBnd is empty; want only the dropped capabilities gone")
	}
	if v := field(log, "NoNewPrivs:"); v != "1" {
		t.Errorf("NoNewPrivs %q, want 1 (allowPrivilegeEscalation: false)", v)
	}
}

// TestRunAsNonRootRefusesRootImage: the e2e busybox image names no user,
// so it runs as root; a runAsNonRoot pod on it waits in
// CreateContainerConfigError and containerd never gets a container.
func TestRunAsNonRootRefusesRootImage(t *testing.T) {
	e := setup(t)
	yes := true
	p := e.pod("nonroot", false, "sleep 3600")
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes}
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "waiting in CreateContainerConfigError", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs[0].State.Waiting.Message, "runs as root")
	})
	if _, cs := e.criOf(t, string(got.UID)); len(cs) != 0 {
		t.Errorf("containerd holds %d containers of a pod that must not run", len(cs))
	}
}

// TestUserNamespaceRefusedOnContainerd: containerd 1.6 reports no
// runtime handlers in its CRI Status, so no user_namespaces feature (and
// it would ignore the user namespace option): a hostUsers: false pod gets
// no sandbox, and says why with upstream's FailedCreatePodSandBox event;
// it stays Pending, ContainerCreating.
func TestUserNamespaceRefusedOnContainerd(t *testing.T) {
	e := setup(t)
	no := false
	p := e.pod("userns", false, "sleep 3600")
	p.Spec.HostUsers = &no
	got := e.create(t, p)
	want := "FailedCreatePodSandBox: Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	poll(t, 60*time.Second, "the FailedCreatePodSandBox event", func() (bool, error) {
		evs := e.events(t, got)
		for _, ev := range evs {
			if ev == want {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %q", evs)
	})
	cur := e.get(t, got)
	if cs := cur.Status.ContainerStatuses; cur.Status.Phase != corev1.PodPending || len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("phase %s statuses %+v; want Pending, waiting ContainerCreating", cur.Status.Phase, cs)
	}
	if sbs, cs := e.criOf(t, string(got.UID)); len(sbs)+len(cs) != 0 {
		t.Errorf("containerd holds %d sandboxes and %d containers of a pod it cannot isolate", len(sbs), len(cs))
	}
}

// TestEnvFromSecretAndServices: an env var from a Secret, an envFrom of a
// ConfigMap with a prefix, and the kubernetes service's variables reach
// the container (the node reads the secret and configMap under Node
// authorization because its pod refers to them).
func TestEnvFromSecretAndServices(t *testing.T) {
	e := setup(t)
	ctx := ctxT(t, 30*time.Second)
	suffix := rand.String(5)
	sec, err := e.admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-sec-" + suffix}, Data: map[string][]byte{"password": []byte("pa55-" + suffix)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().Secrets("default").Delete(context.Background(), sec.Name, metav1.DeleteOptions{})
	})
	cm, err := e.admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-cm-" + suffix}, Data: map[string]string{"mode": "fast"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().ConfigMaps("default").Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	kube, err := e.admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	p := e.pod("env", false, report(`echo "PW $PW"; echo "MODE $CFG_mode"; echo "KSH $KUBERNETES_SERVICE_HOST"; echo "KSP $KUBERNETES_SERVICE_PORT"`))
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: sec.Name}, Key: "password"}}}}
	p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}
	got := e.create(t, p)
	e.waitPod(t, got, 90*time.Second, "Running and Ready", podReady)
	log := e.logLines(t, got)
	want := map[string]string{"PW": "pa55-" + suffix, "MODE": "fast", "KSH": kube.Spec.ClusterIP, "KSP": strconv.Itoa(int(kube.Spec.Ports[0].Port))}
	for k, v := range want {
		if g := field(log, k+" "); g != v {
			t.Errorf("%s = %q, want %q (log %q)", k, g, v, log)
		}
	}
}

// TestEnvServiceWatched: the service environment comes from the node's
// watch of all services: a service created after lockstep started is in
// the environment of a pod started next (service links, same namespace),
// and once deleted it is gone from the next pod's.
func TestEnvServiceWatched(t *testing.T) {
	e := setup(t)
	ctx := ctxT(t, 30*time.Second)
	name := "e2e-svc-" + rand.String(5)
	svc, err := e.admin.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	hostVar := strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_SERVICE_HOST"
	script := report(`echo "SVC ${` + hostVar + `:-none}"; echo "KSH $KUBERNETES_SERVICE_HOST"`)
	run := func(podName string) string {
		got := e.create(t, e.pod(podName, false, script))
		e.waitPod(t, got, 90*time.Second, "Running and Ready", podReady)
		return e.logLines(t, got)
	}
	if log := run("svc-env-1"); field(log, "SVC ") != svc.Spec.ClusterIP || field(log, "KSH ") == "" {
		t.Errorf("pod started after the service was created: log %q, want SVC %s and a KUBERNETES_SERVICE_HOST", log, svc.Spec.ClusterIP)
	}
	if err := e.admin.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if log := run("svc-env-2"); field(log, "SVC ") != "none" || field(log, "KSH ") == "" {
		t.Errorf("pod started after the service was deleted: log %q, want SVC none and a KUBERNETES_SERVICE_HOST", log)
	}
}

// TestSysctlsOnContainerd: a safe sysctl is set in the pod's network
// namespace; an unsafe one the node does not allow fails the pod with
// reason SysctlForbidden before containerd gets a sandbox.
func TestSysctlsOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("sysctl", false, report(`echo "RANGE $(cat /proc/sys/net/ipv4/ip_local_port_range)"`))
	p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "40000 50000"}}}
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	if r := strings.Join(strings.Fields(field(e.logLines(t, got), "RANGE ")), " "); r != "40000 50000" {
		t.Errorf("ip_local_port_range in the pod is %q, want 40000 50000", r)
	}

	bad := e.pod("sysctl-bad", false, "sleep 3600")
	bad.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.sem", Value: "250 32000 32 128"}}}
	gotBad := e.create(t, bad)
	e.waitPod(t, gotBad, 60*time.Second, "Failed with SysctlForbidden", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "SysctlForbidden"
	})
	if sbs, _ := e.criOf(t, string(gotBad.UID)); len(sbs) != 0 {
		t.Errorf("containerd holds %d sandboxes of a rejected pod", len(sbs))
	}
}

// TestRuntimeClassOnContainerd: a pod whose RuntimeClass names the second
// runc handler of the e2e containerd ("runc-alt") gets its sandbox under
// that handler; a pod whose class names a handler containerd lacks gets no
// sandbox and a FailedCreatePodSandBox event.
func TestRuntimeClassOnContainerd(t *testing.T) {
	e := setup(t)
	ctx := ctxT(t, 30*time.Second)
	rcName := "e2e-alt-" + rand.String(5)
	if _, err := e.admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: rcName}, Handler: "runc-alt"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.NodeV1().RuntimeClasses().Delete(context.Background(), rcName, metav1.DeleteOptions{})
	})

	p := e.pod("rc", false, sleeper)
	p.Spec.RuntimeClassName = &rcName
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	sbs, _ := e.criOf(t, string(got.UID))
	if len(sbs) != 1 || sbs[0].RuntimeHandler != "runc-alt" {
		t.Fatalf("sandboxes %+v, want one under handler runc-alt", sbs)
	}

	// The apiserver refuses pods naming a class that does not exist; a
	// class whose handler containerd lacks gets through.
	missing := "e2e-nohandler-" + rand.String(5)
	if _, err := e.admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: missing}, Handler: "no-such-handler"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.NodeV1().RuntimeClasses().Delete(context.Background(), missing, metav1.DeleteOptions{})
	})
	q := e.pod("rc-nohandler", false, sleeper)
	q.Spec.RuntimeClassName = &missing
	gotQ := e.create(t, q)
	poll(t, 60*time.Second, "a FailedCreatePodSandBox event naming the missing handler", func() (bool, error) {
		evs, err := e.admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + gotQ.Name})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "FailedCreatePodSandBox" && strings.Contains(ev.Message, "no-such-handler") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
	if cur := e.get(t, gotQ); cur.Status.Phase != corev1.PodPending {
		t.Errorf("pod whose handler is missing is %s, want Pending", cur.Status.Phase)
	}
	if sbs, _ := e.criOf(t, string(gotQ.UID)); len(sbs) != 0 {
		t.Errorf("containerd holds %d sandboxes of a pod whose handler is missing", len(sbs))
	}
}

// TestResolvConfOnContainerd: a dnsPolicy None pod's /etc/resolv.conf is
// exactly its dnsConfig (nameservers, searches, options).
func TestResolvConfOnContainerd(t *testing.T) {
	e := setup(t)
	two := "2"
	p := e.pod("dns", false, report(`cat /etc/resolv.conf`))
	p.Spec.DNSPolicy = corev1.DNSNone
	p.Spec.DNSConfig = &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.53", "10.0.0.54"},
		Searches:    []string{"a.example", "b.example"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}},
	}
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	log := e.logLines(t, got)
	for key, want := range map[string]string{"search": "a.example b.example", "options": "ndots:2 edns0"} {
		if g := strings.Join(strings.Fields(field(log, key+" ")), " "); g != want {
			t.Errorf("resolv.conf %s %q, want %q (log %q)", key, g, want, log)
		}
	}
	var servers []string
	for _, line := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "nameserver "); ok {
			servers = append(servers, strings.TrimSpace(v))
		}
	}
	if strings.Join(servers, ",") != "10.0.0.53,10.0.0.54" {
		t.Errorf("nameservers %v, want 10.0.0.53 and 10.0.0.54 (log %q)", servers, log)
	}
}

// TestEtcHostsOnContainerd: a pod's /etc/hosts is the kubelet-managed file:
// its IP with hostname.subdomain FQDN and hostname, then its hostAliases.
func TestEtcHostsOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("hosts", false, report(`cat /etc/hosts; echo; grep -c . /etc/hosts`))
	p.Spec.Hostname, p.Spec.Subdomain = "db-0", "dbs"
	p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"db.internal", "db"}}}
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	log := e.logLines(t, got)
	cur := e.get(t, got)
	for _, want := range []string{
		"# Kubernetes-managed hosts file.",
		"127.0.0.1\tlocalhost",
		cur.Status.PodIP + "\tdb-0.dbs." + got.Namespace + ".svc.cluster.local\tdb-0",
		"# Entries added by HostAliases.",
		"10.9.9.9\tdb.internal\tdb",
	} {
		if !strings.Contains(log, want+"\n") {
			t.Errorf("/etc/hosts lacks the line %q:\n%s", want, log)
		}
	}
}

// TestDeclaredNodeFeaturesOnContainerd: the Node declares the node
// features lockstep implements (status.declaredFeatures, v1.37), and a
// pod that needs one it does not (a RestartAllContainers restart rule:
// RestartAllContainersOnContainerExits) fails admission with reason
// PodFeatureUnsupported before containerd gets a sandbox.
func TestDeclaredNodeFeaturesOnContainerd(t *testing.T) {
	e := setup(t)
	node, err := e.admin.CoreV1().Nodes().Get(ctxT(t, 10*time.Second), e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}, node.Status.DeclaredFeatures); diff != "" {
		t.Errorf("node declaredFeatures (-want +got):\n%s", diff)
	}
	p := e.pod("restart-all", false, "sleep 3600")
	never := corev1.ContainerRestartPolicyNever
	p.Spec.Containers[0].RestartPolicy = &never
	p.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	got := e.create(t, p)
	e.waitPod(t, got, 60*time.Second, "Failed with PodFeatureUnsupported", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "PodFeatureUnsupported"
	})
	if sbs, _ := e.criOf(t, string(got.UID)); len(sbs) != 0 {
		t.Errorf("containerd holds %d sandboxes of a rejected pod", len(sbs))
	}
}
