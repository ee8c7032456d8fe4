//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// TestNeverPodRunsContainerLeftCreated: a restartPolicy Never pod whose
// container was created but never started when its sandbox died (the
// node, or the agent, went down between CreateContainer and
// StartContainer) runs that container in a new sandbox once lockstep is
// back, instead of staying Pending for good with the instance Created, as
// the kubelet does (kubernetes#118321). lockstep is stopped while the test
// lays the dead sandbox and the Created container out in containerd with
// the configs lockstep itself would have used.
func TestNeverPodRunsContainerLeftCreated(t *testing.T) {
	e := setup(t)
	e.killLockstep(t)
	p := e.pod("created-never", true, "echo ran; sleep 3")
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	automount := false
	p.Spec.AutomountServiceAccountToken = &automount
	p = e.create(t, p)
	started := false
	t.Cleanup(func() { // before the pod's deletion (cleanups run last first)
		if !started {
			e.startLockstep(t)
		}
	})

	ctx := ctxT(t, 30*time.Second)
	node := podspec.NodeInfo{NodeName: e.node, HostIP: "127.0.0.1",
		RootDir: filepath.Join(e.dir, "lockstep"), PodLogsRoot: filepath.Join(e.dir, "pods")}
	sbCfg, err := podspec.SandboxConfig(p, 0, node, "")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := e.cri.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	cCfg, err := podspec.ContainerConfigWith(p, &p.Spec.Containers[0], podspec.ContainerOptions{}, node)
	if err != nil {
		t.Fatal(err)
	}
	// Never started, it needs no mounts; containerd would make their
	// missing sources (the pod's hosts file) directories.
	cCfg.Mounts = nil
	created, err := e.cri.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cCfg, SandboxConfig: sbCfg})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := e.cri.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}

	e.startLockstep(t)
	started = true
	got := e.waitPod(t, p, 90*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	cs := got.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 || cs[0].ContainerID == "containerd://"+created.ContainerId {
		t.Errorf("container statuses %+v; want one new instance terminated with exit 0", cs)
	}
	if code, body := e.logs(t, got, "c", e.adminTok); code != 200 || strings.TrimSpace(body) != "ran" {
		t.Errorf("logs of the container: %d %q, want 200 \"ran\"", code, body)
	}
	// The instance left Created goes once the new one runs; the one that
	// ran did so in a new sandbox.
	poll(t, 30*time.Second, "instance left Created removed", func() (bool, error) {
		_, ctrs := e.criOf(t, string(p.UID))
		for _, c := range ctrs {
			if c.Id == created.ContainerId {
				return false, fmt.Errorf("%s still %v", c.Id, c.State)
			}
		}
		return true, nil
	})
	sbs, ctrs := e.criOf(t, string(p.UID))
	attempts := map[string]uint32{}
	for _, s := range sbs {
		attempts[s.Id] = s.Metadata.GetAttempt()
	}
	if len(ctrs) != 1 || ctrs[0].PodSandboxId == sb.PodSandboxId || attempts[ctrs[0].PodSandboxId] != 1 {
		t.Errorf("containers %v in sandboxes %v; want one, in a new sandbox of attempt 1", ctrs, attempts)
	}
}
