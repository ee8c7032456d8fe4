package scenarios

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
	"github.com/lockstep-dev/lockstep/sim/harness"
	"github.com/lockstep-dev/lockstep/sim/trace"
)

// DeviceResource is the extended resource of the devices scenario's
// plugin, which offers DeviceCount devices.
const (
	DeviceResource = "example.com/foo"
	DeviceCount    = 4
)

func devicesScenario() Scenario {
	return Scenario{Name: "devices", Doc: "a device plugin dies, restarts and flaps device health while pods requesting its devices come and go and the agent crashes (devices-once)",
		Mix: map[string]int{"create-devices": 5, "create": 1, "delete": 3, "plugin-die": 1, "plugin-restart": 2, "device-health": 2,
			"crash": 1, "crash-in-sync": 1, "wait": 2},
		Configure: func(c *harness.Config) {
			c.DevicePlugins = []deviceplugin.Config{{Resource: DeviceResource, Count: DeviceCount, Preferred: true, PreStart: true}}
		},
	}
}

// DeviceFaultsResource is the device-faults scenario's second plugin,
// whose GetDevicePluginOptions fails from the start (until healed).
const DeviceFaultsResource = "example.com/bar"

func deviceFaultsScenario() Scenario {
	return Scenario{Name: "device-faults", Doc: "a device plugin's GetDevicePluginOptions fails, its ListAndWatch fails at once or after listing, it stops (also past its grace, then the agent restarts and a pod asks for its devices), while pods requesting its devices come and go and the agent crashes; a second plugin starts refused (device-plugin-down, devices-once)",
		Mix: map[string]int{"create-devices": 4, "delete": 2, "plugin-fail-options": 1, "plugin-fail-list": 2, "plugin-die": 1, "plugin-restart": 1,
			"plugin-gone-restart": 1, "crash": 1, "wait": 3},
		Configure: func(c *harness.Config) {
			c.DevicePlugins = []deviceplugin.Config{{Resource: DeviceResource, Count: DeviceCount, PreStart: true},
				{Resource: DeviceFaultsResource, Count: 2, FailOptions: true}}
		},
	}
}

func opPluginFailOptions(r *run, _ [3]int) error {
	p := r.devicePlugin()
	if p == nil {
		return nil
	}
	r.fault("device-plugin-fail-options")
	p.Die() // the plugin restarts…
	p.Heal()
	p.FailOptions(true) // …broken, and registers again
	r.h.RegisterDevicePlugin(p)
	return nil
}

func opPluginFailList(r *run, a [3]int) error {
	p := r.devicePlugin()
	if p == nil {
		return nil
	}
	if a[0] == 0 {
		r.fault("device-plugin-fail-list", "when", "streaming")
		p.FailListAndWatch(true)
		return nil
	}
	r.fault("device-plugin-fail-list", "when", "at once")
	p.Die()
	p.Heal()
	p.FailListAndWatch(true)
	r.h.RegisterDevicePlugin(p)
	return nil
}

// Devices makes container request n devices of resource (a limit, as
// extended resources are asked for).
func Devices(container, resourceName string, n int) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[corev1.ResourceName(resourceName)] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
}

// DevicePod is a pod whose container "app" requests 1 + n%3 devices of
// DeviceResource; with n >= 3 a second container "web" requests one more.
func DevicePod(name, node string, n int) *corev1.Pod {
	opts := []PodOption{Devices("app", DeviceResource, 1+n%3)}
	if n >= 3 {
		opts = append(opts, Devices("web", DeviceResource, 1))
	}
	return NewPod(name, node, opts...)
}

func opCreateDevices(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, DevicePod(name, r.h.NodeName, a[0])); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// devicePlugin is the run's first device plugin (nil without one).
func (r *run) devicePlugin() *deviceplugin.Plugin {
	if ps := r.h.DevicePlugins(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

func opPluginDie(r *run, _ [3]int) error {
	if p := r.devicePlugin(); p != nil && !p.Dead() {
		r.fault("device-plugin-die")
		p.Die()
	}
	return nil
}

// opPluginGoneRestart: the plugin dies and stays down past upstream's
// grace (and the node status that reports the removal); the agent
// crashes and restarts, forgetting the plugin; a pod then asks for its
// devices: upstream refuses it (OutOf<resource> from the Node's 0, or
// UnexpectedAdmissionError while pods hold its devices), it must never
// run without them (devices-once).
func opPluginGoneRestart(r *run, a [3]int) error {
	p := r.devicePlugin()
	if p == nil {
		return nil
	}
	r.fault("device-plugin-gone-restart", "downtime", ms(a[0]))
	if !p.Dead() {
		p.Die()
	}
	if err := r.advance(upstreamDeviceGrace + deviceStatusBound); err != nil {
		return err
	}
	r.h.CrashAgent()
	if err := r.advance(ms(a[0])); err != nil {
		return err
	}
	r.h.StartAgent()
	return opCreateDevices(r, [3]int{a[1]})
}

func opPluginRestart(r *run, _ [3]int) error {
	if p := r.devicePlugin(); p != nil && (p.Dead() || p.State().Down) {
		r.h.K.Record("action", trace.F("device-plugin", "restart"))
		r.h.RestartDevicePlugin(p)
	}
	return nil
}

func opDeviceHealth(r *run, a [3]int) error {
	p := r.devicePlugin()
	if p == nil {
		return nil
	}
	devs := p.Devices()
	if len(devs) == 0 {
		return nil
	}
	id := devs[pick(a[0], len(devs))].ID
	r.fault("device-health", "device", id, "healthy", a[1] == 1)
	p.SetHealthy(id, a[1] == 1)
	return nil
}

// healDevices brings the device plugins back with every device healthy.
func (r *run) healDevices() {
	for _, p := range r.h.DevicePlugins() {
		for _, d := range p.Devices() {
			if !d.Healthy {
				p.SetHealthy(d.ID, true)
			}
		}
		r.h.RestartDevicePlugin(p)
	}
}
