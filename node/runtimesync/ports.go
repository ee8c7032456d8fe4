package runtimesync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/objcache"
	"github.com/lockstep-dev/lockstep/node/servicecache"
)

// Runtime is the part of CRI's RuntimeService an Executor calls: it runs,
// stops and removes sandboxes and containers, resizes containers, reads
// their memory usage (a resize's check) and the runtime's status (user
// namespace support), and runs exec hooks.
type Runtime interface {
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
	ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// Images is the part of CRI's ImageService an Executor calls: the image
// manager's (node/images) inspection and pulls, and the image's user for
// a container's config.
type Images interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// Ports are the parts of the outside world an Executor acts on.
type Ports struct {
	// Runtime runs sandboxes and containers.
	Runtime Runtime
	// Images pulls and inspects images.
	Images Images
	// Files keeps pod log directories and container log symlinks; nil
	// keeps none.
	Files deps.Files
	// Events records events on pods; nil records none.
	Events deps.EventSink
	// ConfigMaps and Secrets feed containers' environments; nil: a pod
	// that needs them waits in CreateContainerConfigError.
	ConfigMaps deps.ConfigMapAPI
	Secrets    deps.SecretAPI
	// Services is the watched cache of every service, for the service
	// environment variables; nil (standalone): containers get none.
	Services *servicecache.Cache
	// Objects is the watched cache of the configMaps and secrets the
	// pods reference: environments read it first and GET (ConfigMaps,
	// Secrets) only what it does not hold yet; nil: always GET.
	Objects *objcache.Cache
	// RuntimeClasses resolves runtimeClassName into a CRI handler.
	RuntimeClasses deps.RuntimeClassAPI
	// UserNamespaces gives hostUsers: false pods their user namespace
	// (node/userns); nil: such pods' sandboxes fail.
	UserNamespaces UserNamespaces
	// ProbeNet carries the HTTP GETs of lifecycle hooks; nil: HTTP hooks
	// fail.
	ProbeNet deps.ProbeNetwork
	// Devices hands containers their device plugin devices
	// (node/cm/devicemanager); nil: no container gets any.
	Devices Devices
}

// Devices allocates containers' device plugin devices.
type Devices interface {
	// Allocate returns what c's config must hold to use its devices (the
	// same devices for every instance); nil when it uses none.
	Allocate(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (*deps.DeviceAllocation, error)
}

// UserNamespaces allocates pods' user namespaces (node/userns).
type UserNamespaces interface {
	// Allocate returns the pod's user namespace, the same for its whole
	// life.
	Allocate(uid types.UID) (*runtimeapi.UserNamespace, error)
}
