package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"sigs.k8s.io/yaml"
)

// side is one node under test: its agent's name, its node, its runtime
// and its static pod directory.
type side struct {
	agent     string // "kubelet" or "lockstep"
	node      string
	runtime   *runtimeView
	manifests string
	// localVolumes holds the host directories of its local
	// PersistentVolumes.
	localVolumes string
}

// suffix is the namespace suffix of the side's copy of a scenario.
func (s *side) suffix() string { return "-" + s.agent[:1] }

// harness holds what every scenario run needs.
type harness struct {
	client kubernetes.Interface
	config *rest.Config
	rec    *recorder
	procs  *procs
	sides  [2]*side // kubelet, lockstep
}

// Outcome is one scenario's recordings and differences.
type Outcome struct {
	Scenario    *Scenario    `json:"scenario"`
	Kubelet     Recording    `json:"kubelet"`
	Lockstep    Recording    `json:"lockstep"`
	Differences []Difference `json:"differences"`
	Error       string       `json:"error,omitempty"`
	Skipped     string       `json:"skipped,omitempty"`
	Wall        float64      `json:"wallSeconds"`
}

// both runs f for each side at once (a nil side is skipped: the
// containerd lane runs one side at a time) and joins their errors.
func both(f func(i int, s *side) error, sides [2]*side) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range sides {
		if s == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i, s) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run runs one scenario on both nodes at once and compares what they
// showed.
func (h *harness) run(ctx context.Context, s *Scenario) *Outcome {
	began := time.Now()
	out := &Outcome{Scenario: s}
	recs, err := h.record(ctx, s, h.sides)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Kubelet, out.Lockstep = recs[0], recs[1]
	out.Differences = compareRecordings(&out.Kubelet, &out.Lockstep, s.Tolerance.Duration)
	out.Wall = time.Since(began).Seconds()
	return out
}

