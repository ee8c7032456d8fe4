//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sleeper runs until TERM, which it answers within a second.
const sleeper = `trap "echo got TERM; exit 0" TERM; echo hello-e2e; while :; do sleep 1; done`

func TestNodeRegistersReadyAndRenewsLease(t *testing.T) {
	e := setup(t)
	n := e.waitNodeReady(t, 10*time.Second)
	if rv := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rv, "containerd://") {
		t.Errorf("nodeInfo.containerRuntimeVersion = %q, want containerd://...", rv)
	}
	t.Logf("node %s Ready, runtime %s, kubelet version %q", n.Name, n.Status.NodeInfo.ContainerRuntimeVersion, n.Status.NodeInfo.KubeletVersion)
	leases := e.admin.CoordinationV1().Leases("kube-node-lease")
	first, err := leases.Get(context.Background(), e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node lease: %v", err)
	}
	if first.Spec.HolderIdentity == nil || *first.Spec.HolderIdentity != e.node {
		t.Errorf("lease holder = %v, want %s", first.Spec.HolderIdentity, e.node)
	}
	poll(t, 30*time.Second, "lease renewal", func() (bool, error) {
		l, err := leases.Get(context.Background(), e.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(first.Spec.RenewTime.Time), nil
	})
}

func TestPodRunsAndServesLogs(t *testing.T) {
	e := setup(t)
	for _, hostNet := range []bool{true, false} {
		t.Run(fmt.Sprintf("hostNetwork=%v", hostNet), func(t *testing.T) {
			p := e.create(t, e.pod("logs", hostNet, sleeper))
			got := e.waitPod(t, p, 60*time.Second, "Running and Ready", podReady)
			ip, err := netip.ParseAddr(got.Status.PodIP)
			if err != nil {
				t.Fatalf("podIP %q: %v", got.Status.PodIP, err)
			}
			if inPodNet := netip.MustParsePrefix("10.88.77.0/24").Contains(ip); inPodNet == hostNet {
				t.Errorf("podIP %s: in the CNI subnet = %v, want %v", ip, inPodNet, !hostNet)
			}
			poll(t, 10*time.Second, "log line via /containerLogs", func() (bool, error) {
				code, body := e.logs(t, got, "c", e.adminTok)
				return code == 200 && strings.Contains(body, "hello-e2e"), fmt.Errorf("%d %q", code, body)
			})
			if code, body := e.logs(t, got, "c", ""); code != 401 {
				t.Errorf("containerLogs without a token: status %d (%q), want 401", code, body)
			}
		})
	}
}

func TestCrashingContainerRestartsWithBackoff(t *testing.T) {
	e := setup(t)
	p := e.create(t, e.pod("crash", true, "echo crashing; exit 1"))
	got := e.waitPod(t, p, 90*time.Second, "restartCount >= 2", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	cs := got.Status.ContainerStatuses[0]
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 {
		t.Errorf("lastState.terminated = %+v, want exit code 1", lt)
	}
	// Back-off: while the container waits out its back-off the status
	// shows its last exit (terminated, Error), as the kubelet v1.37's
	// does (set at the start of a sync; CrashLoopBackOff shows at the
	// sync that restarts it); the next instance starts no sooner than the
	// back-off (20 s before the third restart) after the last one ended.
	n := cs.RestartCount
	e.waitPod(t, p, 30*time.Second, "terminated, waiting out its back-off", func(p *corev1.Pod) bool {
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 1 && term.Reason == "Error"
	})
	got = e.waitPod(t, p, 60*time.Second, "restarted after its back-off", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount > n && cs.State.Terminated != nil && cs.LastTerminationState.Terminated != nil
	})
	cs = got.Status.ContainerStatuses[0]
	if gap := cs.State.Terminated.StartedAt.Sub(cs.LastTerminationState.Terminated.FinishedAt.Time); gap < 10*time.Second {
		t.Errorf("restart %d began %v after the previous instance ended, want at least its back-off (10 s or more)", cs.RestartCount, gap)
	}
	t.Logf("restartCount %d, state %+v", cs.RestartCount, cs.State)
}

func TestMemoryHogIsOOMKilled(t *testing.T) {
	e := setup(t)
	// The shell itself (PID 1 of the container) doubles a string until the
	// cgroup limit kills it: a child-only OOM would be reported differently.
	p := e.pod("oom", true, `x=0123456789abcdef; while :; do x=$x$x; done`)
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
	}
	p = e.create(t, p)
	// The terminated state comes first; the phase follows once the pod's
	// termination has finished (the kubelet's status manager withholds a
	// terminal phase while the pod could still have running containers).
	got := e.waitPod(t, p, 60*time.Second, "terminated and terminal", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil &&
			(p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded)
	})
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("terminated = reason %q exit %d, want OOMKilled 137", term.Reason, term.ExitCode)
	}
	if got.Status.Phase != corev1.PodFailed {
		t.Errorf("phase = %s, want Failed", got.Status.Phase)
	}
}

