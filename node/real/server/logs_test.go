package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/crilog"
)

func TestParseCRILogLine(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	tests := []struct {
		line        string
		wantStream  string
		wantPartial bool
		wantMsg     string
		wantErr     bool
	}{
		{line: "2025-01-02T03:04:05.123456789Z stdout F hello world", wantStream: "stdout", wantMsg: "hello world"},
		{line: "2025-01-02T03:04:05.123456789Z stderr P part", wantStream: "stderr", wantPartial: true, wantMsg: "part"},
		{line: "2025-01-02T03:04:05.123456789Z stdout F ", wantStream: "stdout", wantMsg: ""},
		{line: "2025-01-02T03:04:05.123456789Z stdout F", wantStream: "stdout", wantMsg: ""},
		{line: "2025-01-02T03:04:05.123456789Z stdout F:x  two  spaces ", wantStream: "stdout", wantMsg: " two  spaces "},
		{line: "2025-01-02T05:04:05.123456789+02:00 stdout F tz", wantStream: "stdout", wantMsg: "tz"},
		{line: "garbage", wantErr: true},
		{line: "yesterday stdout F x", wantErr: true},
		{line: "2025-01-02T03:04:05.123456789Z stdin F x", wantErr: true},
		{line: "2025-01-02T03:04:05.123456789Z stdout", wantErr: true},
		{line: "2025-01-02T03:04:05.123456789Z stdout X x", wantErr: true},
	}
	for _, tc := range tests {
		gotTS, stream, partial, msg, err := crilog.ParseLine([]byte(tc.line))
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err = %v, want error %v", tc.line, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !gotTS.Equal(ts) || stream != tc.wantStream || partial != tc.wantPartial || string(msg) != tc.wantMsg {
			t.Errorf("%q: got %v %q %v %q", tc.line, gotTS, stream, partial, msg)
		}
	}
}

func TestParseLogOptions(t *testing.T) {
	now := time.Date(2025, 1, 1, 1, 0, 0, 0, time.UTC)
	tests := []struct {
		query   string
		want    logOptions
		wantErr string
	}{
		{"", logOptions{tail: -1}, ""},
		{"follow&previous=true&timestamps=1", logOptions{tail: -1, follow: true, previous: true, timestamps: true}, ""},
		{"follow=false&tailLines=0&limitBytes=1", logOptions{tail: 0, limitBytes: 1}, ""},
		{"sinceSeconds=60", logOptions{tail: -1, since: now.Add(-time.Minute)}, ""},
		{"sinceTime=2025-01-01T00:30:00Z", logOptions{tail: -1, since: now.Add(-30 * time.Minute)}, ""},
		{"tailLines=abc", logOptions{}, `tailLines "abc" is not an integer`},
		{"tailLines=-1", logOptions{}, "tailLines -1 must be at least 0"},
		{"limitBytes=0", logOptions{}, "limitBytes 0 must be at least 1"},
		{"limitBytes=", logOptions{}, `limitBytes "" is not an integer`},
		{"follow=maybe", logOptions{}, `follow "maybe" is not a boolean`},
		{"sinceSeconds=0", logOptions{}, "sinceSeconds 0 must be at least 1"},
		{"sinceTime=yesterday", logOptions{}, `sinceTime "yesterday" is not an RFC 3339 time`},
		{"sinceSeconds=1&sinceTime=2025-01-01T00:30:00Z", logOptions{}, "at most one of sinceSeconds and sinceTime may be given"},
	}
	for _, tc := range tests {
		q, _ := url.ParseQuery(tc.query)
		got, err := parseLogOptions(q, now)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: err %v, want %q", tc.query, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(logOptions{})); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.query, diff)
		}
	}
}

// currentLog is instance 1 of "app": stdout and stderr interleaved, a
// line split in partial records around a stderr line, and a line that is
// not in the CRI format (skipped).
var currentLog = []string{
	"2025-01-01T00:00:01.000000001Z stdout F one",
	"2025-01-01T00:00:02Z stderr F two",
	"2025-01-01T00:00:03Z stdout P thr",
	"2025-01-01T00:00:03.5Z stderr F err-between",
	"2025-01-01T00:00:04Z stdout P e",
	"2025-01-01T00:00:05Z stdout F e!",
	"not a cri line",
	"2025-01-01T00:00:06Z stdout F four",
}

