package runtimesync

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/images"
	"github.com/lockstep-dev/lockstep/node/lifecycle"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// TestPlanTranscripts runs the transcripts of testdata/plan: each file
// declares a pod and the runtime's view of it, then syncs it and prints
// every step of the plan (events, observed starts, calls and their
// outcomes) and its result. Outcomes are scripted (see planEnv.outcome);
// unscripted calls succeed. Regenerate with -rewrite after a deliberate
// change, and read the diff.
//
// Commands:
//
//	pod [terminal]                  input: the pod's spec (YAML)
//	runtime                         input: "sandbox ID STATE k=v…" and
//	                                "container ID NAME STATE k=v…" lines
//	advance D                       moves the clock on by duration D
//	sync [unhealthy=(IDs)] [unstarted=(IDs)] [probe-grace=N]
//	                                input: scripted outcomes, one a line
func TestPlanTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/plan", func(t *testing.T, path string) {
		env := &planEnv{now: now, backoff: backoff.NewRestarts(backoff.Config{})}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := env.run(d)
			if err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			return out
		})
	})
}

// planEnv is the state of one transcript: the pod, the runtime's view,
// the clock and the crash-loop back-off, which carry over between syncs.
type planEnv struct {
	pod      *corev1.Pod
	terminal bool
	status   *podstate.PodStatus
	now      time.Time
	backoff  *backoff.Restarts
}

func (env *planEnv) run(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "pod":
		var spec corev1.PodSpec
		if err := yaml.UnmarshalStrict([]byte(d.Input), &spec); err != nil {
			return "", fmt.Errorf("pod spec: %w", err)
		}
		env.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}, Spec: spec}
		env.terminal = d.HasArg("terminal")
		return "", nil
	case "runtime":
		st, err := env.parseRuntime(d.Input)
		env.status = st
		return "", err
	case "advance":
		if len(d.CmdArgs) != 1 {
			return "", errors.New("advance takes one duration")
		}
		by, err := time.ParseDuration(d.CmdArgs[0].Key)
		env.now = env.now.Add(by)
		return "", err
	case "sync":
		return env.sync(d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// sync plans one sync and steps it to its end with the scripted
// outcomes.
func (env *planEnv) sync(d *datadriven.TestData) (string, error) {
	if env.pod == nil {
		return "", errors.New("sync before pod")
	}
	in := Inputs{Pod: env.pod, Status: env.status, Terminal: env.terminal, Now: env.now, Backoff: env.backoff, Hash: hash}
	if env.status == nil {
		in.Status = &podstate.PodStatus{UID: env.pod.UID}
	}
	var unhealthy, unstarted []string
	var probeGrace *int64
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "unhealthy":
			unhealthy = a.Vals
		case "unstarted":
			unstarted = a.Vals
		case "probe-grace":
			if len(a.Vals) != 1 {
				return "", errors.New("probe-grace takes one value")
			}
			g, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				return "", err
			}
			probeGrace = &g
		default:
			return "", fmt.Errorf("sync: unknown argument %q", a.Key)
		}
	}
	in.Unhealthy = func(id string) (ProbeKill, bool) {
		if !slices.Contains(unhealthy, id) {
			return ProbeKill{}, false
		}
		return ProbeKill{Probe: "liveness", Grace: probeGrace}, true
	}
	in.Started = func(id string) bool { return !slices.Contains(unstarted, id) }
	script, err := parseOutcomes(d.Input)
	if err != nil {
		return "", err
	}

	var b strings.Builder
	p := NewPlan(in)
	for {
		step := p.Next()
		for _, e := range step.Events {
			on := "pod"
			if e.Container != "" {
				on = e.Container
			}
			fmt.Fprintf(&b, "event %s %s %s: %s\n", on, e.Type, e.Reason, e.Message)
		}
		for _, o := range step.Observe {
			fmt.Fprintf(&b, "observe start init=%v code=%q\n", o.Init, o.Code)
		}
		if step.Op == nil {
			break
		}
		o := script.take(step.Op)
		fmt.Fprintf(&b, "call %s\n  -> %s\n", step.Op, describeOutcome(o))
		p.Report(o)
	}
	if len(script) > 0 {
		return "", fmt.Errorf("outcomes never used: %v", script)
	}
	res, err := p.Result()
	writeResult(&b, res, err)
	return b.String(), nil
}

// writeResult prints what a sync ended with: the sandbox, the containers
// started, why the others wait, when to retry, the error.
func writeResult(b *strings.Builder, res Result, err error) {
	fmt.Fprintf(b, "result sandbox=%q", res.SandboxID)
	if res.Actions.InitFailed {
		b.WriteString(" init-failed")
	}
	if res.Actions.RetryAfter > 0 {
		fmt.Fprintf(b, " retry-after=%v", res.Actions.RetryAfter)
	}
	b.WriteString("\n")
	for _, s := range res.Started {
		fmt.Fprintf(b, "  started %s %s\n", s.Name, s.ID)
	}
	names := make([]string, 0, len(res.Waiting))
	for n := range res.Waiting {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w := res.Waiting[n]
		fmt.Fprintf(b, "  waiting %s %s", n, w.Reason)
		if w.Message != "" {
			fmt.Fprintf(b, ": %s", w.Message)
		}
		b.WriteString("\n")
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(b, "  error: %s\n", line)
		}
	}
}

