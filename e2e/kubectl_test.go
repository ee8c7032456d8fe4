//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectl runs the upstream kubectl (hack/e2e/build-kubectl.sh) as the
// admin: every command goes through the apiserver, which reaches lockstep
// at the node's InternalIP with its kubelet client certificate.
type kubectl struct {
	bin, kubeconfig string
}

func (e *env) kubectl(t *testing.T) kubectl {
	t.Helper()
	bin := os.Getenv("LOCKSTEP_E2E_KUBECTL")
	if bin == "" {
		t.Skip("LOCKSTEP_E2E_KUBECTL unset: hack/e2e/run.sh builds kubectl (hack/e2e/build-kubectl.sh)")
	}
	return kubectl{bin: bin, kubeconfig: filepath.Join(e.dir, "admin.kubeconfig")}
}

// cmd is a kubectl command with extra environment variables env.
func (k kubectl) cmd(ctx context.Context, env []string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	c.Env = append(os.Environ(), env...)
	return c
}

// run runs kubectl with stdin and returns stdout, stderr and the error.
func (k kubectl) run(t *testing.T, env []string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := k.cmd(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader(stdin), &stdout, &stderr
	err := c.Run()
	return stdout.String(), stderr.String(), err
}

// raw GETs one of the node's paths as the admin through the apiserver's
// node proxy: kubectl get --raw /api/v1/nodes/<node>/proxy<path>. The
// apiserver dials the node at its InternalIP (never loopback:
// hack/e2e/node-ip.sh) and its daemonEndpoints port, with its kubelet
// client certificate, which lockstep authenticates with --client-ca-file.
func (e *env) raw(t *testing.T, k kubectl, path string) (string, error) {
	t.Helper()
	out, stderr, err := k.run(t, nil, "", "get", "--raw", "/api/v1/nodes/"+e.node+"/proxy"+path)
	if err != nil {
		return "", fmt.Errorf("kubectl get --raw /api/v1/nodes/%s/proxy%s: %v: %s", e.node, path, err, stderr)
	}
	return out, nil
}

// waitRunning waits until the pod's containers all run.
func (e *env) waitRunning(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	return e.waitPod(t, p, 90*time.Second, "running", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
	})
}

// TestKubectlExec runs kubectl exec through the apiserver over WebSocket
// (kubectl's default, v5.channel.k8s.io) and over SPDY
// (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false): output, stdin and exit codes.
func TestKubectlExec(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.waitRunning(t, e.create(t, e.pod("exec", false, "sleep 3600")))
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"websocket", nil},
		{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := k.run(t, tc.env, "", "exec", p.Name, "--", "sh", "-c", "echo out-$((6*7)); echo err >&2")
			if err != nil || out != "out-42\n" || errOut != "err\n" {
				t.Errorf("kubectl exec echo: stdout %q stderr %q err %v; want out-42 and err", out, errOut, err)
			}
			out, errOut, err = k.run(t, tc.env, "piped through\n", "exec", "-i", p.Name, "--", "cat")
			if err != nil || out != "piped through\n" {
				t.Errorf("kubectl exec -i cat: stdout %q stderr %q err %v", out, errOut, err)
			}
			_, errOut, err = k.run(t, tc.env, "", "exec", p.Name, "--", "sh", "-c", "exit 3")
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 || !strings.Contains(errOut, "command terminated with exit code 3") {
				t.Errorf("kubectl exec exit 3: %v, stderr %q; want kubectl to exit 3", err, errOut)
			}
			_, errOut, err = k.run(t, tc.env, "", "exec", p.Name, "-c", "nope", "--", "true")
			if err == nil || !strings.Contains(errOut, "nope") {
				t.Errorf("kubectl exec into a container that does not exist: %v, stderr %q", err, errOut)
			}
		})
	}
}

// TestKubectlAttach attaches to a container that prints a line a second
// and reads lines printed after the attach.
func TestKubectlAttach(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.waitRunning(t, e.create(t, e.pod("attach", false, `i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done`)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := k.cmd(ctx, nil, "attach", p.Name, "-c", "c")
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	sc := bufio.NewScanner(stdout)
	var got []string
	for len(got) < 2 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "tick ") {
			got = append(got, sc.Text())
		}
	}
	if len(got) < 2 {
		t.Fatalf("kubectl attach printed %q before ending (%v, stderr %q), want two tick lines", got, sc.Err(), errOut.String())
	}
	t.Logf("attached: %q", got)
}