// getWithin runs a GET through h and fails if it has not finished within
// 10 s (a stream that follows when it should not).
func getWithin(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	type result struct {
		code int
		body string
	}
	ch := make(chan result, 1)
	go func() {
		req := httptest.NewRequest("GET", target, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		ch <- result{rec.Code, rec.Body.String()}
	}()
	select {
	case r := <-ch:
		return r.code, r.body
	case <-time.After(10 * time.Second):
		t.Fatalf("GET %s did not finish", target)
		return 0, ""
	}
}

func TestContainerLogs(t *testing.T) {
	p := newProvider(t)
	web := logPod(1)
	fresh := logPod(0)
	fresh.Name, fresh.UID = "fresh", "uid-2"
	waiting := logPod(0)
	waiting.Name, waiting.UID = "waiting", "uid-3"
	waiting.Status.ContainerStatuses[0].ContainerID = ""
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	done := logPod(0)
	done.Name, done.UID = "done", "uid-4"
	done.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, ContainerID: "containerd://app-0"}}
	gap := logPod(3)
	gap.Name, gap.UID = "gap", "uid-5"
	// Crash-looping: instance 2 exited and waits out its back-off; its
	// status names it as the container and as the last termination.
	looping := logPod(2)
	looping.Name, looping.UID = "looping", "uid-6"
	lst := &looping.Status.ContainerStatuses[0]
	lst.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	lst.LastTerminationState.Terminated.ContainerID = lst.ContainerID
	pulling := logPod(0)
	pulling.Name, pulling.UID = "pulling", "uid-7"
	pulling.Status.ContainerStatuses[0].ContainerID = ""
	pulling.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	// Terminated, its instance removed (no ID) and no earlier one.
	gone := logPod(0)
	gone.Name, gone.UID = "gone", "uid-8"
	gone.Status.ContainerStatuses[0].ContainerID = ""
	gone.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	// The instance its last termination names was collected.
	collected := logPod(1)
	collected.Name, collected.UID = "collected", "uid-9"
	p.setPods(web, fresh, waiting, done, gap, looping, pulling, gone, collected)
	loopLog := func(n int) string {
		return strings.Replace(logPath(p, "app", n), "default_web_uid-1", "default_looping_uid-6", 1)
	}
	writeLog(t, loopLog(2), "2025-01-01T00:00:00Z stdout F crashed again")
	writeLog(t, loopLog(1), "2025-01-01T00:00:00Z stdout F crashed first")
	writeLog(t, strings.Replace(logPath(p, "app", 1), "default_web_uid-1", "default_collected_uid-9", 1), "2025-01-01T00:00:00Z stdout F now")
	writeLog(t, logPath(p, "app", 1), currentLog...)
	writeLog(t, logPath(p, "app", 0), "2025-01-01T00:00:00Z stdout F previous run")
	writeLog(t, strings.Replace(logPath(p, "app", 0), "default_web_uid-1", "default_done_uid-4", 1), "2025-01-01T00:00:00Z stdout F finished")
	// Attempt 2 was created but never started (removed without a log);
	// attempt 0 was collected: previous is attempt 1.
	gapLog := func(n int) string {
		return strings.Replace(logPath(p, "app", n), "default_web_uid-1", "default_gap_uid-5", 1)
	}
	writeLog(t, gapLog(3), "2025-01-01T00:00:00Z stdout F now")
	writeLog(t, gapLog(1), "2025-01-01T00:00:00Z stdout F before the gap")
	s := newServer(t, p, AlwaysAllow{})

	const all = "one\ntwo\nerr-between\nthree!\nfour\n"
	tests := []struct {
		name       string
		path       string
		wantStatus int
		wantBody   string
	}{
		{"everything", "/containerLogs/default/web/app", 200, all},
		{"tail", "/containerLogs/default/web/app?tailLines=2", 200, "three!\nfour\n"},
		{"tail zero", "/containerLogs/default/web/app?tailLines=0", 200, ""},
		{"tail more than there is", "/containerLogs/default/web/app?tailLines=100", 200, all},
		{"timestamps", "/containerLogs/default/web/app?tailLines=2&timestamps=true", 200,
			"2025-01-01T00:00:03.000000000Z three!\n2025-01-01T00:00:06.000000000Z four\n"},
		{"limitBytes", "/containerLogs/default/web/app?limitBytes=6", 200, "one\ntw"},
		{"limitBytes exactly a line", "/containerLogs/default/web/app?limitBytes=4", 200, "one\n"},
		{"limitBytes with tail", "/containerLogs/default/web/app?tailLines=1&limitBytes=100", 200, "four\n"},
		{"sinceTime", "/containerLogs/default/web/app?sinceTime=2025-01-01T00:00:03Z", 200, "err-between\nthree!\nfour\n"},
		{"sinceTime with tail", "/containerLogs/default/web/app?sinceTime=2025-01-01T00:00:03Z&tailLines=5", 200, "err-between\nthree!\nfour\n"},
		{"previous", "/containerLogs/default/web/app?previous=true", 200, "previous run\n"},
		{"previous skips a missing attempt", "/containerLogs/default/gap/app?previous=true", 200, "before the gap\n"},
		{"previous never follows", "/containerLogs/default/web/app?previous=true&follow=true", 200, "previous run\n"},
		{"a finished container is not followed", "/containerLogs/default/done/app?follow=true", 200, "finished\n"},
		{"malformed tailLines", "/containerLogs/default/web/app?tailLines=abc", 400, "invalid query: tailLines \"abc\" is not an integer\n"},
		{"negative tailLines", "/containerLogs/default/web/app?tailLines=-5", 400, "invalid query: tailLines -5 must be at least 0\n"},
		{"zero limitBytes", "/containerLogs/default/web/app?limitBytes=0", 400, "invalid query: limitBytes 0 must be at least 1\n"},
		{"malformed follow", "/containerLogs/default/web/app?follow=maybe", 400, "invalid query: follow \"maybe\" is not a boolean\n"},
		{"unknown pod", "/containerLogs/default/nope/app", 404, "pod default/nope does not exist\n"},
		{"unknown namespace", "/containerLogs/other/web/app", 404, "pod other/web does not exist\n"},
		{"unknown container", "/containerLogs/default/web/nope", 404, "container \"nope\" not found in pod default/web (uid-1)\n"},
		{"no previous instance", "/containerLogs/default/fresh/app?previous=true", 400, "previous terminated container \"app\" in pod default/fresh (uid-2) not found\n"},
		{"no log file yet", "/containerLogs/default/fresh/app", 404, "log of container \"app\" (restart 0) in pod default/fresh (uid-2) not found\n"},
		{"waiting to start", "/containerLogs/default/waiting/app", 400, "container \"app\" in pod default/waiting (uid-3) is waiting to start: ContainerCreating\n"},
		{"init container without a status", "/containerLogs/default/web/init", 400, "container \"init\" in pod default/web (uid-1) is not available\n"},
		{"crash loop: the instance that last exited", "/containerLogs/default/looping/app", 200, "crashed again\n"},
		{"crash loop: previous is the last termination, as the kubelet's", "/containerLogs/default/looping/app?previous=true", 200, "crashed again\n"},
		{"pull back-off", "/containerLogs/default/pulling/app", 400, "container \"app\" in pod default/pulling (uid-7) is waiting to start: trying and failing to pull image\n"},
		{"terminated and removed", "/containerLogs/default/gone/app", 400, "container \"app\" in pod default/gone (uid-8) is terminated\n"},
		{"last termination collected", "/containerLogs/default/collected/app?previous=true", 400, "unable to retrieve container logs for containerd://app-0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getWithin(t, s.SecureHandler(), tc.path)
			if code != tc.wantStatus || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

func TestContainerLogsUnfinishedLines(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	path := logPath(p, "app", 0)
	writeLog(t, path, "2025-01-01T00:00:01Z stdout F done", "2025-01-01T00:00:02Z stdout P half")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("2025-01-01T00:00:03Z stderr F no newline yet")
	f.Close()
	s := newServer(t, p, AlwaysAllow{})
	// Without follow, what is there is shown: the partial record and the
	// last line without its newline.
	code, body := getWithin(t, s.SecureHandler(), "/containerLogs/default/web/app")
	if want := "done\nno newline yet\nhalf"; code != 200 || body != want {
		t.Errorf("got %d %q, want %q", code, body, want)
	}
}

// followServer serves s's secure handler and reports when a request's
// handler has returned.
func followServer(t *testing.T, s *Server) (*httptest.Server, chan struct{}) {
	t.Helper()
	finished := make(chan struct{}, 16)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.SecureHandler().ServeHTTP(w, r)
		finished <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return ts, finished
}

// openStream starts a GET with the test token under ctx.
func openStream(t *testing.T, ctx context.Context, url string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

// readLine reads one line from the stream or fails.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the stream: %q, %v", line, err)
	}
	return line
}

func TestContainerLogsFollow(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(1))
	path := logPath(p, "app", 1)
	writeLog(t, path, "2025-01-01T00:00:01Z stdout F old", "2025-01-01T00:00:02Z stdout F a")
	s := newServer(t, p, AlwaysAllow{}, func(c *Config) { c.LogPollInterval = 5 * time.Millisecond })
	ts, finished := followServer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, r := openStream(t, ctx, ts.URL+"/containerLogs/default/web/app?follow=true&tailLines=1")
	if got := readLine(t, r); got != "a\n" {
		t.Fatalf("first line %q, want the tail %q", got, "a\n")
	}
	// Written after the request started: partial records are joined.
	appendLog(t, path, "2025-01-01T00:00:03Z stdout P b", "2025-01-01T00:00:04Z stdout F c")
	if got := readLine(t, r); got != "bc\n" {
		t.Fatalf("followed line %q, want %q", got, "bc\n")
	}
	// A line written in two writes, the newline last.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("2025-01-01T00:00:05Z stdout F sp")
	f.Sync()
	f.WriteString("lit\n")
	f.Close()
	if got := readLine(t, r); got != "split\n" {
		t.Fatalf("followed line %q, want %q", got, "split\n")
	}

	// Rotation: the file is renamed and a new one takes its place.
	if err := os.Rename(path, path+".20250101-000010"); err != nil {
		t.Fatal(err)
	}
	appendLog(t, path+".20250101-000010", "2025-01-01T00:00:06Z stdout F before rotation")
	writeLog(t, path, "2025-01-01T00:00:07Z stdout F after rotation")
	if got := readLine(t, r); got != "before rotation\n" {
		t.Fatalf("line %q, want %q", got, "before rotation\n")
	}
	if got := readLine(t, r); got != "after rotation\n" {
		t.Fatalf("line %q, want %q", got, "after rotation\n")
	}

	// The container stops: its last line comes, then the stream ends.
	appendLog(t, path, "2025-01-01T00:00:08Z stdout F last words")
	stopped := logPod(1)
	stopped.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	p.setPods(stopped)
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "last words\n" {
		t.Fatalf("after the container stopped: %q, %v; want %q then the end", rest, err, "last words\n")
	}
	select {
	case <-finished:
	case <-ctx.Done():
		t.Fatal("handler still running after the stream ended")
	}
}

