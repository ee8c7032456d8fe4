package fakecri

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EnvPrefix starts every environment variable that scripts a container.
const EnvPrefix = "FAKECRI_"

// script is a container's behaviour, parsed from its FAKECRI_ environment
// variables (and from a plain `sh -c "exit N"` / `sleep N` command). All
// times are relative to the container's start.
type script struct {
	hasExit      bool
	exitAfter    time.Duration
	exitCode     int32
	startupDelay time.Duration

	memory      uint64        // working set at start, bytes
	growthBytes uint64        // working-set growth: growthBytes per growthPer
	growthPer   time.Duration //
	cpuMilli    uint64
	disk        uint64 // writable layer, bytes
	pids        uint64
	// writes are the bytes written under mount paths over time
	// (FAKECRI_WRITE): key is the path in the container, each step's
	// value the bytes written by then.
	writes []rule

	ignoreSigterm bool
	hasStopDelay  bool
	stopDelay     time.Duration

	exec            []rule
	http, tcp, grpc []rule

	hasLog   bool
	logLine  string
	logEvery time.Duration

	hasTermMessage bool
	termMessage    string
}

// answerKind says how an exec or an endpoint answers.
type answerKind uint8

const (
	answerValue answerKind = iota // answers with value
	answerDown                    // connection refused
	answerHang                    // never answers
)

// answer is one scripted reply: an exit code, HTTP status, TCP up (0) or
// gRPC health status, or down/hang.
type answer struct {
	kind  answerKind
	value int
	// location is an HTTP redirect's Location ("302>http://host/path").
	location string
}

// step is the answer from time at (since start) on.
type step struct {
	at  time.Duration
	ans answer
}

// timeline is a list of steps with strictly increasing times, the first at 0.
type timeline []step

// at returns the answer at elapsed time d since start.
func (tl timeline) at(d time.Duration) answer {
	i := sort.Search(len(tl), func(i int) bool { return tl[i].at > d })
	if i == 0 {
		return tl[0].ans
	}
	return tl[i-1].ans
}

// rule scripts one exec command or endpoint. For exec, key is the command
// line (argv joined by spaces, "" for any command). For endpoints port is
// the port (0 for "*") and key the HTTP path or gRPC service ("" for any).
type rule struct {
	key  string
	port int
	tl   timeline
}

// envVar names, all behind EnvPrefix.
const (
	envExitAfter     = "FAKECRI_EXIT_AFTER"
	envExitCode      = "FAKECRI_EXIT_CODE"
	envStartupDelay  = "FAKECRI_STARTUP_DELAY"
	envMemory        = "FAKECRI_MEMORY"
	envMemoryGrowth  = "FAKECRI_MEMORY_GROWTH"
	envCPU           = "FAKECRI_CPU"
	envDisk          = "FAKECRI_DISK"
	envWrite         = "FAKECRI_WRITE"
	envPIDs          = "FAKECRI_PIDS"
	envIgnoreSigterm = "FAKECRI_IGNORE_SIGTERM"
	envStopDelay     = "FAKECRI_STOP_DELAY"
	envExec          = "FAKECRI_EXEC"
	envHTTP          = "FAKECRI_HTTP"
	envTCP           = "FAKECRI_TCP"
	envGRPC          = "FAKECRI_GRPC"
	envLog           = "FAKECRI_LOG"
	envLogEvery      = "FAKECRI_LOG_EVERY"
	envTermMessage   = "FAKECRI_TERMINATION_MESSAGE"
)

// minLogEvery bounds FAKECRI_LOG_EVERY so log output stays finite.
const minLogEvery = time.Millisecond

// parseScript builds a container's script from its config. A bad FAKECRI_
// value is reported naming the variable and the value.
func parseScript(cfg *runtimeapi.ContainerConfig) (*script, error) {
	s := &script{pids: 1}
	env := map[string]string{}
	var keys []string
	for _, kv := range cfg.GetEnvs() {
		k := kv.GetKey()
		if !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		if _, seen := env[k]; !seen {
			keys = append(keys, k)
		}
		env[k] = string(kv.GetValue()) // the last value wins, like a shell
	}
	sort.Strings(keys)
	ignoreSet := false
	for _, k := range keys {
		v := env[k]
		if err := s.set(k, v, &ignoreSet); err != nil {
			return nil, fmt.Errorf("env %s=%q: %w", k, v, err)
		}
	}
	if s.logEvery > 0 && !s.hasLog {
		return nil, fmt.Errorf("env %s=%q: needs %s", envLogEvery, env[envLogEvery], envLog)
	}
	_, hasAfter := env[envExitAfter]
	_, hasCode := env[envExitCode]
	if hasAfter || hasCode {
		s.hasExit = true
	} else if ps, ok := plainShape(append(append([]string{}, cfg.GetCommand()...), cfg.GetArgs()...)); ok {
		s.hasExit, s.exitAfter, s.exitCode = ps.hasExit, ps.after, ps.code
		if !ignoreSet {
			s.ignoreSigterm = ps.ignoreSigterm
		}
	}
	return s, nil
}

