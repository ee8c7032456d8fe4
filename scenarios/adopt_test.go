package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// upstreamKubeletRuns starts pod in the runtime the way the upstream
// kubelet (v1.37) does, with its labels and annotations and its
// io.kubernetes.container.hash values (computed by upstream's own
// HashContainer for these specs), and returns the container IDs by name.
func upstreamKubeletRuns(t *testing.T, h *harness.Harness, pod *corev1.Pod, upstreamHash map[string]string) map[string]string {
	t.Helper()
	ctx := context.Background()
	podLabels := map[string]string{
		"io.kubernetes.pod.name": pod.Name, "io.kubernetes.pod.namespace": pod.Namespace, "io.kubernetes.pod.uid": string(pod.UID),
	}
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Hostname:     pod.Name,
		LogDirectory: fmt.Sprintf("/var/log/pods/%s_%s_%s", pod.Namespace, pod.Name, pod.UID),
		Labels:       podLabels,
		Annotations:  map[string]string{"kubernetes.io/config.seen": "2026-01-01T00:00:00Z", "kubernetes.io/config.source": "api"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
	if err := h.Files.MkdirAll(sbConfig.LogDirectory); err != nil {
		t.Fatal(err)
	}
	sb, err := h.Runtime.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, c := range pod.Spec.Containers {
		if _, err := h.Runtime.PullImage(ctx, &runtimeapi.ImageSpec{Image: c.Image}, nil, sbConfig); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{"io.kubernetes.container.name": c.Name}
		for k, v := range podLabels {
			labels[k] = v
		}
		var env []*runtimeapi.KeyValue
		for _, e := range c.Env {
			env = append(env, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
		}
		cfg := &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: c.Name},
			Image:    &runtimeapi.ImageSpec{Image: c.Image},
			Envs:     env,
			Labels:   labels,
			Annotations: map[string]string{
				"io.kubernetes.container.hash":                     upstreamHash[c.Name],
				"io.kubernetes.container.restartCount":             "0",
				"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
				"io.kubernetes.container.terminationMessagePolicy": "File",
				"io.kubernetes.pod.terminationGracePeriod":         strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10),
			},
			LogPath: c.Name + "/0.log",
		}
		id, err := h.Runtime.CreateContainer(ctx, sb, cfg, sbConfig)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Runtime.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids[c.Name] = id
	}
	return ids
}

// TestAdoptUpstreamKubeletContainers: a node whose pod was started by the
// upstream kubelet switches to lockstep; lockstep adopts the running
// containers (same hash, same labels) and restarts none of them.
func TestAdoptUpstreamKubeletContainers(t *testing.T) {
	h := harness.New(harness.Config{Seed: 51})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("web", h.NodeName, Container("sidecar")))
	// The two containers' specs: app busybox:latest, sidecar busybox:latest.
	upstreamHash := map[string]string{"app": "a18570d5", "sidecar": "6f14fcf9"}
	ids := upstreamKubeletRuns(t, h, pod, upstreamHash)
	h.StartAgent()
	runUntil(t, h, "web Running and Ready", time.Minute, func() bool {
		return PodIs(h, "default", "web", corev1.PodRunning, true)
	})
	if err := RunChecked(h, c, 2*time.Minute, time.Second); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	got := map[string]string{}
	for _, ct := range TrueContainers(h) {
		if ct.PodUID == pod.UID {
			got[ct.Name] = ct.ID
		}
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Errorf("containers after the switch (-upstream kubelet's +now):\n%s", diff)
	}
	p, _ := APIPod(h, "default", "web")
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount != 0 || cs.ContainerID != "fakecri://"+ids[cs.Name] {
			t.Errorf("status of %s: restartCount %d, id %s; want 0, %s", cs.Name, cs.RestartCount, cs.ContainerID, ids[cs.Name])
		}
	}
}