// scripted is an outcome for the first call of a kind (and container).
type scripted struct {
	kind, container string
	outcome         Outcome
}

type outcomes []scripted

// parseOutcomes reads lines "KIND [CONTAINER] RESULT", KIND an op's name
// (RunPodSandbox, EnsureImage…), CONTAINER a container name for the ops
// of one container, and RESULT one of
//
//	fail: MESSAGE            the call fails with MESSAGE (a gRPC status
//	                         error when it reads "rpc error: code = C
//	                         desc = D")
//	config: MESSAGE          ContainerConfig fails with the kubelet's
//	                         MESSAGE (a podspec.ConfigError) in context;
//	                         SandboxConfig with MESSAGE the cause of a
//	                         podspec.SandboxConfigError
//	image REASON MESSAGE     EnsureImage fails with the image manager's
//	                         REASON (ErrImagePull, ImagePullBackOff…)
//	hook MESSAGE             PostStart: the hook fails with MESSAGE
//	cut                      PostStart: the sync was called off
//	ip IP                    SandboxStatus reads IP
func parseOutcomes(input string) (outcomes, error) {
	var out outcomes
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		s := scripted{kind: f[0]}
		rest := f[1:]
		for i := range min(len(rest), 2) {
			rest[i] = strings.TrimSuffix(rest[i], ":")
		}
		if len(rest) > 0 && !isResult(rest[0]) {
			s.container, rest = rest[0], rest[1:]
		}
		if len(rest) == 0 {
			return nil, fmt.Errorf("outcome %q: no result", line)
		}
		msg := strings.Join(rest[1:], " ")
		switch rest[0] {
		case "fail":
			s.outcome.Err = scriptedError(msg)
		case "config":
			if s.kind == "SandboxConfig" {
				s.outcome.Err = &podspec.SandboxConfigError{Pod: "ns/web", Cause: errors.New(msg)}
				break
			}
			s.outcome.Err = fmt.Errorf("container %q of pod ns/web: env \"X\": %w", s.container, &podspec.ConfigError{Message: msg})
		case "image":
			if len(rest) < 2 {
				return nil, fmt.Errorf("outcome %q: image REASON MESSAGE", line)
			}
			msg = strings.Join(rest[2:], " ")
			s.outcome.Err = &images.Error{Reason: rest[1], Message: msg}
		case "hook":
			s.outcome.Err, s.outcome.Message = errors.New("hook failed"), msg
		case "cut":
			s.outcome.Err, s.outcome.Canceled = errors.New("hook cut"), errors.New("context canceled")
		case "ip":
			s.outcome.IP = msg
		}
		out = append(out, s)
	}
	return out, nil
}

// scriptedError is a gRPC status error for a message in its form ("rpc
// error: code = Unknown desc = …"), as a CRI call returns, else a plain
// one.
func scriptedError(msg string) error {
	rest, ok := strings.CutPrefix(msg, "rpc error: code = ")
	name, desc, ok2 := strings.Cut(rest, " desc = ")
	if !ok || !ok2 {
		return errors.New(msg)
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == name {
			return status.Error(c, desc)
		}
	}
	return errors.New(msg)
}

func isResult(word string) bool {
	return slices.Contains([]string{"fail", "config", "image", "hook", "cut", "ip"}, word)
}

// take returns (and uses up) the scripted outcome of op, else success:
// a new sandbox is "sandbox-<attempt>" with IP 10.0.0.2, a new container
// "<name>-<attempt>".
func (s *outcomes) take(op Op) Outcome {
	kind, container := opKind(op)
	for i, o := range *s {
		if o.kind == kind && (o.container == "" || o.container == container) {
			*s = slices.Delete(*s, i, i+1)
			return o.outcome
		}
	}
	switch op := op.(type) {
	case RunPodSandboxOp:
		return Outcome{ID: fmt.Sprintf("sandbox-%d", op.Attempt)}
	case SandboxStatusOp:
		return Outcome{IP: "10.0.0.2"}
	case CreateContainerOp:
		return Outcome{ID: fmt.Sprintf("%s-%d", op.Container.Name, op.Container.RestartCount)}
	}
	return Outcome{}
}

// opKind is an op's name without "Op" and the container it is for.
func opKind(op Op) (kind, container string) {
	kind = strings.TrimSuffix(fmt.Sprintf("%T", op), "Op")
	kind = kind[strings.LastIndex(kind, ".")+1:]
	switch op := op.(type) {
	case KillContainerOp:
		container = op.Name
	case RemoveContainerOp:
		container = op.Name
	case EnsureImageOp:
		container = op.Container.Name
	case ContainerConfigOp:
		container = op.Container.Name
	case CreateContainerOp:
		container = op.Container.Name
	case StartContainerOp:
		container = op.Container.Name
	case PostStartOp:
		container = op.Container.Name
	}
	return kind, container
}