// set applies one FAKECRI_ variable.
func (s *script) set(k, v string, ignoreSet *bool) error {
	var err error
	switch k {
	case envExitAfter:
		s.exitAfter, err = parseDuration(v)
	case envExitCode:
		var n int
		n, err = parseIntRange(v, 0, 255)
		s.exitCode = int32(n)
	case envStartupDelay:
		s.startupDelay, err = parseDuration(v)
	case envMemory:
		s.memory, err = parseBytes(v)
	case envMemoryGrowth:
		s.growthBytes, s.growthPer, err = parseRate(v)
	case envCPU:
		s.cpuMilli, err = parseMilliCPU(v)
	case envDisk:
		s.disk, err = parseBytes(v)
	case envWrite:
		s.writes, err = parseWrites(v)
	case envPIDs:
		var n int
		n, err = parseIntRange(v, 0, 1<<22)
		s.pids = uint64(n)
	case envIgnoreSigterm:
		s.ignoreSigterm, err = parseStrictBool(v)
		*ignoreSet = true
	case envStopDelay:
		s.stopDelay, err = parseDuration(v)
		s.hasStopDelay = true
	case envExec:
		s.exec, err = parseRules(v, true, parseExecAnswer)
	case envHTTP:
		s.http, err = parseRules(v, false, parseHTTPAnswer)
	case envTCP:
		s.tcp, err = parseRules(v, false, parseTCPAnswer)
	case envGRPC:
		s.grpc, err = parseRules(v, false, parseGRPCAnswer)
	case envLog:
		if strings.ContainsAny(v, "\r\n") {
			err = fmt.Errorf("a log line must not contain a line break")
		}
		s.hasLog, s.logLine = true, v
	case envTermMessage:
		s.hasTermMessage, s.termMessage = true, v
	case envLogEvery:
		s.logEvery, err = parseDuration(v)
		if err == nil && s.logEvery < minLogEvery {
			err = fmt.Errorf("period must be at least %s", minLogEvery)
		}
	default:
		err = fmt.Errorf("unknown fakecri variable (see fakecri/README.md)")
	}
	return err
}

// parseWrites parses `<path>=<bytes>[,<dur>:<bytes>]...[;...]`: the bytes
// the container has written under an absolute path of its own (a volume's
// mount path) since it started.
func parseWrites(v string) ([]rule, error) {
	var rules []rule
	for _, part := range strings.Split(v, ";") {
		p, tlText, ok := strings.Cut(strings.TrimSpace(part), "=")
		p = strings.TrimSpace(p)
		if !ok || !path.IsAbs(p) {
			return nil, fmt.Errorf("write %q: want <absolute path>=<bytes>[,<dur>:<bytes>]...", part)
		}
		tl, err := parseTimeline(tlText, parseBytesAnswer)
		if err != nil {
			return nil, fmt.Errorf("write %q: %w", part, err)
		}
		rules = append(rules, rule{key: path.Clean(p), tl: tl})
	}
	return rules, nil
}

// parseBytesAnswer: a size in bytes ("4Mi").
func parseBytesAnswer(v string) (answer, error) {
	n, err := parseBytes(v)
	if err != nil || n > 1<<62 {
		return answer{}, fmt.Errorf("size %q: want bytes such as 4Mi", v)
	}
	return answer{value: int(n)}, nil
}

// parseIntRange parses a decimal integer in [lo, hi].
func parseIntRange(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want an integer from %d to %d", lo, hi)
	}
	return n, nil
}

// parseStrictBool accepts exactly "true" or "false".
func parseStrictBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("want true or false")
}

