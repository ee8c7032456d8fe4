package termmsg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

func logLines(n int, text func(int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "2026-12-01T10:00:00.000000000Z stdout F %s\n", text(i))
	}
	return b.String()
}

func TestMessage(t *testing.T) {
	const msgFile, logFile = "/r/pods/u/containers/app/0000beef", "/logs/app/0.log"
	status := func(policy corev1.TerminationMessagePolicy, code int32, reason string) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{
			State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: code, Reason: reason, LogPath: logFile,
			Annotations: map[string]string{
				podstate.AnnotationTerminationMessagePth:    "/dev/termination-log",
				podstate.AnnotationTerminationMessagePolicy: string(policy),
			},
			Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/elsewhere"}, {ContainerPath: "/dev/termination-log", HostPath: msgFile}},
		}
	}
	long := strings.Repeat("a", 100) + strings.Repeat("b", MaxBytes)
	for _, tc := range []struct {
		name      string
		file, log *string
		st        *runtimeapi.ContainerStatus
		want      string
	}{
		{name: "from the file", file: ptr("bye\n"), log: ptr(logLines(3, func(int) string { return "x" })),
			st: status(corev1.TerminationMessageReadFile, 1, "Error"), want: "bye\n"},
		{name: "file capped at its last 4 KiB", file: &long, st: status(corev1.TerminationMessageReadFile, 0, "Completed"), want: long[100:]},
		{name: "empty file, File policy: nothing", file: ptr(""), log: ptr(logLines(1, func(int) string { return "x" })),
			st: status(corev1.TerminationMessageReadFile, 1, "Error"), want: ""},
		{name: "empty file, fallback, failed: the log's tail", file: ptr(""),
			log: ptr(logLines(100, func(i int) string { return fmt.Sprint(i) })),
			st:  status(corev1.TerminationMessageFallbackToLogsOnError, 2, "Error"),
			want: func() string { // lines 20..99: the last 80
				var b strings.Builder
				for i := 20; i < 100; i++ {
					fmt.Fprintf(&b, "%d\n", i)
				}
				return b.String()
			}()},
		{name: "fallback keeps the last 2 KiB", file: ptr(""),
			log:  ptr(logLines(10, func(int) string { return strings.Repeat("z", 499) })),
			st:   status(corev1.TerminationMessageFallbackToLogsOnError, 1, "Error"),
			want: strings.Repeat(strings.Repeat("z", 499)+"\n", 10)[5000-MaxLogBytes:]},
		{name: "fallback, but the container succeeded", file: ptr(""), log: ptr(logLines(1, func(int) string { return "x" })),
			st: status(corev1.TerminationMessageFallbackToLogsOnError, 0, "Completed"), want: ""},
		{name: "fallback, the file wins when written", file: ptr("from file"), log: ptr(logLines(1, func(int) string { return "x" })),
			st: status(corev1.TerminationMessageFallbackToLogsOnError, 1, "Error"), want: "from file"},
		{name: "fallback, no file at all: the log", log: ptr(logLines(1, func(int) string { return "last words" })),
			st: status(corev1.TerminationMessageFallbackToLogsOnError, 1, "Error"), want: "last words\n"},
		{name: "partial records joined", file: ptr(""),
			log: ptr("2026-12-01T10:00:00Z stdout P par\n2026-12-01T10:00:00Z stdout F tial\n"),
			st:  status(corev1.TerminationMessageFallbackToLogsOnError, 1, "Error"), want: "partial\n"},
		{name: "a huge log: only its end is read, the record cut by the window skipped", file: ptr(""),
			log: ptr(logLines(1, func(int) string { return strings.Repeat("x", 70<<10) }) + logLines(2, func(i int) string { return fmt.Sprint("end", i) })),
			st:  status(corev1.TerminationMessageFallbackToLogsOnError, 1, "Error"), want: "end0\nend1\n"},
		{name: "running: none", file: ptr("bye"), st: &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := memfs.New()
			if tc.file != nil {
				fs.WriteFile(msgFile, []byte(*tc.file))
			}
			if tc.log != nil {
				fs.WriteFile(logFile, []byte(*tc.log))
			}
			if diff := cmp.Diff(tc.want, New(fs).Message(tc.st)); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCap(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i"}}, Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	big := strings.Repeat("m", 5000)
	term := func(msg string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}
	}
	st := &corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "i", State: term(big)}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "a", State: term("short"), LastTerminationState: term(big)},
			{Name: "b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	}
	Cap(pod, st)
	share := MaxPodBytes / 3
	got := []int{len(st.InitContainerStatuses[0].State.Terminated.Message), len(st.ContainerStatuses[0].State.Terminated.Message),
		len(st.ContainerStatuses[0].LastTerminationState.Terminated.Message)}
	if diff := cmp.Diff([]int{share, 5, share}, got); diff != "" {
		t.Errorf("message lengths (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }
