package agent

import (
	"github.com/lockstep-dev/lockstep/node/cm/devicemanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
)

// newDevices is the device plugin manager, nil without a registry for
// plugins.
func newDevices(d deps.Deps, cfg Config) *devicemanager.Manager {
	if d.DevicePlugins == nil {
		return nil
	}
	return devicemanager.New(d.Core, devicemanager.Ports{Registry: d.DevicePlugins, Files: d.Files},
		devicemanager.Config{Dir: cfg.DevicePluginDir})
}

// devicesPort is the executor's view of m (nil without one).
func devicesPort(m *devicemanager.Manager) runtimesync.Devices {
	if m == nil {
		return nil
	}
	return m
}

// deviceHousekeeping frees the devices of pods that can no longer run.
func (a *Agent) deviceHousekeeping() {
	if a.cm.devices == nil {
		return
	}
	for _, uid := range a.cm.devices.FreeOrphans(a.mayRunPod) {
		a.d.Log.Info("devices of a pod that can no longer run freed", "uid", string(uid))
	}
}
