//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// busybox is the image hack/e2e/build-images.sh imports into containerd.
const busybox = "docker.io/library/busybox:e2e"

// env is what hack/e2e/run.sh started for the tests.
type env struct {
	dir, node string
	// ip is the node's InternalIP and the address its secure port
	// listens on (hack/e2e/node-ip.sh: never loopback, which the
	// apiserver will not proxy to); port is the secure port.
	ip       string
	port     int
	admin    *kubernetes.Clientset
	nodeCS   *kubernetes.Clientset
	cri      runtimeapi.RuntimeServiceClient
	adminTok string
}

func setup(t *testing.T) *env {
	t.Helper()
	dir := os.Getenv("LOCKSTEP_E2E_DIR")
	if dir == "" {
		t.Skip("LOCKSTEP_E2E_DIR unset: run the e2e suite through `make e2e` (hack/e2e/run.sh)")
	}
	port, err := strconv.Atoi(os.Getenv("LOCKSTEP_E2E_PORT"))
	if err != nil {
		t.Fatalf("LOCKSTEP_E2E_PORT: %v", err)
	}
	ip := os.Getenv("LOCKSTEP_E2E_NODE_IP")
	if net.ParseIP(ip) == nil {
		t.Fatalf("LOCKSTEP_E2E_NODE_IP %q: want the node's address (hack/e2e/run.sh sets it)", ip)
	}
	e := &env{dir: dir, node: os.Getenv("LOCKSTEP_E2E_NODE"), ip: ip, port: port}
	e.admin = clientset(t, filepath.Join(dir, "admin.kubeconfig"))
	e.nodeCS = clientset(t, filepath.Join(dir, "node.kubeconfig"))
	tok, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	e.adminTok = strings.TrimSpace(string(tok))
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "containerd", "containerd.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial containerd: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	e.cri = runtimeapi.NewRuntimeServiceClient(conn)
	e.waitNodeReady(t, 90*time.Second)
	return e
}

func clientset(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset %s: %v", kubeconfig, err)
	}
	return cs
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// poll calls cond every 200 ms until it returns true or d passes.
func poll(t *testing.T, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s (last error: %v)", d, what, last)
}

func (e *env) waitNodeReady(t *testing.T, d time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	poll(t, d, "node "+e.node+" Ready", func() (bool, error) {
		n, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = n
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})
	return node
}

// podSpec is a one-container busybox pod bound to the e2e node.
func (e *env) pod(name string, hostNet bool, cmd string) *corev1.Pod {
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + rand.String(5), Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      e.node,
			HostNetwork:                   hostNet,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "c", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", cmd},
			}},
		},
	}
}

func (e *env) create(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := e.admin.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	t.Cleanup(func() { e.deleteAndWait(t, got, 60*time.Second) })
	return got
}

func (e *env) get(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := e.admin.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", p.Name, err)
	}
	return got
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *env) waitPod(t *testing.T, p *corev1.Pod, d time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var cur *corev1.Pod
	poll(t, d, fmt.Sprintf("pod %s %s", p.Name, what), func() (bool, error) {
		got, err := e.admin.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur = got
		return cond(got), fmt.Errorf("phase %s, statuses %+v", got.Status.Phase, got.Status.ContainerStatuses)
	})
	return cur
}

// deleteAndWait deletes the pod (default grace) and waits until lockstep has
// removed the object; idempotent.
func (e *env) deleteAndWait(t *testing.T, p *corev1.Pod, d time.Duration) {
	t.Helper()
	err := e.admin.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete pod %s: %v", p.Name, err)
		return
	}
	e.waitGone(t, p, d)
}

func (e *env) waitGone(t *testing.T, p *corev1.Pod, d time.Duration) {
	t.Helper()
	poll(t, d, "pod "+p.Name+" deleted", func() (bool, error) {
		_, err := e.admin.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// criOf lists the sandboxes and containers containerd holds for a pod UID.
func (e *env) criOf(t *testing.T, uid string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	sel := map[string]string{"io.kubernetes.pod.uid": uid}
	sb, err := e.cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatalf("ListPodSandbox: %v", err)
	}
	cs, err := e.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	return sb.Items, cs.Containers
}

// waitCRIEmpty waits until containerd holds nothing of the pod.
func (e *env) waitCRIEmpty(t *testing.T, uid string, d time.Duration) {
	t.Helper()
	poll(t, d, "no sandbox or container of pod "+uid, func() (bool, error) {
		sb, cs := e.criOf(t, uid)
		return len(sb) == 0 && len(cs) == 0, fmt.Errorf("%d sandboxes, %d containers left", len(sb), len(cs))
	})
}

// nodeURL is the URL of path on lockstep's secure port, at the node's
// InternalIP.
func (e *env) nodeURL(path string) string {
	return "https://" + net.JoinHostPort(e.ip, strconv.Itoa(e.port)) + path
}

// logs fetches /containerLogs from lockstep's secure port; token may be empty.
func (e *env) logs(t *testing.T, p *corev1.Pod, container, token string) (int, string) {
	t.Helper()
	return e.logsQuery(t, p, container, token, "")
}

// nodeGet GETs path on lockstep's secure port with token ("": none) and
// returns the status and body.
func (e *env) nodeGet(t *testing.T, path, token string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, _ := http.NewRequest("GET", e.nodeURL(path), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// logsQuery is logs with a query string ("previous=true", "tailLines=1").
func (e *env) logsQuery(t *testing.T, p *corev1.Pod, container, token, query string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := e.nodeURL(fmt.Sprintf("/containerLogs/%s/%s/%s", p.Namespace, p.Name, container))
	if query != "" {
		url += "?" + query
	}
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET containerLogs: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// restartLockstep SIGKILLs lockstep and starts it again with the same args.
func (e *env) restartLockstep(t *testing.T) {
	t.Helper()
	e.killLockstep(t)
	e.startLockstep(t)
}

// killLockstep SIGKILLs lockstep and waits (up to 5 s) until it is gone.
func (e *env) killLockstep(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "pids", "lockstep"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill lockstep %d: %v", pid, err)
	}
	for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

// startLockstep starts lockstep with the args in $E2E_DIR/lockstep.args.
func (e *env) startLockstep(t *testing.T) {
	t.Helper()
	script := filepath.Join("..", "hack", "e2e", "start-lockstep.sh")
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), "E2E_DIR="+e.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1)*p + 0.5)
	return s[i]
}