// record runs one scenario on the given sides at once (a nil side is not
// run) and returns each side's recording.
func (h *harness) record(ctx context.Context, s *Scenario, sides [2]*side) ([2]Recording, error) {
	var recs [2]Recording
	ns := func(sd *side) string { return s.Name + sd.suffix() }
	err := both(func(_ int, sd *side) error { return h.prepare(ctx, s, sd, ns(sd)) }, sides)
	if err != nil {
		return recs, err
	}
	for _, sd := range sides {
		if sd != nil {
			h.rec.begin(sd.node, ns(sd))
		}
	}
	start := time.Now()
	err = both(func(_ int, sd *side) error { return h.createPods(ctx, s, sd, ns(sd)) }, sides)
	if err != nil {
		log.Printf("%s: create: %v", s.Name, err)
		for _, sd := range sides {
			if sd != nil {
				h.rec.addResult(ns(sd), "create", err.Error())
			}
		}
	}
	for i, a := range s.Actions {
		if d := time.Until(start.Add(a.At.Duration)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if a.Do == "restart-agent" {
			_ = both(func(_ int, sd *side) error { return h.procs.restart(sd.agent) }, sides)
			continue
		}
		label := fmt.Sprintf("action %d (%s %s at %v)", i, a.Do, a.Pod, a.At)
		_ = both(func(_ int, sd *side) error {
			text, err := h.act(ctx, s, a, sd, ns(sd))
			if err != nil {
				text += "error: " + err.Error()
			}
			if text != "" || a.Do == "exec" || a.Do == "logs" || a.Do == "snapshot" {
				h.rec.addResult(ns(sd), label, text)
			}
			return nil
		}, sides)
	}
	if d := time.Until(start.Add(s.Duration.Duration)); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	_ = both(func(_ int, sd *side) error { h.snapshot(ctx, s, sd, ns(sd), "end"); return nil }, sides)
	for i, sd := range sides {
		if sd != nil {
			recs[i] = h.rec.end(ns(sd))
		}
	}
	_ = both(func(_ int, sd *side) error { return h.cleanup(ctx, s, sd, ns(sd)) }, sides)
	return recs, nil
}

// prepare creates the namespace and the scenario's objects (the side's
// copies of its local PersistentVolumes bound to their claims).
func (h *harness) prepare(ctx context.Context, s *Scenario, sd *side, ns string) error {
	_, err := h.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	for _, o := range s.Objects {
		switch {
		case o.ConfigMap != nil:
			cm := o.ConfigMap.DeepCopy()
			cm.Namespace = ns
			_, err = h.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		case o.Secret != nil:
			sec := o.Secret.DeepCopy()
			sec.Namespace = ns
			_, err = h.client.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create object in %s: %w", ns, err)
		}
	}
	return h.createVolumeAndClaim(ctx, s, sd, ns)
}

// createPods creates the filler pods, the pods (bound to the side's node)
// and writes the static pods' manifests.
func (h *harness) createPods(ctx context.Context, s *Scenario, sd *side, ns string) error {
	if s.Fill > 0 {
		if err := h.fill(ctx, s.Fill, sd, ns); err != nil {
			return err
		}
	}
	var errs []error
	for _, p := range s.Pods {
		errs = append(errs, h.createPod(ctx, &p, sd, ns))
	}
	for _, p := range s.Static {
		data, err := staticManifest(&p, ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		path := filepath.Join(sd.manifests, ns+"-"+p.Name+".yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("write static pod %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// staticManifest is the manifest of the static pod p in namespace ns.
func staticManifest(p *v1.Pod, ns string) ([]byte, error) {
	sp := p.DeepCopy()
	sp.Namespace = ns
	if sp.APIVersion == "" {
		sp.APIVersion, sp.Kind = "v1", "Pod"
	}
	data, err := yaml.Marshal(sp)
	if err != nil {
		return nil, fmt.Errorf("static pod %s/%s: %w", ns, p.Name, err)
	}
	return data, nil
}

func (h *harness) createPod(ctx context.Context, tmpl *v1.Pod, sd *side, ns string) error {
	p := tmpl.DeepCopy()
	p.Namespace, p.Spec.NodeName = ns, sd.node
	_, err := h.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", ns, p.Name, err)
	}
	return nil
}

// fill creates n small pods on the side's node (ignored by the
// comparison) and waits until they run.
func (h *harness) fill(ctx context.Context, n int, sd *side, ns string) error {
	for i := range n {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%03d", FillerPrefix, i), Labels: map[string]string{IgnoreLabel: "true"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent}},
				TerminationGracePeriodSeconds: ptr(int64(0))},
		}
		if err := h.createPod(ctx, p, sd, ns); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := h.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: IgnoreLabel + "=true"})
		if err == nil {
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == v1.PodRunning {
					running++
				}
			}
			if running == n {
				return nil
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("filler pods of %s not all running after 3 min", ns)
}

func ptr[T any](v T) *T { return &v }

// act performs one action on one side, returning its output.
func (h *harness) act(ctx context.Context, s *Scenario, a Action, sd *side, ns string) (string, error) {
	pods := h.client.CoreV1().Pods(ns)
	name := a.Pod
	if isStatic(s, a.Pod) {
		name = a.Pod + "-" + sd.node
	}
	switch a.Do {
	case "delete":
		return "", pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: a.Grace})
	case "patch":
		_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, a.Patch, metav1.PatchOptions{})
		return "", err
	case "resize":
		_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, a.Patch, metav1.PatchOptions{}, "resize")
		return "", err
	case "patch-status":
		_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, a.Patch, metav1.PatchOptions{}, "status")
		return "", err
	case "exec":
		return h.exec(ctx, ns, name, a.Container, a.Command)
	case "logs":
		return h.logs(ctx, ns, name, a.Container, a.Previous), nil
	case "snapshot":
		return "", h.snapshotAll(ctx, sd, ns, fmt.Sprintf("snapshot at %v", a.At))
	case "taint", "untaint":
		return "", h.taint(ctx, sd.node, a.Taint, a.Do == "taint")
	case "ephemeral":
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, *a.Ephemeral)
		_, err = pods.UpdateEphemeralContainers(ctx, name, p, metav1.UpdateOptions{})
		return "", err
	case "remove-static":
		return "", os.Remove(filepath.Join(sd.manifests, ns+"-"+a.Pod+".yaml"))
	case "rewrite-static":
		path := filepath.Join(sd.manifests, ns+"-"+a.Pod+".yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("rewrite static pod %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("rewrite static pod %s: %w", path, err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return "", fmt.Errorf("rewrite static pod %s: %w", path, err)
		}
		return "", nil
	case "patch-static":
		return "", patchStatic(ctx, a, filepath.Join(sd.manifests, ns+"-"+a.Pod+".yaml"))
	case "create":
		return "", h.createPod(ctx, a.NewPod, sd, ns)
	case "write-file":
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return "", sd.runtime.writeFile(ctx, string(p.UID), a.Container, a.Path, a.Content)
	}
	return "", fmt.Errorf("unknown action %q", a.Do)
}

// patchStatic makes a.Repeat (at least one) rewrites of the static pod
// manifest at path, a.Every apart, each with the action's patch (its
// "{{n}}" the rewrite's number).
func patchStatic(ctx context.Context, a Action, path string) error {
	n := max(a.Repeat, 1)
	for i := 1; i <= n; i++ {
		if i > 1 && a.Every.Duration > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("patch static pod %s: rewrite %d of %d: %w", path, i, n, ctx.Err())
			case <-time.After(a.Every.Duration):
			}
		}
		patch := bytes.ReplaceAll(a.Patch, []byte("{{n}}"), []byte(strconv.Itoa(i)))
		if err := patchManifest(path, patch); err != nil {
			return fmt.Errorf("rewrite %d of %d: %w", i, n, err)
		}
	}
	return nil
}

