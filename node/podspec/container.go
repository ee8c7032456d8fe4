package podspec

import (
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// ContainerConfigWith returns the config of a new instance of container c
// of the pod, given everything the rest of the agent contributes in opts.
//
// The config carries: metadata (name, attempt = opts.RestartCount); the
// image (opts.ImageRef when resolved, else c.Image); command and args with
// $(VAR) references expanded against the container's environment; the
// working directory; the environment (see environment); labels
// (podstate.ContainerLabels) and annotations (podstate.ContainerAnnotations
// of ContainerHash and the restart count, plus the pod's termination grace
// period — 30 s when unset — and the container's termination message
// path); the log path (ContainerLogPath); stdin/stdinOnce/tty; Linux
// resources (see linuxResources), the security context (see
// containerSecurityContext) and mounts (see containerMounts). A container
// that must not run as root but would fails (VerifyRunAsNonRoot). Devices
// are not set yet.
//
// For a host-network pod with no opts.PodIPs, status.podIP(s) are the
// node's IPs, as upstream reports them.
func ContainerConfigWith(pod *corev1.Pod, c *corev1.Container, opts ContainerOptions, node NodeInfo) (*runtimeapi.ContainerConfig, error) {
	fail := func(err error) error {
		return fmt.Errorf("container %q of pod %s: %w", c.Name, podName(pod), err)
	}
	if opts.RestartCount < 0 || int64(opts.RestartCount) > math.MaxUint32 {
		return nil, fail(fmt.Errorf("restart count %d is out of range", opts.RestartCount))
	}
	podIPs := opts.PodIPs
	if pod.Spec.HostNetwork && len(podIPs) == 0 {
		podIPs = node.hostIPs()
	}
	podIPs = sortPodIPs(podIPs, node)
	if err := VerifyRunAsNonRoot(pod, c, opts.ImageUser); err != nil {
		return nil, fail(err)
	}
	sc, err := containerSecurityContext(pod, c, opts.ImageUser, node)
	if err != nil {
		return nil, fail(err)
	}
	env, values, err := environment(pod, c, podIPs, node, opts)
	if err != nil {
		return nil, fail(err)
	}
	lookup := func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	}
	mounts, err := containerMounts(pod, c, podIPs, node, lookup)
	if err != nil {
		return nil, fail(err)
	}
	if m := terminationLogMount(c, opts.TerminationLog); m != nil {
		mounts = append(mounts, m)
	}
	envs := make([]*runtimeapi.KeyValue, len(env))
	for i, e := range env {
		envs[i] = &runtimeapi.KeyValue{Key: e.name, Value: []byte(e.value)}
	}
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{
			Name:    c.Name,
			Attempt: uint32(opts.RestartCount),
		},
		Image:       imageSpec(c, opts.ImageRef),
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Labels:      podstate.ContainerLabels(RefOf(pod), c.Name),
		Annotations: containerAnnotations(pod, c, opts.RestartCount),
		LogPath:     ContainerLogPath(c.Name, opts.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Mounts:      mounts,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(pod, c, node),
			SecurityContext: sc,
		},
	}, nil
}

// imageSpec names the image to run: the resolved reference when there is
// one (with the user's spelling kept), else the spec's.
func imageSpec(c *corev1.Container, imageRef string) *runtimeapi.ImageSpec {
	if imageRef == "" {
		return &runtimeapi.ImageSpec{Image: c.Image}
	}
	return &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image}
}

// containerAnnotations returns the annotations the agent needs back from
// the runtime after a restart.
func containerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int) map[string]string {
	a := podstate.ContainerAnnotations(ContainerHash(c), restartCount)
	a[podstate.AnnotationTerminationGrace] = strconv.FormatInt(podutil.SpecGracePeriod(pod), 10)
	a[podstate.AnnotationTerminationMessagePth] = c.TerminationMessagePath
	a[podstate.AnnotationTerminationMessagePolicy] = string(c.TerminationMessagePolicy)
	return a
}

// expandAll expands $(VAR) references in each string.
func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, lookup)
	}
	return out
}