// parseRules parses `rule[;rule]...` with rule = `key=timeline` (for exec
// the key is optional) and timeline = `value[,<dur>:value]...`.
func parseRules(v string, exec bool, parseAnswer func(string) (answer, error)) ([]rule, error) {
	var rules []rule
	for _, part := range strings.Split(v, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("empty rule")
		}
		var r rule
		tlText := part
		if i := strings.LastIndexByte(part, '='); i >= 0 {
			key := strings.TrimSpace(part[:i])
			tlText = part[i+1:]
			if exec {
				r.key = strings.Join(strings.Fields(key), " ")
				if r.key == "" {
					return nil, fmt.Errorf("rule %q: empty command", part)
				}
			} else {
				var err error
				if r.port, r.key, err = parseEndpointKey(key); err != nil {
					return nil, fmt.Errorf("rule %q: %w", part, err)
				}
			}
		} else if !exec {
			return nil, fmt.Errorf("rule %q: want <port>[/<path>]=<timeline>", part)
		}
		tl, err := parseTimeline(tlText, parseAnswer)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", part, err)
		}
		r.tl = tl
		for _, o := range rules {
			if o.key == r.key && o.port == r.port {
				return nil, fmt.Errorf("rule %q: duplicate key", part)
			}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// parseEndpointKey parses `<port>` or `<port>/<path or service>`; port "*"
// is any port (0).
func parseEndpointKey(key string) (port int, sub string, err error) {
	p, rest, hasSub := strings.Cut(key, "/")
	if p != "*" {
		if port, err = parseIntRange(p, 1, 65535); err != nil {
			return 0, "", fmt.Errorf("port %q: %w", p, err)
		}
	}
	if hasSub {
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return 0, "", fmt.Errorf("bad path or service %q", rest)
		}
		sub = rest
	}
	return port, sub, nil
}

// parseTimeline parses `value[,<dur>:value]...`.
func parseTimeline(v string, parseAnswer func(string) (answer, error)) (timeline, error) {
	parts := strings.Split(v, ",")
	first, err := parseAnswer(strings.TrimSpace(parts[0]))
	if err != nil {
		return nil, err
	}
	tl := timeline{{at: 0, ans: first}}
	for _, p := range parts[1:] {
		ds, as, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			return nil, fmt.Errorf("change %q: want <duration>:<value>", p)
		}
		d, err := parseDuration(strings.TrimSpace(ds))
		if err != nil {
			return nil, fmt.Errorf("change %q: %w", p, err)
		}
		if d <= tl[len(tl)-1].at {
			return nil, fmt.Errorf("change %q: times must increase", p)
		}
		a, err := parseAnswer(strings.TrimSpace(as))
		if err != nil {
			return nil, fmt.Errorf("change %q: %w", p, err)
		}
		tl = append(tl, step{at: d, ans: a})
	}
	return tl, nil
}

// parseExecAnswer: an exit code 0..255 or "hang".
func parseExecAnswer(v string) (answer, error) {
	if v == "hang" {
		return answer{kind: answerHang}, nil
	}
	n, err := parseIntRange(v, 0, 255)
	if err != nil {
		return answer{}, fmt.Errorf("exec answer %q: want an exit code 0-255 or hang", v)
	}
	return answer{value: n}, nil
}

// parseHTTPAnswer: a status 100..599 (a redirect may name its Location:
// "302>http://host/path"), "down" or "hang".
func parseHTTPAnswer(v string) (answer, error) {
	if code, loc, ok := strings.Cut(v, ">"); ok {
		a, err := parseHTTPAnswer(code)
		if err != nil || a.kind != answerValue || a.value < 300 || a.value > 399 || loc == "" {
			return answer{}, fmt.Errorf("HTTP answer %q: want <3xx status>><location>", v)
		}
		a.location = loc
		return a, nil
	}
	switch v {
	case "down":
		return answer{kind: answerDown}, nil
	case "hang":
		return answer{kind: answerHang}, nil
	}
	n, err := parseIntRange(v, 100, 599)
	if err != nil {
		return answer{}, fmt.Errorf("HTTP answer %q: want a status 100-599, down or hang", v)
	}
	return answer{value: n}, nil
}

// parseTCPAnswer: "up", "down" or "hang".
func parseTCPAnswer(v string) (answer, error) {
	switch v {
	case "up":
		return answer{}, nil
	case "down":
		return answer{kind: answerDown}, nil
	case "hang":
		return answer{kind: answerHang}, nil
	}
	return answer{}, fmt.Errorf("TCP answer %q: want up, down or hang", v)
}

