package fakecri

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// allowScript lets cmp look inside script values.
func allowScript() cmp.Option { return cmp.AllowUnexported(script{}, rule{}, step{}, answer{}) }

func TestParseScript(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		cmd  []string
		want script
	}{
		{"nothing", nil, nil, script{pids: 1}},
		{"exit", []string{"FAKECRI_EXIT_AFTER=1m30s", "FAKECRI_EXIT_CODE=3"}, nil,
			script{pids: 1, hasExit: true, exitAfter: 90 * time.Second, exitCode: 3}},
		{"resources", []string{"FAKECRI_MEMORY=1.5Gi", "FAKECRI_MEMORY_GROWTH=10Mi/1m", "FAKECRI_CPU=0.25", "FAKECRI_DISK=1G", "FAKECRI_PIDS=7"}, nil,
			script{pids: 7, memory: 3 << 29, growthBytes: 10 << 20, growthPer: time.Minute, cpuMilli: 250, disk: 1e9}},
		{"signals", []string{"FAKECRI_IGNORE_SIGTERM=true", "FAKECRI_STOP_DELAY=2s", "FAKECRI_STARTUP_DELAY=300ms"}, nil,
			script{pids: 1, ignoreSigterm: true, hasStopDelay: true, stopDelay: 2 * time.Second, startupDelay: 300 * time.Millisecond}},
		{"log", []string{"FAKECRI_LOG=hello world", "FAKECRI_LOG_EVERY=5s"}, nil,
			script{pids: 1, hasLog: true, logLine: "hello world", logEvery: 5 * time.Second}},
		{"exec", []string{"FAKECRI_EXEC=cat  /tmp/x=0,5s:1 ; hang"}, nil,
			script{pids: 1, exec: []rule{
				{key: "cat /tmp/x", tl: timeline{{0, answer{value: 0}}, {5 * time.Second, answer{value: 1}}}},
				{tl: timeline{{0, answer{kind: answerHang}}}},
			}}},
		{"endpoints", []string{"FAKECRI_HTTP=8080/healthz=503,10s:200;*=down", "FAKECRI_TCP=22=up", "FAKECRI_GRPC=9090/svc=serving"}, nil,
			script{pids: 1,
				http: []rule{
					{port: 8080, key: "healthz", tl: timeline{{0, answer{value: 503}}, {10 * time.Second, answer{value: 200}}}},
					{tl: timeline{{0, answer{kind: answerDown}}}},
				},
				tcp:  []rule{{port: 22, tl: timeline{{0, answer{}}}}},
				grpc: []rule{{port: 9090, key: "svc", tl: timeline{{0, answer{value: grpcServing}}}}},
			}},
		{"sh exit", nil, []string{"sh", "-c", "exit 3"}, script{pids: 1, hasExit: true, exitCode: 3, ignoreSigterm: true}},
		{"sh sleep exit", nil, []string{"/bin/sh", "-c", "sleep 2 && exit 4"}, script{pids: 1, hasExit: true, exitAfter: 2 * time.Second, exitCode: 4, ignoreSigterm: true}},
		{"sleep", nil, []string{"sleep", "1.5m"}, script{pids: 1, hasExit: true, exitAfter: 90 * time.Second, ignoreSigterm: true}},
		{"sleep infinity", nil, []string{"sleep", "infinity"}, script{pids: 1, ignoreSigterm: true}},
		{"false", nil, []string{"false"}, script{pids: 1, hasExit: true, exitCode: 1}},
		{"unknown shape", nil, []string{"nginx", "-g", "daemon off;"}, script{pids: 1}},
		{"env wins over shape", []string{"FAKECRI_EXIT_AFTER=1s", "FAKECRI_IGNORE_SIGTERM=false"}, []string{"sleep", "10"},
			script{pids: 1, hasExit: true, exitAfter: time.Second}},
		{"shape with explicit SIGTERM handling", []string{"FAKECRI_IGNORE_SIGTERM=false"}, []string{"sleep", "10"},
			script{pids: 1, hasExit: true, exitAfter: 10 * time.Second}},
		{"last value wins, others ignored", []string{"PATH=/bin", "FAKECRI_EXIT_CODE=1", "FAKECRI_EXIT_CODE=2"}, nil,
			script{pids: 1, hasExit: true, exitCode: 2}},
	} {
		cfg := ctrConfig("c", tc.env...)
		cfg.Command = tc.cmd
		got, err := parseScript(cfg)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(&tc.want, got, allowScript()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, env := range []string{
		"FAKECRI_EXIT_AFTER=-1s",
		"FAKECRI_EXIT_AFTER=5",
		"FAKECRI_EXIT_CODE=-1",
		"FAKECRI_EXIT_CODE=1.5",
		"FAKECRI_STARTUP_DELAY=x",
		"FAKECRI_MEMORY=-5Mi",
		"FAKECRI_MEMORY=1e6",
		"FAKECRI_MEMORY=20Mb",
		"FAKECRI_MEMORY=99999999999999999999",
		"FAKECRI_MEMORY=16Ei",
		"FAKECRI_MEMORY_GROWTH=1Mi",
		"FAKECRI_MEMORY_GROWTH=1Mi/0s",
		"FAKECRI_MEMORY_GROWTH=1Mi/x",
		"FAKECRI_CPU=100x",
		"FAKECRI_CPU=.5",
		"FAKECRI_PIDS=many",
		"FAKECRI_IGNORE_SIGTERM=yes",
		"FAKECRI_IGNORE_SIGTERM=1",
		"FAKECRI_STOP_DELAY=forever",
		"FAKECRI_EXEC=",
		"FAKECRI_EXEC=256",
		"FAKECRI_EXEC=ls=0,5s",
		"FAKECRI_EXEC=ls=0,5s:1,3s:0",
		"FAKECRI_EXEC=ls=0;ls=1",
		"FAKECRI_EXEC= =0",
		"FAKECRI_HTTP=200",
		"FAKECRI_HTTP=0=200",
		"FAKECRI_HTTP=70000=200",
		"FAKECRI_HTTP=8080=99",
		"FAKECRI_HTTP=8080/=200",
		"FAKECRI_TCP=22=open",
		"FAKECRI_GRPC=9090=SERVING",
		"FAKECRI_LOG=a\nb",
		"FAKECRI_LOG_EVERY=1s",
		"FAKECRI_NOPE=1",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := parseScript(ctrConfig("c", env))
		wantErrContains(t, env, err, k, "\""+strings.ReplaceAll(v, "\n", `\n`)+"\"")
	}
	if _, err := parseScript(ctrConfig("c", "FAKECRI_LOG_EVERY=500us", "FAKECRI_LOG=x")); err == nil {
		t.Errorf("LOG_EVERY below 1ms accepted")
	}
}

func TestTimelineAt(t *testing.T) {
	tl := timeline{{0, answer{value: 1}}, {time.Second, answer{value: 2}}, {time.Minute, answer{value: 3}}}
	for d, want := range map[time.Duration]int{0: 1, time.Second - 1: 1, time.Second: 2, time.Hour: 3} {
		if got := tl.at(d).value; got != want {
			t.Errorf("at(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestParseQuantities(t *testing.T) {
	for in, want := range map[string]uint64{"0": 0, "1": 1, "1Ki": 1024, "1.5Mi": 3 << 19, "2G": 2e9, "0.1": 1, "1k": 1000} {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]uint64{"100m": 100, "0.5": 500, "2": 2000, "1.5m": 2} {
		got, err := parseMilliCPU(in)
		if err != nil || got != want {
			t.Errorf("parseMilliCPU(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
