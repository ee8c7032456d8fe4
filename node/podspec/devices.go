package podspec

import (
	"maps"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// AddDevices puts what device plugins allocated to a container into its
// config: their environment variables (after the container's own, sorted
// by name), mounts, device nodes, annotations and CDI device names. A nil
// allocation changes nothing.
func AddDevices(cfg *runtimeapi.ContainerConfig, a *deps.DeviceAllocation) {
	if a == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(a.Envs)) {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(a.Envs[k])})
	}
	for _, m := range a.Mounts {
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly})
	}
	for _, d := range a.Devices {
		cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
	}
	if len(a.Annotations) > 0 && cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	maps.Copy(cfg.Annotations, a.Annotations)
	for _, name := range a.CDIDevices {
		cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: name})
	}
}
