package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// containerLogs answers /containerLogs/{namespace}/{pod}/{container} with
// the container's log messages, like kubectl logs: tailLines, follow,
// previous, timestamps, limitBytes, sinceSeconds, sinceTime.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := parseLogOptions(r.URL.Query(), time.Now())
	if err != nil {
		http.Error(w, "invalid query: "+err.Error(), http.StatusBadRequest)
		return
	}
	pod := findPod(s.p.Pods(), ns, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s does not exist", ns, name), http.StatusNotFound)
		return
	}
	podDesc := fmt.Sprintf("%s/%s (%s)", ns, name, pod.UID)
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %s", container, podDesc), http.StatusNotFound)
		return
	}
	st, _ := findStatus(pod, container)
	podDir := podspec.LogDirectory(s.p.PodLogsRoot(), podspec.RefOf(pod))
	instance, err := logInstance(st, opts.previous, filepath.Join(podDir, container), container, podDesc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path := filepath.Join(podDir, podspec.ContainerLogPath(container, instance))
	file, err := openLogFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		http.Error(w, fmt.Sprintf("log of container %q (restart %d) in pod %s not found", container, instance, podDesc), http.StatusNotFound)
		return
	case err != nil:
		s.log.Error("open container log", "pod", ns+"/"+name, "podUID", pod.UID, "container", container, "path", path, "err", err)
		http.Error(w, fmt.Sprintf("open log of container %q in pod %s: %v", container, podDesc, err), http.StatusInternalServerError)
		return
	}
	if opts.previous || st.State.Running == nil {
		opts.follow = false // the instance has ended: nothing more will come
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	remaining := int64(-1)
	if opts.limitBytes > 0 {
		remaining = opts.limitBytes
	}
	uid, id := pod.UID, st.ContainerID
	stream := &logStream{
		file:  file,
		opts:  opts,
		out:   &logWriter{w: w, timestamps: opts.timestamps, since: opts.since, remaining: remaining},
		flush: func() { _ = rc.Flush() },
		poll:  s.cfg.LogPollInterval,
		running: func() bool {
			for _, p := range s.p.Pods() {
				if p.UID != uid {
					continue
				}
				cur, ok := findStatus(p, container)
				return ok && cur.ContainerID == id && cur.State.Running != nil
			}
			return false
		},
		stop: s.stopping,
	}
	if err := stream.run(r.Context().Done()); err != nil {
		s.log.Info("container log stream ended with an error", "pod", ns+"/"+name, "podUID", pod.UID, "container", container, "err", err)
	}
}

// logInstance picks the instance whose log a request reads, from the
// container's status alone, as the kubelet does (validateContainerLogStatus,
// v1.37.2): with previous, the instance its last termination names; else
// the running or terminated instance, or, while it waits to run again, the
// one that last terminated. A container without such an instance is an
// error in the kubelet's words. Instances are found by
// their log's number: the status's own (RestartCount) for the instance
// its ContainerID names, the newest older log in dir for an earlier one.
func logInstance(st corev1.ContainerStatus, previous bool, dir, container, podDesc string) (int, error) {
	fail := func(format string, args ...any) (int, error) {
		return 0, fmt.Errorf("container %q in pod %s "+format, append([]any{container, podDesc}, args...)...)
	}
	current := int(st.RestartCount)
	byID := func(id string) (int, error) {
		if id == st.ContainerID {
			return current, nil
		}
		if n := previousInstance(dir, current); n >= 0 {
			return n, nil
		}
		return 0, fmt.Errorf("unable to retrieve container logs for %s", id)
	}
	last := st.LastTerminationState.Terminated
	waiting, running, terminated := st.State.Waiting, st.State.Running, st.State.Terminated
	switch {
	case st.Name == "":
		return fail("is not available")
	case previous:
		if last == nil || last.ContainerID == "" {
			return 0, fmt.Errorf("previous terminated container %q in pod %s not found", container, podDesc)
		}
		return byID(last.ContainerID)
	case running != nil:
		return current, nil
	case terminated != nil && terminated.ContainerID != "":
		return byID(terminated.ContainerID)
	case terminated != nil:
		if last != nil && last.ContainerID != "" {
			return byID(last.ContainerID)
		}
		return fail("is terminated")
	case last != nil:
		if last.ContainerID == "" {
			return fail("is terminated")
		}
		return byID(last.ContainerID)
	case waiting != nil:
		switch waiting.Reason {
		case "ErrImagePull":
			return fail("is waiting to start: image can't be pulled")
		case "ImagePullBackOff":
			return fail("is waiting to start: trying and failing to pull image")
		}
		return fail("is waiting to start: %s", waiting.Reason)
	}
	return fail("is waiting to start - no logs yet")
}

// findPod returns the pod named namespace/name, preferring one that is not
// being deleted (a static pod's old and new UIDs can briefly coexist).
func findPod(pods []*corev1.Pod, namespace, name string) *corev1.Pod {
	var found *corev1.Pod
	for _, p := range pods {
		if p.Namespace != namespace || p.Name != name {
			continue
		}
		if p.DeletionTimestamp == nil {
			return p
		}
		if found == nil {
			found = p
		}
	}
	return found
}

// hasContainer reports whether the pod's spec has a container (regular,
// init or ephemeral) of that name.
func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// findStatus returns the status of the named container.
func findStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st, true
			}
		}
	}
	return corev1.ContainerStatus{}, false
}

// previousInstance returns the newest instance below current whose log is
// in dir (a container's log directory, "<n>.log" per instance), or -1. It
// is usually current-1; an attempt may be missing (an instance created
// but never started is removed without a log), and garbage collection
// keeps only the newest dead instances.
func previousInstance(dir string, current int) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	best := -1
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err != nil || !strings.HasSuffix(e.Name(), ".log") || n >= current || n <= best {
			continue
		}
		best = n
	}
	return best
}
