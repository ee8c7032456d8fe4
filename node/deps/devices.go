package deps

import "context"

// DevicePluginVersion is the only device plugin API version the agent
// speaks (deviceplugin/v1beta1).
const DevicePluginVersion = "v1beta1"

// DeviceRegistration is a device plugin's request to be registered: the
// API version it speaks, the extended resource it offers and the options
// it sent along (the agent, as the kubelet, goes by the plugin's answer to
// GetDevicePluginOptions instead).
type DeviceRegistration struct {
	Version      string
	ResourceName string
	Options      DevicePluginOptions
}

// DevicePluginOptions say which optional calls a plugin wants made.
type DevicePluginOptions struct {
	// PreStartRequired: PreStartContainer is called before each container
	// that holds the plugin's devices starts.
	PreStartRequired bool
	// GetPreferredAllocationAvailable: the plugin chooses among the free
	// devices before Allocate.
	GetPreferredAllocationAvailable bool
}

// Device is one device a plugin offers and whether it is healthy.
type Device struct {
	ID      string `json:"id"`
	Healthy bool   `json:"healthy"`
}

// DeviceAllocation is what a plugin's Allocate answers for one container:
// what the container config must hold to use the devices.
type DeviceAllocation struct {
	Envs        map[string]string `json:"envs,omitempty"`
	Mounts      []DeviceMount     `json:"mounts,omitempty"`
	Devices     []DeviceSpec      `json:"devices,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// CDIDevices are fully qualified CDI device names.
	CDIDevices []string `json:"cdiDevices,omitempty"`
}

// DeviceMount is a host path mounted into the container.
type DeviceMount struct {
	ContainerPath string `json:"containerPath"`
	HostPath      string `json:"hostPath"`
	ReadOnly      bool   `json:"readOnly,omitempty"`
}

// DeviceSpec is a device node exposed to the container.
type DeviceSpec struct {
	ContainerPath string `json:"containerPath"`
	HostPath      string `json:"hostPath"`
	Permissions   string `json:"permissions,omitempty"`
}

// DevicePlugin is a registered device plugin as the agent calls it (real:
// a gRPC client on the plugin's unix socket; sim: an in-process fake).
type DevicePlugin interface {
	// GetDevicePluginOptions asks the plugin which optional calls it
	// wants; the agent calls it once when the plugin registers, and
	// refuses the registration when it fails.
	GetDevicePluginOptions(ctx context.Context) (DevicePluginOptions, error)
	// ListAndWatch calls update with the full device list each time the
	// plugin sends one, and returns when the stream ends (the plugin
	// disconnected) or ctx ends.
	ListAndWatch(ctx context.Context, update func([]Device)) error
	// GetPreferredAllocation returns the size devices the plugin would
	// rather hand out, chosen from available and including mustInclude.
	GetPreferredAllocation(ctx context.Context, available, mustInclude []string, size int) ([]string, error)
	// Allocate readies the devices for one container.
	Allocate(ctx context.Context, ids []string) (DeviceAllocation, error)
	// PreStartContainer is called before a container holding ids starts,
	// when the plugin asked for it.
	PreStartContainer(ctx context.Context, ids []string) error
}

// DevicePluginRegistry is where device plugins register (real: the
// Registration gRPC service on <root-dir>/device-plugins/kubelet.sock;
// sim: the harness).
type DevicePluginRegistry interface {
	// Next blocks until a plugin asks to register and returns its
	// request and a client for it; answer receives the agent's verdict
	// (nil: registered), which the registry returns to the plugin.
	Next(ctx context.Context) (req DeviceRegistration, plugin DevicePlugin, answer func(error), err error)
}