func TestGracefulDeleteLeavesNothing(t *testing.T) {
	e := setup(t)
	p := e.pod("graceful", false, sleeper)
	grace := int64(20)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	start := time.Now()
	if err := e.admin.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	e.waitGone(t, p, 40*time.Second)
	took := time.Since(start)
	t.Logf("graceful delete (TERM trapped, grace %ds) took %v", grace, took)
	if took > 10*time.Second {
		t.Errorf("delete took %v: the container trapping TERM should stop well within the %ds grace period", took, grace)
	}
	e.waitCRIEmpty(t, string(p.UID), 15*time.Second)
}

func TestStaticPodGetsMirror(t *testing.T) {
	e := setup(t)
	name := "static-e2e"
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, %q]
`, name, busybox, sleeper)
	path := filepath.Join(e.dir, "manifests", name+".yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + e.node, Namespace: "default"}}
	// The static pod runs in containerd whether or not the API takes its mirror.
	poll(t, 60*time.Second, "static pod container running in containerd", func() (bool, error) {
		ctx := ctxT(t, 10*time.Second)
		cs, err := e.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.pod.name": mirror.Name},
		}})
		return err == nil && len(cs.GetContainers()) == 1, err
	})
	got := e.waitPod(t, mirror, 60*time.Second, "mirror Running and Ready", podReady)
	if _, ok := got.Annotations["kubernetes.io/config.mirror"]; !ok {
		t.Errorf("mirror pod annotations %v lack kubernetes.io/config.mirror", got.Annotations)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, mirror, 60*time.Second)
}

func TestLockstepRestartDisturbsNothing(t *testing.T) {
	e := setup(t)
	var pods []*corev1.Pod
	for i, hostNet := range []bool{true, false, false} {
		pods = append(pods, e.create(t, e.pod(fmt.Sprintf("survivor%d", i), hostNet, sleeper)))
	}
	before := map[string]string{}
	for _, p := range pods {
		got := e.waitPod(t, p, 60*time.Second, "Ready", podReady)
		before[p.Name] = got.Status.ContainerStatuses[0].ContainerID
	}
	e.restartLockstep(t)
	restartedAt := time.Now()
	// Let the new process relist, resync and write status.
	leases := e.admin.CoordinationV1().Leases("kube-node-lease")
	poll(t, 60*time.Second, "lease renewed by the restarted lockstep", func() (bool, error) {
		l, err := leases.Get(context.Background(), e.node, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(restartedAt.Add(time.Second)), err
	})
	// The restarted agent has synced each pod and relisted twice after
	// its last step (a needless restart would be a further step): one
	// would show here.
	e.waitPodsSettled(t, 60*time.Second, pods...)
	for _, p := range pods {
		got := e.get(t, p)
		cs := got.Status.ContainerStatuses
		if !podReady(got) || len(cs) != 1 || cs[0].ContainerID != before[p.Name] || cs[0].RestartCount != 0 {
			t.Errorf("pod %s after restart: ready %v, statuses %+v; want the same container %s, restartCount 0", p.Name, podReady(got), cs, before[p.Name])
		}
		sbs, ctrs := e.criOf(t, string(p.UID))
		if len(sbs) != 1 || len(ctrs) != 1 {
			t.Errorf("pod %s: containerd holds %d sandboxes and %d containers, want 1 and 1", p.Name, len(sbs), len(ctrs))
		}
	}
}

func TestNodeIdentityIsRestricted(t *testing.T) {
	e := setup(t)
	other := e.pod("other", true, sleeper)
	other.Spec.NodeName = "some-other-node"
	other, err := e.admin.CoreV1().Pods("default").Create(context.Background(), other, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod on another node: %v", err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		e.admin.CoreV1().Pods("default").Delete(context.Background(), other.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	pods := e.nodeCS.CoreV1().Pods("default")
	checks := map[string]error{}
	_, checks["get another node's pod"] = pods.Get(context.Background(), other.Name, metav1.GetOptions{})
	_, checks["list pods of another node"] = pods.List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "some-other-node").String()})
	_, checks["list all pods"] = e.nodeCS.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	st := other.DeepCopy()
	st.Status.Phase = corev1.PodFailed
	_, checks["update another node's pod status"] = pods.UpdateStatus(context.Background(), st, metav1.UpdateOptions{})
	checks["delete another node's pod"] = pods.Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "some-other-node"}}
	_, checks["create another node"] = e.nodeCS.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	for what, err := range checks {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as system:node:%s: err = %v, want Forbidden", what, e.node, err)
		}
	}
	// Its own pods stay readable.
	if _, err := pods.List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", e.node).String()}); err != nil {
		t.Errorf("list own pods: %v", err)
	}
}

func TestPodStartAndDeleteFigures(t *testing.T) {
	e := setup(t)
	const n = 20
	ctx := ctxT(t, 5*time.Minute)
	label := "e2e-batch-" + fmt.Sprint(time.Now().UnixNano())
	w, err := e.admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "batch=" + label})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	created := map[string]time.Time{}
	var pods []*corev1.Pod
	agent := agentName()
	pids := map[string]int{"agent": e.pidOf(agent), "apiserver": e.pidOf("kube-apiserver"), "containerd": e.pidOf("containerd")}
	resetPeakRSS(pids["agent"])
	use0 := map[string]procUsage{}
	for k, pid := range pids {
		use0[k] = usageOf(pid)
	}
	reqStart, apiStart := e.lockstepRequests(t), e.podRequests(t)
	for i := 0; i < n; i++ {
		p := e.pod(fmt.Sprintf("bench%02d", i), false, sleeper)
		p.Labels = map[string]string{"batch": label}
		created[p.Name] = time.Now()
		got, err := e.admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", p.Name, err)
		}
		pods = append(pods, got)
	}
	t.Cleanup(func() {
		for _, p := range pods {
			e.deleteAndWait(t, p, 60*time.Second)
		}
	})
	ready := map[string]time.Duration{}
	for len(ready) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed with %d/%d pods Ready", len(ready), n)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			if _, seen := ready[p.Name]; !seen && podReady(p) {
				ready[p.Name] = time.Since(created[p.Name])
			}
		case <-ctx.Done():
			t.Fatalf("only %d/%d pods Ready", len(ready), n)
		}
	}
	var lat []time.Duration
	for _, d := range ready {
		lat = append(lat, d)
	}
	t.Logf("FIGURE pod start latency (create -> Ready via watch), %d busybox pods on containerd: p50 %v, p99 %v, max %v",
		n, percentile(lat, 0.5).Round(time.Millisecond), percentile(lat, 0.99).Round(time.Millisecond), percentile(lat, 1).Round(time.Millisecond))

	reqReady, apiReady := e.lockstepRequests(t), e.podRequests(t)
	res := figureResult{Agent: agent, Pods: n,
		StartP50MS: ms(percentile(lat, 0.5)), StartP99MS: ms(percentile(lat, 0.99)), StartMaxMS: ms(percentile(lat, 1)),
		ReqPerPodStart: perPod(reqStart, reqReady, n), APIPodReqStart: perPod(apiStart, apiReady, n)}
	t.Logf("FIGURE %s's API requests per pod started, by method (rest_client_requests_total; lease renewals included): %v", agent, res.ReqPerPodStart)
	// lockstep's service environment comes from the watched service
	// cache and no pod is read: what GETs remain open shared watches (the
	// kube-root-ca.crt configMap's list and watch, once for all pods).
	if agent == "lockstep" && res.ReqPerPodStart["GET"] >= 0.5 {
		t.Errorf("%.2f GET requests per pod started, want almost none (services are watched, pods never read)", res.ReqPerPodStart["GET"])
	}
	start := time.Now()
	for _, p := range pods {
		if err := e.admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s: %v", p.Name, err)
		}
	}
	for _, p := range pods {
		e.waitGone(t, p, 2*time.Minute)
	}
	res.DeleteMS = ms(time.Since(start))
	// CPU and peak RSS from the first create to the last pod object gone.
	use1 := map[string]procUsage{}
	for k, pid := range pids {
		use1[k] = usageOf(pid)
	}
	if a0, a1 := use0["agent"], use1["agent"]; a0.Readable && a1.Readable {
		res.AgentCPUSeconds, res.AgentPeakRSSMiB = (a1.CPU - a0.CPU).Seconds(), float64(a1.PeakRSS)/(1<<20)
	}
	res.APIServerCPUSec = (use1["apiserver"].CPU - use0["apiserver"].CPU).Seconds()
	res.ContainerdCPUS = (use1["containerd"].CPU - use0["containerd"].CPU).Seconds()
	t.Logf("FIGURE %d deletions (grace 5 s, TERM trapped) complete in %v", n, time.Since(start).Round(time.Millisecond))
	res.ReqPerPodDelete, res.APIPodReqDelete = perPod(reqReady, e.lockstepRequests(t), n), perPod(apiReady, e.podRequests(t), n)
	t.Logf("FIGURE %s's API requests per pod deleted, by method: %v", agent, res.ReqPerPodDelete)
	t.Logf("FIGURE apiserver's pod requests per pod (all clients, this test's creates, deletes and watch included): started %v, deleted %v", res.APIPodReqStart, res.APIPodReqDelete)
	// lockstep removes a deleted pod's sandbox at once; the kubelet leaves
	// it to its garbage collector (every minute).
	criWait := 15 * time.Second
	if agent != "lockstep" {
		criWait = 3 * time.Minute
	}
	for _, p := range pods {
		e.waitCRIEmpty(t, string(p.UID), criWait)
	}
	res.CRIEmptyMS = ms(time.Since(start))
	t.Logf("FIGURE %s from the first create to the last pod gone: %.2f CPU-s, peak RSS %.0f MiB (kube-apiserver %.2f CPU-s, containerd %.2f CPU-s); containerd holds nothing of the %d pods %v after the deletes began",
		agent, res.AgentCPUSeconds, res.AgentPeakRSSMiB, res.APIServerCPUSec, res.ContainerdCPUS, n, time.Duration(res.CRIEmptyMS*1e6).Round(time.Millisecond))
	res.record(t)
}