// TestKubectlPortForward forwards a local port to a busybox httpd in the
// pod's network namespace, over kubectl's default (WebSocket tunneling)
// and over SPDY.
func TestKubectlPortForward(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.waitRunning(t, e.create(t, e.pod("httpd", false,
		`mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`)))
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"websocket", nil},
		{"spdy", []string{"KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := k.cmd(ctx, tc.env, "port-forward", "pod/"+p.Name, ":8080")
			stdout, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errOut bytes.Buffer
			c.Stderr = &errOut
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { c.Process.Kill(); c.Wait() }()
			// "Forwarding from 127.0.0.1:41234 -> 8080"
			re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
			sc := bufio.NewScanner(stdout)
			port := ""
			for port == "" && sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					port = m[1]
				}
			}
			if port == "" {
				t.Fatalf("kubectl port-forward printed no local port (%v, stderr %q)", sc.Err(), errOut.String())
			}
			go io.Copy(io.Discard, stdout)
			for i := range 3 { // several connections over one forward
				resp, err := http.Get("http://127.0.0.1:" + port + "/index.html")
				if err != nil {
					t.Fatalf("GET %d through the port forward: %v (stderr %q)", i, err, errOut.String())
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(body) != "hello from "+p.Name+"\n" {
					t.Errorf("GET %d through the port forward = %d %q, want 200 %q", i, resp.StatusCode, body, "hello from "+p.Name+"\n")
				}
			}
		})
	}
}

// TestKubectlLogs reads a restarted container's current and previous logs
// with kubectl logs and kubectl logs --previous.
func TestKubectlLogs(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.pod("logs", false, `n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo "instance $n"; if [ $n -ge 2 ]; then exec sleep 3600; fi; sleep 2; exit 1`)
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p = e.create(t, p)
	e.waitPod(t, p, 90*time.Second, "restarted once and running", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil
	})
	var cur, prev string
	poll(t, 20*time.Second, "kubectl logs of instance 2 and --previous of instance 1", func() (bool, error) {
		out, errOut, err := k.run(t, nil, "", "logs", p.Name)
		if err != nil {
			return false, fmt.Errorf("kubectl logs: %v %q", err, errOut)
		}
		cur = out
		out, errOut, err = k.run(t, nil, "", "logs", "--previous", p.Name)
		if err != nil {
			return false, fmt.Errorf("kubectl logs --previous: %v %q", err, errOut)
		}
		prev = out
		return cur == "instance 2\n" && prev == "instance 1\n", fmt.Errorf("current %q, previous %q", cur, prev)
	})
	out, _, err := k.run(t, nil, "", "logs", "--timestamps", "--tail=1", p.Name)
	if err != nil || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\S+ instance 2\n$`).MatchString(out) {
		t.Errorf("kubectl logs --timestamps --tail=1: %q %v", out, err)
	}
}

// TestNodeObjectOnContainerd checks what the control plane sees of the
// node: addresses, nodeInfo, images, the daemon endpoint, labels and the
// version annotation; and /configz.
func TestNodeObjectOnContainerd(t *testing.T) {
	e := setup(t)
	n, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[corev1.NodeAddressType]string{}
	for _, a := range n.Status.Addresses {
		addrs[a.Type] = a.Address
	}
	if addrs[corev1.NodeInternalIP] != e.ip || addrs[corev1.NodeHostName] != e.node {
		t.Errorf("addresses %+v, want InternalIP %s (--node-ip) and Hostname %s", n.Status.Addresses, e.ip, e.node)
	}
	if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; int(got) != e.port {
		t.Errorf("daemonEndpoints.kubeletEndpoint.port = %d, want %d", got, e.port)
	}
	ni := n.Status.NodeInfo
	if ni.KubeletVersion != "v1.37.2" || ni.BootID == "" || ni.KernelVersion == "" || ni.OSImage == "" ||
		!strings.HasPrefix(ni.ContainerRuntimeVersion, "containerd://") || ni.OperatingSystem != "linux" || ni.Architecture == "" {
		t.Errorf("nodeInfo %+v incomplete", ni)
	}
	if v := n.Annotations["lockstep.dev/version"]; !strings.HasPrefix(v, "lockstep ") {
		t.Errorf("annotation lockstep.dev/version = %q", v)
	}
	if n.Labels["beta.kubernetes.io/os"] != "linux" || n.Labels["beta.kubernetes.io/arch"] != ni.Architecture {
		t.Errorf("labels %v lack the beta os/arch labels", n.Labels)
	}
	found := false
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			found = found || name == busybox
		}
	}
	if !found || len(n.Status.Images) > 50 {
		t.Errorf("status.images %+v: want %s among at most 50", n.Status.Images, busybox)
	}
	// containerd 1.6 reports no runtime handlers in its CRI status (newer
	// runtimes do): the node then lists none, as the kubelet's does.
	t.Logf("node %s: nodeInfo %+v, %d images, runtime handlers %+v", n.Name, ni, len(n.Status.Images), n.Status.RuntimeHandlers)

	// /configz through the apiserver's node proxy, as the upstream e2e
	// framework reads it.
	raw, err := e.raw(t, e.kubectl(t), "/configz")
	if err != nil {
		t.Fatal(err)
	}
	var cz struct {
		KubeletConfig struct {
			Port    int32 `json:"port"`
			MaxPods int32 `json:"maxPods"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal([]byte(raw), &cz); err != nil || int(cz.KubeletConfig.Port) != e.port || cz.KubeletConfig.MaxPods != 110 {
		t.Errorf("configz %s: %+v %v, want port %d and maxPods 110", raw, cz, err, e.port)
	}
}
