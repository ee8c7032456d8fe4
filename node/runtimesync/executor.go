package runtimesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// under (node/cgroups); nil leaves sandboxes where the runtime likes.
	CgroupParent func(pod *corev1.Pod) string
	// Resized, when set, reports the pods a resize was accepted for:
	// only their running containers are compared with the resources
	// their allocation gives them (and restarted when a resizePolicy
	// says so); nil: none.
	Resized func(uid types.UID) bool
	// ContainerCPUSet, when set, names the CPUs and memory nodes a new
	// container of a pod runs on (node/cpumanager, node/memorymanager;
	// "" leaves either to the runtime).
	ContainerCPUSet func(pod *corev1.Pod, container string) (cpus, mems string)
	// Observer, when set, is told about every sandbox and container start
	// attempt (for metrics); nil observes nothing. It must not block.
	Observer Observer
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
	crash  *backoff.Backoff
	images *images.Manager
	hooks  *lifecycle.Runner

	// preStopped holds, by pod UID, the container instances whose preStop
	// hook has run to its end or its grace period: a retried kill of the
	// pod (after a failed stop) does not run it again.
	mu         sync.Mutex
	preStopped map[string]map[string]bool

	// Last good answers of the apiserver, by namespace/name.
	configMaps lastGood[*corev1.ConfigMap]
	secrets    lastGood[*corev1.Secret]
}

// NewExecutor returns an executor acting through ports.
func NewExecutor(d deps.Core, ports Ports, cfg Config) *Executor {
	return &Executor{
		d: d, ports: ports, cfg: cfg,
		crash:  backoff.New(cfg.CrashBackoff),
		images: images.New(d, images.Ports{Images: ports.Images, Secrets: ports.Secrets, Events: ports.Events}, cfg.Images),
		hooks:  lifecycle.New(d, ports.Runtime, ports.ProbeNet),

		preStopped: map[string]map[string]bool{},
	}
}

// Result reports what a sync did and why containers wait.
type Result struct {
	Actions Actions
	// Waiting maps container names to why they are not running.
	Waiting map[string]Waiting
	// Started lists the containers started, in order.
	Started []Started
	// SandboxID is the sandbox the pod's containers run in after the sync.
	SandboxID string
	// ActionTaken reports that the runtime was changed.
	ActionTaken bool
}

// Started is a container instance a sync started.
type Started struct {
	Name string
	ID   string
}