func describeOutcome(o Outcome) string {
	var parts []string
	if o.Err != nil {
		parts = append(parts, "error: "+o.Err.Error())
	} else {
		parts = append(parts, "ok")
	}
	if o.ID != "" {
		parts = append(parts, "id="+o.ID)
	}
	if o.IP != "" {
		parts = append(parts, "ip="+o.IP)
	}
	if o.Message != "" {
		parts = append(parts, fmt.Sprintf("message=%q", o.Message))
	}
	if o.Canceled != nil {
		parts = append(parts, "canceled")
	}
	return strings.Join(parts, " ")
}

// parseRuntime reads the runtime's view, one object a line:
//
//	sandbox ID ready|notready [attempt=N] [ip=IP] [hostnet] [age=D]
//	container ID NAME created|running|exited|unknown [attempt=N]
//	    [exit=N] [finished=D] [ran=D] [sandbox=ID] [image=I] [age=D]
//
// D is how long ago; a container's image (default its spec's, busybox for an ephemeral one) is what its
// hash was made from; a sandbox is an hour old unless age says otherwise,
// a container an hour less its attempt in seconds (so later attempts are
// newer); a container ran 2 s until it finished (finished, default now).
func (env *planEnv) parseRuntime(input string) (*podstate.PodStatus, error) {
	st := &podstate.PodStatus{UID: "uid-1", Name: "web", Namespace: "ns"}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var err error
		switch {
		case f[0] == "sandbox" && len(f) >= 3:
			var sb podstate.Sandbox
			sb, err = env.parseSandbox(f[1], f[2], f[3:])
			st.Sandboxes = append(st.Sandboxes, sb)
		case f[0] == "container" && len(f) >= 4:
			var c podstate.Container
			c, err = env.parseContainer(f[1], f[2], f[3], f[4:])
			st.Containers = append(st.Containers, c)
		default:
			err = errors.New("want sandbox ID STATE … or container ID NAME STATE …")
		}
		if err != nil {
			return nil, fmt.Errorf("runtime line %q: %w", line, err)
		}
	}
	st.Sort()
	return st, nil
}

func (env *planEnv) parseSandbox(id, state string, attrs []string) (podstate.Sandbox, error) {
	sb := podstate.Sandbox{ID: id, CreatedAt: env.now.Add(-time.Hour)}
	switch state {
	case "ready":
		sb.State = podstate.SandboxReady
	case "notready":
		sb.State = podstate.SandboxNotReady
	default:
		return sb, fmt.Errorf("sandbox state %q", state)
	}
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "attempt":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			sb.Attempt = uint32(n)
		case "ip":
			sb.IP = v
		case "hostnet":
			sb.HostNetwork = true
		case "age":
			var ago time.Duration
			ago, err = time.ParseDuration(v)
			sb.CreatedAt = env.now.Add(-ago)
		default:
			err = fmt.Errorf("unknown sandbox attribute %q", k)
		}
		if err != nil {
			return sb, err
		}
	}
	return sb, nil
}

func (env *planEnv) parseContainer(id, name, state string, attrs []string) (podstate.Container, error) {
	c := podstate.Container{ID: id, Name: name, State: podstate.ContainerState(strings.ToUpper(state[:1]) + state[1:])}
	if !slices.Contains([]podstate.ContainerState{podstate.ContainerCreated, podstate.ContainerRunning, podstate.ContainerExited, podstate.ContainerUnknown}, c.State) {
		return c, fmt.Errorf("container state %q", state)
	}
	image := "busybox"
	if spec := lifecycle.ContainerOf(env.pod, name); spec != nil {
		image = spec.Image
	}
	var age, finished, ran *time.Duration
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		var err error
		d := func() *time.Duration { x, perr := time.ParseDuration(v); err = perr; return &x }
		switch k {
		case "attempt":
			c.RestartCount, err = strconv.Atoi(v)
		case "exit":
			var n int64
			n, err = strconv.ParseInt(v, 10, 32)
			c.ExitCode = int32(n)
		case "finished":
			finished = d()
		case "ran":
			ran = d()
		case "age":
			age = d()
		case "sandbox":
			c.SandboxID = v
		case "image":
			image = v
		default:
			err = fmt.Errorf("unknown container attribute %q", k)
		}
		if err != nil {
			return c, err
		}
	}
	c.Hash = "h-" + image
	c.CreatedAt = env.now.Add(-time.Hour + time.Duration(c.RestartCount)*time.Second)
	if age != nil {
		c.CreatedAt = env.now.Add(-*age)
	}
	if c.State != podstate.ContainerCreated {
		end := env.now
		if finished != nil {
			end = env.now.Add(-*finished)
		}
		length := 2 * time.Second
		if ran != nil {
			length = *ran
		}
		c.StartedAt = end.Add(-length)
		if c.State == podstate.ContainerExited {
			c.FinishedAt = end
		}
	}
	return c, nil
}