// gRPC health-checking statuses (grpc.health.v1.HealthCheckResponse).
const (
	grpcUnknown        = int(healthpb.HealthCheckResponse_UNKNOWN)
	grpcServing        = int(healthpb.HealthCheckResponse_SERVING)
	grpcNotServing     = int(healthpb.HealthCheckResponse_NOT_SERVING)
	grpcServiceUnknown = int(healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
)

// parseGRPCAnswer: serving, not_serving, unknown, service_unknown, down, hang.
func parseGRPCAnswer(v string) (answer, error) {
	switch v {
	case "serving":
		return answer{value: grpcServing}, nil
	case "not_serving":
		return answer{value: grpcNotServing}, nil
	case "unknown":
		return answer{value: grpcUnknown}, nil
	case "service_unknown":
		return answer{value: grpcServiceUnknown}, nil
	case "down":
		return answer{kind: answerDown}, nil
	case "hang":
		return answer{kind: answerHang}, nil
	}
	return answer{}, fmt.Errorf("gRPC answer %q: want serving, not_serving, unknown, service_unknown, down or hang", v)
}

// findRule returns the endpoint rule for port and sub (path or service):
// exact port and sub, then the port alone, then "*" with sub, then "*".
func findRule(rules []rule, port int, sub string) (rule, bool) {
	for _, want := range [...]struct {
		port int
		sub  string
	}{{port, sub}, {port, ""}, {0, sub}, {0, ""}} {
		for _, r := range rules {
			if r.port == want.port && r.key == want.sub {
				return r, true
			}
		}
	}
	return rule{}, false
}

// findExecRule returns the exec rule for a command line, else the default.
func findExecRule(rules []rule, cmd []string) (rule, bool) {
	line := strings.Join(cmd, " ")
	for _, r := range rules {
		if r.key != "" && r.key == line {
			return r, true
		}
	}
	for _, r := range rules {
		if r.key == "" {
			return r, true
		}
	}
	return rule{}, false
}

// shape is what a plain busybox command line does.
type shape struct {
	hasExit       bool
	after         time.Duration
	code          int32
	ignoreSigterm bool
}

// plainShape recognizes `sh -c "exit N"`, `sh -c "sleep N[; exit M]"`,
// `sleep N`, `true` and `false`. A shell or sleep running as PID 1 ignores
// SIGTERM, as it does under containerd. Anything else is not a shape.
func plainShape(argv []string) (shape, bool) {
	if len(argv) == 0 {
		return shape{}, false
	}
	switch path.Base(argv[0]) {
	case "sh", "ash", "bash":
		if len(argv) == 3 && argv[1] == "-c" {
			sh, ok := shellShape(argv[2])
			sh.ignoreSigterm = true
			return sh, ok
		}
	case "sleep":
		if len(argv) == 2 {
			return sleepShape(argv[1])
		}
	case "true":
		if len(argv) == 1 {
			return shape{hasExit: true}, true
		}
	case "false":
		if len(argv) == 1 {
			return shape{hasExit: true, code: 1}, true
		}
	}
	return shape{}, false
}

// shellShape parses a tiny shell script: `exit N`, `true`, `false`,
// `sleep N`, or `sleep N; exit M` / `sleep N && exit M`.
func shellShape(src string) (shape, bool) {
	src = strings.TrimSpace(src)
	first, rest, hasRest := strings.Cut(src, ";")
	if !hasRest {
		first, rest, hasRest = strings.Cut(src, "&&")
	}
	if hasRest {
		sl, ok := shellShape(first)
		if !ok || !sl.hasExit || sl.code != 0 {
			return shape{}, false
		}
		ex, ok := shellShape(rest)
		if !ok || !ex.hasExit || ex.after != 0 {
			return shape{}, false
		}
		return shape{hasExit: true, after: sl.after, code: ex.code}, true
	}
	f := strings.Fields(src)
	switch {
	case len(f) == 1 && f[0] == "true":
		return shape{hasExit: true}, true
	case len(f) == 1 && f[0] == "false":
		return shape{hasExit: true, code: 1}, true
	case len(f) == 2 && f[0] == "exit":
		n, err := parseIntRange(f[1], 0, 255)
		if err != nil {
			return shape{}, false
		}
		return shape{hasExit: true, code: int32(n)}, true
	case len(f) == 2 && f[0] == "sleep":
		return sleepShape(f[1])
	}
	return shape{}, false
}

// sleepShape parses busybox sleep's argument: seconds with an optional
// s/m/h/d suffix, or "infinity" (runs forever).
func sleepShape(arg string) (shape, bool) {
	if arg == "infinity" {
		return shape{ignoreSigterm: true}, true
	}
	unit := uint64(time.Second)
	switch {
	case strings.HasSuffix(arg, "s"):
		arg = strings.TrimSuffix(arg, "s")
	case strings.HasSuffix(arg, "m"):
		arg, unit = strings.TrimSuffix(arg, "m"), uint64(time.Minute)
	case strings.HasSuffix(arg, "h"):
		arg, unit = strings.TrimSuffix(arg, "h"), uint64(time.Hour)
	case strings.HasSuffix(arg, "d"):
		arg, unit = strings.TrimSuffix(arg, "d"), uint64(24*time.Hour)
	}
	ns, err := parseDecimal(arg, unit)
	if err != nil {
		return shape{}, false
	}
	return shape{hasExit: true, after: time.Duration(ns), ignoreSigterm: true}, true
}