// PodLogger returns d.Log with the pod's namespace/name and UID.
func PodLogger(l *slog.Logger, pod *corev1.Pod) *slog.Logger {
	return l.With("pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID))
}

// SyncPod computes and executes the actions for pod. Unhealthy reports
// containers whose liveness or startup probe failed (nil: none); started
// reports whether a running instance has passed its startup probe (nil:
// running means started).
func (e *Executor) SyncPod(ctx context.Context, pod *corev1.Pod, st *podstate.PodStatus, terminal bool,
	unhealthy func(string) (ProbeKill, bool), started func(string) bool) (Result, error) {
	log := PodLogger(e.d.Log, pod)
	acts := ComputeActions(Inputs{
		Pod: pod, Status: st, Terminal: terminal, Now: e.d.Clock.Now(),
		Backoff: e.crash, Hash: podspec.ContainerHash, Unhealthy: unhealthy, Started: started, Node: e.cfg.Node,
		Resizing: e.cfg.Resized != nil && e.cfg.Resized(pod.UID),
	})
	res := Result{Actions: acts, Waiting: map[string]Waiting{}}
	for name, w := range acts.Waiting {
		res.Waiting[name] = w
		if w.Reason == podutil.ReasonCrashLoopBackOff {
			e.event(pod, name, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+name)
		}
	}
	grace := podutil.GracePeriod(pod)
	if acts.KillPod {
		res.ActionTaken = true
		if err := e.KillPod(ctx, pod, st, grace); err != nil {
			return res, fmt.Errorf("kill pod %s/%s before re-creating it: %w", pod.Namespace, pod.Name, err)
		}
	} else {
		var errs []error
		for _, k := range acts.Kill {
			res.ActionTaken = true
			log.Info("killing container", "container", k.Name, "id", k.ID, "reason", k.Reason)
			msg, kgrace := k.Message, grace
			if msg == "" {
				msg = fmt.Sprintf("Stopping container %s: %s", k.Name, k.Reason)
			}
			if k.Grace != nil {
				kgrace = *k.Grace
			}
			e.event(pod, k.Name, corev1.EventTypeNormal, "Killing", msg)
			victim := podstate.Container{ID: k.ID, Name: k.Name, State: podstate.ContainerRunning}
			if c, ok := st.Instance(k.ID); ok {
				victim = c
			}
			if err := e.killContainer(ctx, pod, victim, sandboxIP(st, victim.SandboxID), kgrace, nil); err != nil {
				errs = append(errs, fmt.Errorf("kill container %q of pod %s/%s: %w", k.Name, pod.Namespace, pod.Name, err))
				continue
			}
			if k.Remove {
				stale := podstate.Container{ID: k.ID, Name: k.Name}
				if c, ok := st.Instance(k.ID); ok {
					stale = c
				}
				if err := e.removeContainer(ctx, podspec.RefOf(pod), stale); err != nil {
					errs = append(errs, fmt.Errorf("remove stale container %q (%s) of pod %s/%s: %w", k.Name, k.ID, pod.Namespace, pod.Name, err))
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
	}
	if acts.InitFailed || terminal || len(acts.Start) == 0 && !acts.CreateSandbox {
		res.SandboxID = acts.SandboxID
		return res, nil
	}

	sandboxID, attempt := acts.SandboxID, acts.Attempt
	var podIPs []string
	if sb, ok := st.LatestSandbox(); ok && !acts.CreateSandbox {
		attempt = sb.Attempt
		if sb.IP != "" {
			podIPs = []string{sb.IP}
		}
	}
	sbConfig, err := podspec.SandboxConfig(pod, attempt, e.cfg.Node, e.cgroupParent(pod))
	if err != nil {
		return res, fmt.Errorf("sandbox config of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if acts.CreateSandbox {
		res.ActionTaken = true
		log.Info("creating sandbox", "attempt", attempt, "reason", acts.SandboxReason)
		if e.ports.Files != nil {
			if err := e.ports.Files.MkdirAll(sbConfig.LogDirectory); err != nil {
				return res, fmt.Errorf("create log directory %s of pod %s/%s: %w", sbConfig.LogDirectory, pod.Namespace, pod.Name, err)
			}
		}
		var handler string
		if handler, err = e.runtimeHandler(ctx, pod); err == nil {
			if err = e.userNamespace(ctx, pod, sbConfig, handler, true); err == nil {
				sandboxID, err = e.ports.Runtime.RunPodSandbox(ctx, sbConfig, handler)
			}
		}
		if obs := e.cfg.Observer; obs != nil {
			obs.ObservePodSandboxStart(err)
		}
		if err != nil {
			e.event(pod, "", corev1.EventTypeWarning, "FailedCreatePodSandBox", fmt.Sprintf("Failed to create pod sandbox: %v", err))
			for _, s := range acts.Start {
				res.Waiting[s.Name] = Waiting{Reason: podutil.ReasonContainerCreating}
			}
			return res, fmt.Errorf("create sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if sst, err := e.ports.Runtime.PodSandboxStatus(ctx, sandboxID, false); err == nil && sst.GetStatus().GetNetwork().GetIp() != "" {
			podIPs = []string{sst.GetStatus().GetNetwork().GetIp()}
		}
	} else if err := e.userNamespace(ctx, pod, sbConfig, "", false); err != nil {
		return res, err // the running sandbox's namespace, for its new containers
	}
	res.SandboxID = sandboxID

	var errs []error
	for _, s := range acts.Start {
		c := containerSpec(pod, s)
		if c == nil {
			continue
		}
		res.ActionTaken = true
		if w, err := e.ensureImage(ctx, pod, c, sbConfig); w != nil {
			e.observeStart(s, w.Reason)
			res.Waiting[s.Name] = *w
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		cfg, err := e.containerConfig(ctx, pod, c, s.RestartCount, podIPs)
		if err == nil && s.Ephemeral {
			targetNamespace(cfg, pod, st, s.Index)
		}
		if err == nil && podspec.WantsUserNamespace(pod) {
			podspec.SetUserNamespace(nil, cfg, sbConfig.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
		}
		if err == nil {
			err = e.prepareMounts(pod, podIPs, cfg)
		}
		if err == nil {
			e.pinCPUs(pod, cfg)
		}
		if err != nil {
			res.Waiting[s.Name] = Waiting{Reason: podutil.ReasonCreateContainerConfigError, Message: err.Error()}
			e.observeStart(s, podutil.ReasonCreateContainerConfigError)
			e.event(pod, s.Name, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
			errs = append(errs, err)
			continue
		}
		id, err := e.ports.Runtime.CreateContainer(ctx, sandboxID, cfg, sbConfig)
		if err != nil {
			res.Waiting[s.Name] = Waiting{Reason: podutil.ReasonCreateContainerError, Message: err.Error()}
			e.observeStart(s, podutil.ReasonCreateContainerError)
			e.event(pod, s.Name, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
			errs = append(errs, fmt.Errorf("create container %q of pod %s/%s: %w", s.Name, pod.Namespace, pod.Name, err))
			continue
		}
		e.event(pod, s.Name, corev1.EventTypeNormal, "Created", "Created container "+s.Name)
		e.linkLog(podspec.RefOf(pod), s.Name, id, s.RestartCount)
		if err := e.ports.Runtime.StartContainer(ctx, id); err != nil {
			res.Waiting[s.Name] = Waiting{Reason: podutil.ReasonRunContainerError, Message: err.Error()}
			e.observeStart(s, podutil.ReasonRunContainerError)
			e.event(pod, s.Name, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
			errs = append(errs, fmt.Errorf("start container %q of pod %s/%s: %w", s.Name, pod.Namespace, pod.Name, err))
			continue
		}
		log.Info("started container", "container", s.Name, "id", id, "restartCount", s.RestartCount)
		e.event(pod, s.Name, corev1.EventTypeNormal, "Started", "Started container "+s.Name)
		res.Started = append(res.Started, Started{Name: s.Name, ID: id})
		if w, err := e.postStart(ctx, pod, c, id, podIPs, grace); err != nil {
			e.observeStart(s, w.Reason)
			res.Waiting[s.Name] = *w
			errs = append(errs, err)
			continue
		}
		e.observeStart(s, "")
	}
	return res, errors.Join(errs...)
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
	opts := podspec.ContainerOptions{RestartCount: restartCount, PodIPs: podIPs, ImageUser: user,
		TerminationLog: e.terminationLog(pod, c, restartCount)}
	if opts.ConfigMaps, opts.Secrets, err = e.envObjects(ctx, pod, c); err != nil {
		return nil, fmt.Errorf("container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	}
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

// observeStart tells the Observer, if any, how starting s ended.
func (e *Executor) observeStart(s ContainerStart, code string) {
	if obs := e.cfg.Observer; obs != nil {
		obs.ObserveContainerStart(s.Init, code)
	}
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

// ensureImage makes sure c's image is present per its pull policy (see
// node/images). When the container cannot start now it returns the
// waiting reason and an error, so that the pod is synced again after the
// worker's back-off period (as upstream: a pull back-off is retried at the
// first sync after it ends).
func (e *Executor) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sb *runtimeapi.PodSandboxConfig) (*Waiting, error) {
	_, err := e.images.EnsureImage(ctx, pod, c, sb)
	if err == nil {
		return nil, nil
	}
	w := &Waiting{Reason: podutil.ReasonErrImagePull, Message: err.Error()}
	var ierr *images.Error
	if errors.As(err, &ierr) {
		w = &Waiting{Reason: ierr.Reason, Message: ierr.Message}
		e.event(pod, c.Name, corev1.EventTypeWarning, "Failed", "Error: "+ierr.Reason)
	}
	return w, fmt.Errorf("image %q for container %q of pod %s/%s: %w", c.Image, c.Name, pod.Namespace, pod.Name, err)
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

// postStart runs c's postStart hook, if any, on its new instance id. When
// the hook fails the instance is killed (it restarts under its back-off)
// and the container waits with reason PostStartHookError.
func (e *Executor) postStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, podIPs []string, grace int64) (*Waiting, error) {
	h := lifecycle.PostStart(c)
	if h == nil {
		return nil, nil
	}
	ip := ""
	if len(podIPs) > 0 {
		ip = podIPs[0]
	}
	msg, err := e.hooks.Run(ctx, h, lifecycle.Target{Pod: pod, Container: c, ContainerID: id, PodIP: ip})
	if err == nil {
		return nil, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		// The sync was called off (the pod is being deleted): the hook did
		// not fail, it was cut; the termination stops the container.
		return &Waiting{Reason: podutil.ReasonContainerCreating},
			fmt.Errorf("postStart hook of container %q of pod %s/%s cut: %w", c.Name, pod.Namespace, pod.Name, cerr)
	}
	PodLogger(e.d.Log, pod).Warn("postStart hook failed", "container", c.Name, "id", id, "err", err)
	e.event(pod, c.Name, corev1.EventTypeWarning, lifecycle.ReasonFailedPostStartHook, lifecycle.MessageFailedPostStart)
	e.event(pod, c.Name, corev1.EventTypeNormal, "Killing", lifecycle.ReasonFailedPostStartHook)
	err = fmt.Errorf("postStart hook of container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	victim := podstate.Container{ID: id, Name: c.Name, State: podstate.ContainerRunning}
	if kerr := e.killContainer(ctx, pod, victim, ip, grace, nil); kerr != nil {
		err = errors.Join(err, fmt.Errorf("kill container %q of pod %s/%s after its postStart hook failed: %w", c.Name, pod.Namespace, pod.Name, kerr))
	}
	return &Waiting{Reason: podutil.ReasonPostStartHookError, Message: msg}, err
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
		grace = lifecycle.RemainingGrace(grace, r.Waited, MinStopTimeout)
	}
	if turn != nil {
		grace = turn(grace)
	}
	return e.stopContainer(ctx, c.ID, grace)
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
	e.mu.Unlock()
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
