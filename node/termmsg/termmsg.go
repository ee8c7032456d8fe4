// Package termmsg reads the termination message of an exited container,
// as the kubelet does: the file bind-mounted at its terminationMessagePath
// (its last 4 KiB), or, with terminationMessagePolicy
// FallbackToLogsOnError, when that file is empty and the container
// failed, the tail of its log (80 lines, 2 KiB).
package termmsg

import (
	"errors"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/crilog"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// The limits, as upstream's.
const (
	// MaxBytes is the most of a container's termination message file kept.
	MaxBytes = 4 << 10
	// MaxPodBytes is the most of all of a pod's termination messages kept
	// in its status (each container gets its share: see Cap).
	MaxPodBytes = 12 << 10
	// MaxLogLines and MaxLogBytes bound a message taken from the log.
	MaxLogLines = 80
	MaxLogBytes = 2 << 10
)

// logWindow is how much of the end of a log is read for its tail: more
// than MaxLogBytes of messages with the headers of MaxLogLines records,
// and more than one record can be (16 KiB of message and its header).
const logWindow = 64 << 10

// reasonCannotRun is the runtime's reason for a container that never ran
// (it has no log to fall back to).
const reasonCannotRun = "ContainerCannotRun"

// Reader reads termination messages through the agent's files.
type Reader struct {
	files deps.Files
}

// New returns a Reader reading through files.
func New(files deps.Files) *Reader { return &Reader{files: files} }

// Message returns the termination message of the exited container whose
// CRI status is s ("" for one not exited). The message file is the host
// side of the mount at the path its annotations name.
func (r *Reader) Message(s *runtimeapi.ContainerStatus) string {
	if s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return ""
	}
	a := s.GetAnnotations()
	fallback := corev1.TerminationMessagePolicy(a[podstate.AnnotationTerminationMessagePolicy]) == corev1.TerminationMessageFallbackToLogsOnError &&
		s.GetExitCode() != 0 && s.GetReason() != reasonCannotRun
	msg, fromLogs := r.fromFile(s, a[podstate.AnnotationTerminationMessagePth], fallback)
	if fromLogs {
		return r.fromLog(s.GetLogPath())
	}
	return msg
}

// fromFile reads the message file; it reports whether to read the log
// instead.
func (r *Reader) fromFile(s *runtimeapi.ContainerStatus, path string, fallback bool) (string, bool) {
	if path == "" {
		return "", fallback
	}
	for _, m := range s.GetMounts() {
		if m.GetContainerPath() != path {
			continue
		}
		data, err := r.files.ReadFileTail(m.GetHostPath(), MaxBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fallback
		case err != nil:
			return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// fromLog returns the tail of the container's CRI log.
func (r *Reader) fromLog(path string) string {
	if path == "" {
		return ""
	}
	data, err := r.files.ReadFileTail(path, logWindow)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	// The window may begin inside a record: that piece does not parse as
	// a record, and Tail skips it.
	return string(crilog.Tail(data, MaxLogLines, MaxLogBytes))
}

// Cap truncates the termination messages of status to the pod's share
// per container: MaxPodBytes divided by the number of containers of pod
// (init, regular and ephemeral), as the kubelet does before it writes a
// status.
func Cap(pod *corev1.Pod, status *corev1.PodStatus) {
	limit := MaxPodBytes
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		limit /= n
	}
	for _, list := range [][]corev1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			for _, t := range []*corev1.ContainerStateTerminated{list[i].State.Terminated, list[i].LastTerminationState.Terminated} {
				if t != nil && len(t.Message) > limit {
					t.Message = t.Message[:limit]
				}
			}
		}
	}
}
