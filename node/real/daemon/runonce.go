package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// runOncePoll is how often RunOnce looks at the pods.
const runOncePoll = time.Second

// RunOnce is --runonce: it starts the static pods of the manifest
// directory and URL with no apiserver and no HTTP server, waits (at most
// o.RunOnceTimeout) until every pod runs, writes one line per pod to out
// and returns; an error names each pod that failed or did not run in
// time. The containers are left running, as with the kubelet.
func RunOnce(ctx context.Context, o Options, rt Runtime, log *slog.Logger, out io.Writer) error {
	if o.Kubeconfig != "" {
		return fmt.Errorf("--runonce runs without an apiserver: drop --kubeconfig")
	}
	n, err := prepare(ctx, o, rt, log, func(error) {})
	if err != nil {
		return err
	}
	defer n.close()
	actx, stop := context.WithCancel(ctx)
	defer stop()
	n.a.Start(actx)
	log.Info("runonce: starting the static pods", "manifests", o.ManifestPath, "url", o.ManifestURL, "timeout", o.RunOnceTimeout)
	deadline := time.Now().Add(o.RunOnceTimeout)
	for {
		if n.a.SourcesSeen() {
			lines, pending, failed := runOnceReport(n.a)
			if len(failed) > 0 || len(pending) == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
				for _, l := range lines {
					fmt.Fprintln(out, l)
				}
				switch {
				case len(failed) > 0:
					return fmt.Errorf("runonce: pods failed: %s", strings.Join(failed, ", "))
				case len(pending) > 0:
					return fmt.Errorf("runonce: pods not running after %v: %s", o.RunOnceTimeout, strings.Join(pending, ", "))
				}
				log.Info("runonce: every static pod runs; exiting, its containers keep running", "pods", len(lines))
				return nil
			}
		} else if !time.Now().Before(deadline) || ctx.Err() != nil {
			return fmt.Errorf("runonce: the static pod sources gave nothing within %v", o.RunOnceTimeout)
		}
		select {
		case <-ctx.Done():
		case <-time.After(runOncePoll):
		}
	}
}

// runOnceReport is one line per pod ("pod <ns/name>: <phase>, containers
// a=running b=waiting(ErrImagePull)"), the pods not running yet and the
// pods that failed, by name.
func runOnceReport(a *agent.Agent) (lines, pending, failed []string) {
	for _, pod := range a.Pods() {
		name := pod.Namespace + "/" + pod.Name
		s, ok := a.PodStatus(pod.UID)
		if !ok {
			lines = append(lines, fmt.Sprintf("pod %s: no status yet", name))
			pending = append(pending, name)
			continue
		}
		running, states := containersRunning(pod, s)
		lines = append(lines, fmt.Sprintf("pod %s: %s, containers %s", name, phaseOf(s), strings.Join(states, " ")))
		switch {
		case s.Phase == corev1.PodFailed:
			failed = append(failed, name)
		case podutil.IsTerminal(s.Phase):
			// A pod that ran to completion ran.
		case !running:
			pending = append(pending, name)
		}
	}
	return lines, pending, failed
}

func phaseOf(s corev1.PodStatus) string {
	if s.Reason != "" {
		return string(s.Phase) + " (" + s.Reason + ")"
	}
	return string(s.Phase)
}

// containersRunning reports whether every regular container of pod runs
// in s, and each one's state.
func containersRunning(pod *corev1.Pod, s corev1.PodStatus) (bool, []string) {
	all := s.Phase == corev1.PodRunning
	var states []string
	for _, c := range pod.Spec.Containers {
		i := slices.IndexFunc(s.ContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == c.Name })
		state := "waiting"
		if i >= 0 {
			st := s.ContainerStatuses[i].State
			switch {
			case st.Running != nil:
				state = "running"
			case st.Terminated != nil:
				state = fmt.Sprintf("terminated(%s, exit %d)", st.Terminated.Reason, st.Terminated.ExitCode)
			case st.Waiting != nil && st.Waiting.Reason != "":
				state = "waiting(" + st.Waiting.Reason + ")"
			}
		}
		if state != "running" {
			all = false
		}
		states = append(states, c.Name+"="+state)
	}
	return all, states
}
