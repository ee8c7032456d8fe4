package runtimesync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// ResolveRecursiveReadOnly decides whether volume mount m is mounted
// recursively read-only, as the kubelet does (kubelet_pods.go
// resolveRecursiveReadOnly): never when recursiveReadOnly is unset or
// Disabled; otherwise the mount must be readOnly and without propagation;
// IfPossible follows the runtime's support, Enabled requires it.
func ResolveRecursiveReadOnly(m corev1.VolumeMount, runtimeSupports bool) (bool, error) {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !m.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q",
			m.Name, *m.MountPropagation)
	}
	switch mode := *m.RecursiveReadOnly; mode {
	case corev1.RecursiveReadOnlyIfPossible:
		return runtimeSupports, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !runtimeSupports {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", m.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

// applyRecursiveReadOnly marks the mounts of cfg that c asks to be
// recursively read-only (ResolveRecursiveReadOnly), learning whether the
// pod's runtime handler supports them from the runtime's status, as the
// kubelet does. A mount that cannot be is the kubelet's config error
// ("failed to resolve recursive read-only mode: …"): the container waits
// in CreateContainerConfigError.
func (e *Executor) applyRecursiveReadOnly(ctx context.Context, pod *corev1.Pod, c *corev1.Container, cfg *runtimeapi.ContainerConfig) error {
	asks := false
	for _, m := range c.VolumeMounts {
		asks = asks || m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled
	}
	if !asks {
		return nil
	}
	supports := e.HandlerSupportsRecursiveReadOnly(ctx, pod)
	for _, m := range c.VolumeMounts {
		rro, err := ResolveRecursiveReadOnly(m, supports)
		if err != nil {
			return fmt.Errorf("container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name,
				&podspec.ConfigError{Message: "failed to resolve recursive read-only mode: " + err.Error()})
		}
		if !rro {
			continue
		}
		for _, cm := range cfg.GetMounts() {
			if cm.GetContainerPath() == m.MountPath {
				cm.RecursiveReadOnly = true
			}
		}
	}
	return nil
}

// HandlerSupportsRecursiveReadOnly reports whether the runtime handler
// the pod runs under says it supports recursive read-only mounts (CRI
// Status, runtimeHandlers[].features); a runtime that lists no handlers,
// or one the pod's is not among, does not (the kubelet's
// runtimeHandlerSupportsRecursiveReadOnlyMounts).
func (e *Executor) HandlerSupportsRecursiveReadOnly(ctx context.Context, pod *corev1.Pod) bool {
	handler, err := e.runtimeHandler(ctx, pod)
	if err != nil {
		return false
	}
	st, err := e.ports.Runtime.Status(ctx, false)
	if err != nil {
		return false
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == handler {
			return h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	return false
}