// patchManifest applies a strategic merge patch (JSON) to the pod
// manifest at path and writes the result as a new file that replaces it
// in one rename: the agents' directory watches see the new version at
// once and never a half-written file (the temporary file's name starts
// with a dot, which both agents' static pod sources ignore).
func patchManifest(path string, patch []byte) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("patch static pod %s: %w", path, err)
	}
	orig, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("patch static pod %s: read manifest: %w", path, err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		return fmt.Errorf("patch static pod %s: apply %s: %w", path, patch, err)
	}
	out, err := yaml.JSONToYAML(patched)
	if err != nil {
		return fmt.Errorf("patch static pod %s: %w", path, err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return fmt.Errorf("patch static pod %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("patch static pod %s: %w", path, err)
	}
	return nil
}

// isStatic reports whether s has a static pod named name.
func isStatic(s *Scenario, name string) bool {
	for _, p := range s.Static {
		if p.Name == name {
			return true
		}
	}
	return false
}

// exec runs command in a container through the apiserver and the agent.
func (h *harness) exec(ctx context.Context, ns, pod, container string, command []string) (string, error) {
	req := h.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(h.config, "POST", req.URL())
	if err != nil {
		return "", fmt.Errorf("exec in %s/%s: %w", ns, pod, err)
	}
	var stdout, stderr bytes.Buffer
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ectx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	code := 0
	var ce utilexec.CodeExitError
	switch {
	case errors.As(err, &ce):
		code, err = ce.Code, nil
	case err != nil:
		return fmt.Sprintf("stdout: %q stderr: %q\n", stdout.String(), stderr.String()), err
	}
	return fmt.Sprintf("exit %d stdout: %q stderr: %q\n", code, stdout.String(), stderr.String()), nil
}

// logs reads a container's log through the apiserver; an error is the text.
func (h *harness) logs(ctx context.Context, ns, pod, container string, previous bool) string {
	b, err := h.client.CoreV1().Pods(ns).GetLogs(pod, &v1.PodLogOptions{Container: container, Previous: previous}).DoRaw(ctx)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// snapshot records, for each pod of the scenario, the files its
// containers see and their logs (and previous logs after a restart).
func (h *harness) snapshot(ctx context.Context, s *Scenario, sd *side, ns, label string) {
	if err := h.snapshotAll(ctx, sd, ns, label); err != nil {
		h.rec.addResult(ns, label+" error", err.Error())
	}
}

func (h *harness) snapshotAll(ctx context.Context, sd *side, ns, label string) error {
	pods, err := h.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods of %s: %w", ns, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for _, p := range pods.Items {
		if p.Labels[IgnoreLabel] == "true" {
			continue
		}
		pname := strings.TrimSuffix(p.Name, "-"+sd.node)
		text, err := sd.runtime.podFiles(ctx, string(p.UID))
		if err != nil {
			text = "error: " + err.Error()
		}
		h.rec.addResult(ns, fmt.Sprintf("%s files of pod %s", label, pname), text)
		statuses := append(append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...), p.Status.EphemeralContainerStatuses...)
		for _, c := range statuses {
			h.rec.addResult(ns, fmt.Sprintf("%s logs of %s/%s", label, pname, c.Name), h.logs(ctx, ns, p.Name, c.Name, false))
			if c.RestartCount > 0 {
				h.rec.addResult(ns, fmt.Sprintf("%s logs --previous of %s/%s", label, pname, c.Name), h.logs(ctx, ns, p.Name, c.Name, true))
			}
		}
	}
	return nil
}

// taint adds or removes a taint key=value:Effect on a node.
func (h *harness) taint(ctx context.Context, node, spec string, add bool) error {
	kv, effect, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("taint %q: want key=value:Effect", spec)
	}
	key, value, _ := strings.Cut(kv, "=")
	t := v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)}
	for range 5 {
		no, err := h.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var taints []v1.Taint
		for _, o := range no.Spec.Taints {
			if o.Key != t.Key || o.Effect != t.Effect {
				taints = append(taints, o)
			}
		}
		if add {
			taints = append(taints, t)
		}
		no.Spec.Taints = taints
		if _, err = h.client.CoreV1().Nodes().Update(ctx, no, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("taint node %s: conflicts", node)
}

// cleanup force-deletes the scenario's pods, removes its static pods and
// waits (up to 2 min) until the node has let go of them.
func (h *harness) cleanup(ctx context.Context, s *Scenario, sd *side, ns string) error {
	for _, p := range s.Static {
		_ = os.Remove(filepath.Join(sd.manifests, ns+"-"+p.Name+".yaml"))
	}
	for _, a := range s.Actions {
		if a.Do == "taint" {
			_ = h.taint(ctx, sd.node, a.Taint, false)
		}
	}
	zero := int64(0)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := h.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return h.deleteVolumesAndClaims(ctx, s, ns)
		}
		for _, p := range pods.Items {
			_ = h.client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		time.Sleep(2 * time.Second)
	}
	return fmt.Errorf("pods of %s still there 2 min after cleanup", ns)
}
