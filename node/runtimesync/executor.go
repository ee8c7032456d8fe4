package runtimesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/images"
	"github.com/lockstep-dev/lockstep/node/lifecycle"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/servicecache"
	"github.com/lockstep-dev/lockstep/node/userns"
)

// MinStopTimeout is the least time a container gets between SIGTERM and
// SIGKILL, whatever the grace period (as the kubelet does).
const MinStopTimeout = 2

// Config configures an Executor.
type Config struct {
	// Node is what the node contributes to sandbox and container configs.
	Node podspec.NodeInfo
	// RuntimeHandler is the CRI runtime handler for new sandboxes.
	RuntimeHandler string
	// CrashBackoff tunes the crash-loop back-off curve.
	CrashBackoff backoff.Config
	// Images tunes image pulls: their parallelism and back-off.
	Images images.Config
	// GC is the dead container policy; nil means DefaultGCPolicy().
	GC *GCPolicy
	// CgroupParent, when set, names the pod cgroup a pod's sandbox goes
	// under (node/cm/cgroups); nil leaves sandboxes where the runtime likes.
	CgroupParent func(pod *corev1.Pod) string
	// Resized, when set, reports the pods a resize was accepted for:
	// only their running containers are compared with the resources
	// their allocation gives them (and restarted when a resizePolicy
	// says so); nil: none.
	Resized func(uid types.UID) bool
	// ContainerCPUSet, when set, names the CPUs and memory nodes a new
	// container of a pod runs on (node/cm/cpumanager, node/cm/memorymanager;
	// "" leaves either to the runtime).
	ContainerCPUSet func(pod *corev1.Pod, container string) (cpus, mems string)
	// Observer, when set, is told about every sandbox and container start
	// attempt (for metrics); nil observes nothing. It must not block.
	Observer Observer
	// SandboxReady, when set, is called once a new sandbox of pod runs
	// and its network is read, before any of its images is pulled: the
	// kubelet sets PodReadyToStartContainers True then
	// (OnPodSandboxReady), not at the next sync.
	SandboxReady func(pod *corev1.Pod)
}

// Observer watches what the executor starts, from the syncing task.
type Observer interface {
	// ObservePodSandboxStart reports a RunPodSandbox attempt and its
	// error, nil when the sandbox was created (the kubelet counts pods
	// started as sandbox creations attempted, and their failures).
	ObservePodSandboxStart(err error)
	// ObserveContainerStart reports an attempt to start a container (one
	// not held back by its crash back-off): init says whether it is an
	// init container (sidecars included); code is "" when it started, else
	// the waiting reason that stopped it (ErrImagePull, ImagePullBackOff,
	// ErrImageNeverPull, CreateContainerConfigError, CreateContainerError,
	// RunContainerError, PostStartHookError).
	ObserveContainerStart(init bool, code string)
}

// Executor carries out a pod's actions through CRI.
type Executor struct {
	d      deps.Core
	ports  Ports
	cfg    Config
	crash  *backoff.Restarts
	images *images.Manager
	hooks  *lifecycle.Runner

	// preStopped holds, by pod UID, the container instances whose preStop
	// hook has run to its end or its grace period: a retried kill of the
	// pod (after a failed stop) does not run it again.
	mu         sync.Mutex
	preStopped map[string]map[string]bool
	// reasons holds, by pod UID, why each container was last left
	// waiting by a sync (the kubelet's reason cache): a container's entry
	// is set when a sync leaves it waiting and dropped when one starts it.
	reasons map[string]map[string]Waiting

	// Last good answers of the apiserver, by namespace/name.
	configMaps lastGood[*corev1.ConfigMap]
	secrets    lastGood[*corev1.Secret]
}