func TestContainerLogsFollowEndsWithTheClient(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	path := logPath(p, "app", 0)
	writeLog(t, path, "2025-01-01T00:00:01Z stdout F x")
	s := newServer(t, p, AlwaysAllow{}, func(c *Config) { c.LogPollInterval = 5 * time.Millisecond })
	ts, finished := followServer(t, s)
	deadline, cancelAll := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAll()

	reqCtx, cancelReq := context.WithCancel(deadline)
	_, r := openStream(t, reqCtx, ts.URL+"/containerLogs/default/web/app?follow=1&limitBytes=1000")
	if got := readLine(t, r); got != "x\n" {
		t.Fatalf("line %q", got)
	}
	cancelReq() // the client goes away
	select {
	case <-finished:
	case <-deadline.Done():
		t.Fatal("handler still following after the client went away")
	}

	// limitBytes ends a follow too.
	_, r = openStream(t, deadline, ts.URL+"/containerLogs/default/web/app?follow=true&limitBytes=5")
	appendLog(t, path, "2025-01-01T00:00:02Z stdout F yyyy")
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "x\nyyy" {
		t.Fatalf("follow with limitBytes=5: %q, %v", rest, err)
	}
	select {
	case <-finished:
	case <-deadline.Done():
		t.Fatal("handler still running after limitBytes")
	}
}