// NewExecutor returns an executor acting through ports.
func NewExecutor(d deps.Core, ports Ports, cfg Config) *Executor {
	return &Executor{
		d: d, ports: ports, cfg: cfg,
		crash:  backoff.NewRestarts(cfg.CrashBackoff),
		images: images.New(d, images.Ports{Images: ports.Images, Secrets: ports.Secrets, Events: ports.Events}, cfg.Images),
		hooks:  lifecycle.New(d, ports.Runtime, ports.ProbeNet),

		preStopped: map[string]map[string]bool{},
		reasons:    map[string]map[string]Waiting{},
	}
}

// PodLogger returns d.Log with the pod's namespace/name and UID.
func PodLogger(l *slog.Logger, pod *corev1.Pod) *slog.Logger {
	return l.With("pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID))
}

// Execute carries out the sync of pod (NewPlan): it makes the plan's
// calls in turn, records its events and observations, and reports each
// call's outcome back. Unhealthy reports containers whose liveness or
// startup probe failed (nil: none); started reports whether a running
// instance has passed its startup probe (nil: running means started).
func (e *Executor) Execute(ctx context.Context, pod *corev1.Pod, st *podstate.PodStatus, terminal bool,
	unhealthy func(string) (ProbeKill, bool), started func(string) bool) (Result, error) {
	plan := NewPlan(Inputs{
		Pod: pod, Status: st, Terminal: terminal, Now: e.d.Clock.Now(),
		Backoff: e.crash, Hash: podspec.ContainerHash, Unhealthy: unhealthy, Started: started, Node: e.cfg.Node,
		Resizing: e.cfg.Resized != nil && e.cfg.Resized(pod.UID),
	})
	r := &run{e: e, pod: pod, st: st, log: PodLogger(e.d.Log, pod)}
	for {
		step := plan.Next()
		for _, ev := range step.Events {
			e.event(pod, ev.Container, ev.Type, ev.Reason, ev.Message)
		}
		if obs := e.cfg.Observer; obs != nil {
			for _, o := range step.Observe {
				obs.ObserveContainerStart(o.Init, o.Code)
			}
		}
		if step.Op == nil {
			res, err := plan.Result()
			e.recordReasons(string(pod.UID), res)
			return res, err
		}
		if err := ctx.Err(); err != nil {
			// The sync was cancelled (a kill took over): make no further
			// call, as a gRPC call on a cancelled context never reaches the
			// runtime.
			res, _ := plan.Result()
			return res, fmt.Errorf("sync of pod %s/%s stopped before %T: %w", pod.Namespace, pod.Name, step.Op, err)
		}
		plan.Report(r.do(ctx, step.Op))
	}
}

// run is one sync being carried out: the pod, its runtime view, and the
// configs built for the calls that follow.
type run struct {
	e       *Executor
	pod     *corev1.Pod
	st      *podstate.PodStatus
	log     *slog.Logger
	sandbox *runtimeapi.PodSandboxConfig
	config  *runtimeapi.ContainerConfig
}

// do makes one call of a plan and returns its outcome.
func (r *run) do(ctx context.Context, op Op) Outcome {
	e, pod := r.e, r.pod
	switch op := op.(type) {
	case KillPodOp:
		return Outcome{Err: e.KillPod(ctx, pod, r.st, op.Grace)}
	case KillContainerOp:
		r.log.Info("killing container", "container", op.Name, "id", op.ID, "reason", op.Reason)
		victim := podstate.Container{ID: op.ID, Name: op.Name, State: podstate.ContainerRunning}
		return Outcome{Err: e.killContainer(ctx, pod, victim, op.PodIP, op.Grace, nil)}
	case RemoveContainerOp:
		return Outcome{Err: e.removeContainer(ctx, podspec.RefOf(pod), podstate.Container{ID: op.ID, Name: op.Name, RestartCount: op.RestartCount})}
	case SandboxConfigOp:
		var err error
		r.sandbox, err = podspec.SandboxConfig(pod, op.Attempt, e.cfg.Node, e.cgroupParent(pod))
		return Outcome{Err: err}
	case LogDirectoryOp:
		return Outcome{Err: e.mkdir(op.Path)}
	case RunPodSandboxOp:
		r.log.Info("creating sandbox", "attempt", op.Attempt, "reason", op.Reason)
		if earlySandboxReady && e.cfg.SandboxReady != nil {
			e.cfg.SandboxReady(pod)
		}
		id, err := e.runPodSandbox(ctx, pod, r.sandbox)
		return Outcome{ID: id, Err: err}
	case SandboxStatusOp:
		st, err := e.ports.Runtime.PodSandboxStatus(ctx, op.ID, false)
		if err == nil && e.cfg.SandboxReady != nil && !earlySandboxReady {
			e.cfg.SandboxReady(pod)
		}
		return Outcome{IP: st.GetStatus().GetNetwork().GetIp(), Err: err}
	case UserNamespaceOp:
		return Outcome{Err: e.userNamespace(ctx, pod, r.sandbox, "", false)}
	case EnsureImageOp:
		_, err := e.images.EnsureImage(ctx, pod, containerSpec(pod, op.Container), r.sandbox)
		return Outcome{Err: err}
	case ContainerConfigOp:
		var err error
		r.config, err = e.fullContainerConfig(ctx, pod, op, r.sandbox)
		return Outcome{Err: err}
	case CreateContainerOp:
		return r.createContainer(ctx, op)
	case StartContainerOp:
		err := e.ports.Runtime.StartContainer(ctx, op.ID)
		if err == nil {
			r.log.Info("started container", "container", op.Container.Name, "id", op.ID, "restartCount", op.Container.RestartCount)
		}
		return Outcome{Err: err}
	case PostStartOp:
		return r.postStart(ctx, op)
	}
	panic(fmt.Sprintf("runtimesync: unknown op %T", op))
}

// createContainer creates a container instance and links its log.
func (r *run) createContainer(ctx context.Context, op CreateContainerOp) Outcome {
	id, err := r.e.ports.Runtime.CreateContainer(ctx, op.SandboxID, r.config, r.sandbox)
	if err == nil {
		r.e.linkLog(podspec.RefOf(r.pod), op.Container.Name, id, op.Container.RestartCount)
	}
	return Outcome{ID: id, Err: err}
}

// postStart runs a container's postStart hook.
func (r *run) postStart(ctx context.Context, op PostStartOp) Outcome {
	c := containerSpec(r.pod, op.Container)
	msg, err := r.e.hooks.Run(ctx, lifecycle.PostStart(c), lifecycle.Target{Pod: r.pod, Container: c, ContainerID: op.ID, PodIP: op.PodIP})
	if err != nil {
		r.log.Warn("postStart hook failed", "container", c.Name, "id", op.ID, "err", err)
	}
	return Outcome{Err: err, Message: msg, Canceled: ctx.Err()}
}

// runPodSandbox resolves the pod's runtime handler and user namespace and
// runs its sandbox, telling the Observer.
func (e *Executor) runPodSandbox(ctx context.Context, pod *corev1.Pod, sb *runtimeapi.PodSandboxConfig) (string, error) {
	var id string
	handler, err := e.runtimeHandler(ctx, pod)
	if err == nil {
		if err = e.userNamespace(ctx, pod, sb, handler, true); err == nil {
			id, err = e.ports.Runtime.RunPodSandbox(ctx, sb, handler)
		}
	}
	if obs := e.cfg.Observer; obs != nil {
		obs.ObservePodSandboxStart(err)
	}
	return id, err
}

// mkdir creates a directory (nothing without a Files port).
func (e *Executor) mkdir(path string) error {
	if e.ports.Files == nil {
		return nil
	}
	return e.ports.Files.MkdirAll(path)
}

// fullContainerConfig builds the config of the container op starts: its
// own (containerConfig), the process namespace it targets, the sandbox's
// user namespace, its subPath directories and hosts file, its cpuset.
func (e *Executor) fullContainerConfig(ctx context.Context, pod *corev1.Pod, op ContainerConfigOp, sb *runtimeapi.PodSandboxConfig) (*runtimeapi.ContainerConfig, error) {
	cfg, err := e.containerConfig(ctx, pod, containerSpec(pod, op.Container), op.Container.RestartCount, op.PodIPs)
	if err != nil {
		return nil, err
	}
	if err := e.applyRecursiveReadOnly(ctx, pod, containerSpec(pod, op.Container), cfg); err != nil {
		return nil, err
	}
	joinTarget(cfg, op.TargetID)
	if podspec.WantsUserNamespace(pod) {
		podspec.SetUserNamespace(nil, cfg, sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
	}
	if err := e.prepareMounts(pod, op.PodIPs, cfg); err != nil {
		return nil, err
	}
	e.pinCPUs(pod, cfg)
	return cfg, nil
}

// containerConfig builds the config of a new instance of c, with the user
// its image runs as (from ImageStatus, as the kubelet reads it).
func (e *Executor) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, restartCount int, podIPs []string) (*runtimeapi.ContainerConfig, error) {
	st, err := e.ports.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
	if err != nil {
		return nil, fmt.Errorf("container %q of pod %s/%s: status of image %q: %w", c.Name, pod.Namespace, pod.Name, c.Image, err)
	}
	var user podspec.ImageUser
	if img := st.GetImage(); img != nil {
		if img.GetUid() != nil {
			uid := img.GetUid().GetValue()
			user.UID = &uid
		}
		user.Username = img.GetUsername()
	}
	// The runtime is given the image's ID, as the kubelet does (its
	// EnsureImageExists returns ImageStatus's Id): the instance runs the
	// image that was checked, even if the tag moves before it is created.
	opts := podspec.ContainerOptions{RestartCount: restartCount, PodIPs: podIPs, ImageUser: user,
		ImageRef: st.GetImage().GetId(), TerminationLog: e.terminationLog(pod, c, restartCount)}
	if opts.ConfigMaps, opts.Secrets, err = e.envObjects(ctx, pod, c); err != nil {
		return nil, fmt.Errorf("container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	}
	opts.EnvFiles = e.envFiles(pod, c)
	if opts.ServiceEnv, err = e.serviceEnv(ctx, pod); err != nil {
		return nil, fmt.Errorf("container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	}
	cfg, err := podspec.ContainerConfigWith(pod, c, opts, e.cfg.Node)
	if err != nil || e.ports.Devices == nil {
		return cfg, err
	}
	devs, err := e.ports.Devices.Allocate(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	podspec.AddDevices(cfg, devs)
	return cfg, nil
}

// envObjects reads the configMaps and secrets c's environment names from
// the pod's namespace: from the watched cache (Ports.Objects) when its
// watch has reported, else with a GET. One that does not exist is left
// out of the maps (podspec decides whether that is an error); when the
// apiserver cannot be read the last object read is used, and without one
// it is an error, as is a reference with no apiserver to read it from.
func (e *Executor) envObjects(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (map[string]*corev1.ConfigMap, map[string]*corev1.Secret, error) {
	cmNames, secretNames := podspec.EnvSources(c)
	cms, secrets := map[string]*corev1.ConfigMap{}, map[string]*corev1.Secret{}
	for _, name := range cmNames {
		cm, err := e.envConfigMap(ctx, pod.Namespace, name)
		if err != nil {
			return nil, nil, err
		}
		if cm != nil {
			cms[name] = cm
		}
	}
	for _, name := range secretNames {
		sec, err := e.envSecret(ctx, pod.Namespace, name)
		if err != nil {
			return nil, nil, err
		}
		if sec != nil {
			secrets[name] = sec
		}
	}
	return cms, secrets, nil
}

// envConfigMap reads one configMap of an environment (nil, nil: it does
// not exist).
func (e *Executor) envConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if e.ports.Objects != nil {
		if cm, ok := e.ports.Objects.WaitConfigMap(ctx, namespace, name); ok {
			return cm, nil
		}
	}
	if e.ports.ConfigMaps == nil {
		return nil, fmt.Errorf("configmap %s/%s: no apiserver to read it from", namespace, name)
	}
	cm, err := e.configMaps.through(namespace+"/"+name, apierrors.IsNotFound, func() (*corev1.ConfigMap, error) {
		return e.ports.ConfigMaps.GetConfigMap(ctx, namespace, name)
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// envSecret reads one secret of an environment (nil, nil: it does not
// exist).
func (e *Executor) envSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if e.ports.Objects != nil {
		if sec, ok := e.ports.Objects.WaitSecret(ctx, namespace, name); ok {
			return sec, nil
		}
	}
	if e.ports.Secrets == nil {
		return nil, fmt.Errorf("secret %s/%s: no apiserver to read it from", namespace, name)
	}
	sec, err := e.secrets.through(namespace+"/"+name, apierrors.IsNotFound, func() (*corev1.Secret, error) {
		return e.ports.Secrets.GetSecret(ctx, namespace, name)
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sec, err
}

// serviceEnv returns the pod's service environment variables from the
// services of the master namespace and, with service links, of the pod's
// own, as the watched cache holds them (no request). Without an apiserver
// there are none. Before the services were listed once (waiting up to
// servicecache.SyncWait for that), a static pod starts with what the
// cache has (it may be the apiserver itself) and any other pod fails, as
// upstream does.
func (e *Executor) serviceEnv(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	cache := e.ports.Services
	if cache == nil {
		return nil, nil
	}
	if !podutil.IsStaticPod(pod) && !cache.WaitSynced(ctx) {
		return nil, servicecache.ErrNotSynced
	}
	links := podspec.ServiceLinksEnabled(pod)
	namespaces := []string{podspec.MasterServiceNamespace}
	if links && pod.Namespace != podspec.MasterServiceNamespace {
		namespaces = append(namespaces, pod.Namespace)
	}
	return podspec.ServiceEnv(pod.Namespace, links, cache.Services(namespaces...)), nil
}

// userNamespace gives a hostUsers: false pod's sandbox config its user
// namespace (nothing for other pods). Before a new sandbox (check), it
// first checks, as upstream, that the runtime handler supports user
// namespaces according to the runtime's Status.
func (e *Executor) userNamespace(ctx context.Context, pod *corev1.Pod, sb *runtimeapi.PodSandboxConfig, handler string, check bool) error {
	if !podspec.WantsUserNamespace(pod) {
		return nil
	}
	if check {
		st, err := e.ports.Runtime.Status(ctx, false)
		if err != nil {
			return fmt.Errorf("user namespace of pod %s/%s: runtime status: %w", pod.Namespace, pod.Name, err)
		}
		if err := userns.HandlerSupport(st, handler); err != nil {
			return err
		}
	}
	if e.ports.UserNamespaces == nil {
		return fmt.Errorf("user namespace of pod %s/%s: user namespaces are not set up on this node", pod.Namespace, pod.Name)
	}
	ns, err := e.ports.UserNamespaces.Allocate(pod.UID)
	if err != nil {
		return fmt.Errorf("user namespace of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	podspec.SetUserNamespace(sb, nil, ns)
	return nil
}

// runtimeHandler resolves the pod's runtimeClassName to the CRI handler
// its sandbox runs under (Config.RuntimeHandler when it names none).
func (e *Executor) runtimeHandler(ctx context.Context, pod *corev1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return e.cfg.RuntimeHandler, nil
	}
	if e.ports.RuntimeClasses == nil {
		return "", fmt.Errorf("runtimeClass %q: no apiserver to read it from", *name)
	}
	rc, err := e.ports.RuntimeClasses.GetRuntimeClass(ctx, *name)
	if err != nil {
		return "", fmt.Errorf("runtimeClass %q: %w", *name, err)
	}
	return rc.Handler, nil
}

// containerSpec is the spec of the container s starts (nil if the pod no
// longer has it at that index); an ephemeral container's common part.
func containerSpec(pod *corev1.Pod, s ContainerStart) *corev1.Container {
	if s.Ephemeral {
		list := pod.Spec.EphemeralContainers
		if s.Index < 0 || s.Index >= len(list) || list[s.Index].Name != s.Name {
			return nil
		}
		c := corev1.Container(list[s.Index].EphemeralContainerCommon)
		return &c
	}
	list := pod.Spec.Containers
	if s.Init {
		list = pod.Spec.InitContainers
	}
	if s.Index < 0 || s.Index >= len(list) || list[s.Index].Name != s.Name {
		return nil
	}
	return &list[s.Index]
}

// KillPod stops every container of the pod in parallel, each with the
// grace period (at least MinStopTimeout), except that sidecars stop after
// the other containers, in reverse spec order, with what is left of the
// grace (stopOrder); then it stops the pod's ready sandboxes.
// pod may be nil for an orphan the agent no longer knows.
func (e *Executor) KillPod(ctx context.Context, pod *corev1.Pod, st *podstate.PodStatus, grace int64) error {
	name := string(st.UID)
	if pod != nil {
		name = pod.Namespace + "/" + pod.Name
	}
	var toStop []podstate.Container
	for _, c := range st.Containers {
		if c.State == podstate.ContainerRunning || c.State == podstate.ContainerCreated || c.State == podstate.ContainerUnknown {
			toStop = append(toStop, c)
		}
	}
	results := deps.NewInbox[error](e.d.Tasks, "kill "+name)
	names := make([]string, 0, len(toStop))
	for _, c := range toStop {
		names = append(names, c.Name)
	}
	order := newStopOrder(e.d.Tasks, pod, names)
	for _, c := range toStop {
		if pod != nil {
			e.event(pod, c.Name, corev1.EventTypeNormal, "Killing", "Stopping container "+c.Name)
		}
		e.d.Tasks.Go("stop "+name+"/"+c.Name, func() {
			defer order.stopped(c.Name)
			err := e.killContainer(ctx, pod, c, sandboxIP(st, c.SandboxID), grace, func(left int64) int64 {
				// Sidecars stop after the app, in reverse order, once their
				// preStop hooks have run (as upstream); the stop gets what
				// is left of the grace.
				return left - int64(order.waitTurn(ctx, e.d.Clock, c.Name, time.Duration(left)*time.Second)/time.Second)
			})
			if err != nil {
				err = fmt.Errorf("stop container %q (%s) of pod %s: %w", c.Name, c.ID, name, err)
			}
			results.Put(err)
		})
	}
	var errs []error
	for range toStop {
		err, werr := results.Get(ctx)
		if werr != nil {
			return fmt.Errorf("kill pod %s: %w", name, werr)
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, sb := range st.Sandboxes {
		if sb.State != podstate.SandboxReady {
			continue
		}
		if err := e.ports.Runtime.StopPodSandbox(ctx, sb.ID); err != nil && !isNotFound(err) {
			return fmt.Errorf("stop sandbox %s of pod %s: %w", sb.ID, name, err)
		}
	}
	return nil
}

// killContainer stops instance c of pod within grace seconds: its preStop
// hook first, if it has one, the pod is known and the grace period is not
// zero (whatever state the instance is in, as upstream: the runtime's view
// may lag); then StopContainer with what is left of the grace period (at
// least MinStopTimeout). A hook that outlives the grace period is
// abandoned. A hook runs once per instance: a retried kill goes straight
// to the stop.
func (e *Executor) killContainer(ctx context.Context, pod *corev1.Pod, c podstate.Container, podIP string, grace int64, turn func(left int64) int64) error {
	h := lifecycle.PreStop(pod, c.Name)
	if h != nil && grace > 0 && !e.preStopRan(pod, c.ID) {
		log := PodLogger(e.d.Log, pod).With("container", c.Name, "id", c.ID)
		log.Info("running preStop hook", "grace", grace)
		t := lifecycle.Target{Pod: pod, Container: lifecycle.ContainerOf(pod, c.Name), ContainerID: c.ID, PodIP: podIP}
		r := e.hooks.RunPreStop(ctx, pod.Namespace+"/"+pod.Name+"/"+c.Name, h, t, grace)
		switch {
		case r.Cut:
			log.Info("preStop hook not completed in grace period", "grace", grace)
		case r.Err != nil:
			log.Warn("preStop hook failed", "err", r.Err, "message", r.Message)
			e.event(pod, c.Name, corev1.EventTypeWarning, lifecycle.ReasonFailedPreStopHook, lifecycle.MessageFailedPreStop)
		}
		if err := ctx.Err(); err != nil {
			// The kill was called off (a shorter grace period, the agent
			// stopping): no SIGTERM now; the next kill runs the hook again.
			return fmt.Errorf("kill container %q (%s): %w", c.Name, c.ID, err)
		}
		e.markPreStopRan(pod, c.ID)
		least := int64(0)
		if sidecarWaitsPastGrace {
			least = MinStopTimeout
		}
		grace = lifecycle.RemainingGrace(grace, r.Waited, least)
	}
	if turn != nil && grace > 0 {
		// A sidecar waits for its turn only with grace left: one whose
		// hook used it all is stopped at once with the others, as the
		// kubelet's killContainer skips the ordering then.
		grace = turn(grace)
	}
	return e.stopContainer(ctx, c.ID, grace) // at least MinStopTimeout
}

// preStopRan reports whether instance id of pod has had its preStop hook.
func (e *Executor) preStopRan(pod *corev1.Pod, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.preStopped[string(pod.UID)][id]
}

// markPreStopRan records that instance id of pod has had its preStop hook.
func (e *Executor) markPreStopRan(pod *corev1.Pod, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	uid := string(pod.UID)
	if e.preStopped[uid] == nil {
		e.preStopped[uid] = map[string]bool{}
	}
	e.preStopped[uid][id] = true
}

// sandboxIP is the IP of sandbox id in st, else of the newest sandbox.
func sandboxIP(st *podstate.PodStatus, id string) string {
	if st == nil {
		return ""
	}
	for _, sb := range st.Sandboxes {
		if sb.ID == id {
			return sb.IP
		}
	}
	if sb, ok := st.LatestSandbox(); ok {
		return sb.IP
	}
	return ""
}

func (e *Executor) stopContainer(ctx context.Context, id string, grace int64) error {
	err := e.ports.Runtime.StopContainer(ctx, id, max(grace, MinStopTimeout))
	if isNotFound(err) {
		return nil
	}
	return err
}

// ForgetPod drops the back-off state of a pod that is gone.
func (e *Executor) ForgetPod(uid string) {
	e.crash.Forget(uid + "/")
	e.images.Forget(uid)
	e.mu.Lock()
	delete(e.preStopped, uid)
	delete(e.reasons, uid)
	e.mu.Unlock()
}

// Reasons returns why the syncs of pod uid left each of its containers
// waiting, as of the last sync that acted on it: the reasons the status
// written at the start of the next sync reports, as the kubelet's
// generateAPIPodStatus reads its reason cache.
func (e *Executor) Reasons(uid string) map[string]Waiting {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.reasons[uid])
}

// recordReasons updates pod uid's reasons with a sync's result: the
// containers it left waiting get their reason, those it started lose
// theirs; the others keep what an earlier sync recorded.
func (e *Executor) recordReasons(uid string, res Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.reasons[uid]
	if r == nil {
		if len(res.Waiting) == 0 {
			return
		}
		r = map[string]Waiting{}
		e.reasons[uid] = r
	}
	for _, s := range res.Started {
		delete(r, s.Name)
	}
	maps.Copy(r, res.Waiting)
}

func (e *Executor) event(pod *corev1.Pod, container, eventType, reason, message string) {
	if e.ports.Events == nil || pod == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	if container != "" {
		ref.FieldPath = podutil.ContainerFieldPath(pod, container)
	}
	e.ports.Events.Event(ref, eventType, reason, message)
}
