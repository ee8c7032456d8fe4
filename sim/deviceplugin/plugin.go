// Package deviceplugin is lockstep's sample device plugin, in process: a
// resource of fake devices whose health can be scripted and whose
// connection can die, speaking deps.DevicePlugin. The simulator registers
// it through Registry; `lockstep deviceplugin` serves the same plugin over
// gRPC to a real agent.
//
// Allocate answers every container with the env FOO_DEVICE (the device
// ids, comma-separated; the variable is named after the resource:
// example.com/foo gives FOO_DEVICE) and a read-only mount of the host
// directory HostDir at /dev/<resource base name>.
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// ErrDied is what a ListAndWatch stream of a dead plugin ends with.
var ErrDied = errors.New("device plugin died")

// Config says what a Plugin offers.
type Config struct {
	// Resource is the extended resource name (example.com/foo).
	Resource string
	// Count is how many devices it offers, named <base>-0 … <base>-N-1.
	Count int
	// HostDir is the host directory mounted into containers; empty:
	// /var/lib/lockstep-deviceplugin/<base>.
	HostDir string
	// Preferred: the plugin offers GetPreferredAllocation (it prefers the
	// highest ids); PreStart: it asks for PreStartContainer.
	Preferred, PreStart bool
}

// Plugin is a fake device plugin. Its methods are safe for concurrent use.
type Plugin struct {
	cfg     Config
	changed deps.Signal

	mu       sync.Mutex
	devices  []deps.Device
	dead     bool
	allocs   [][]string
	preStart [][]string
}

// New returns a plugin with every device healthy; newSignal makes the
// signal its ListAndWatch waits on (deps.Tasks.NewSignal).
func New(cfg Config, newSignal func(name string) deps.Signal) *Plugin {
	if cfg.HostDir == "" {
		cfg.HostDir = "/var/lib/lockstep-deviceplugin/" + base(cfg.Resource)
	}
	p := &Plugin{cfg: cfg, changed: newSignal("device plugin " + cfg.Resource)}
	for i := range cfg.Count {
		p.devices = append(p.devices, deps.Device{ID: fmt.Sprintf("%s-%d", base(cfg.Resource), i), Healthy: true})
	}
	return p
}

// base is the name part of a resource name (foo of example.com/foo).
func base(resource string) string { return path.Base(resource) }

// HostDir is the host directory the plugin mounts into containers.
func (p *Plugin) HostDir() string { return p.cfg.HostDir }

// EnvName is the environment variable Allocate sets for resource.
func EnvName(resource string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(base(resource))) + "_DEVICE"
}

// Registration is the plugin's registration request.
func (p *Plugin) Registration() deps.DeviceRegistration {
	return deps.DeviceRegistration{Version: deps.DevicePluginVersion, ResourceName: p.cfg.Resource,
		Options: deps.DevicePluginOptions{PreStartRequired: p.cfg.PreStart, GetPreferredAllocationAvailable: p.cfg.Preferred}}
}

// Devices returns the device list.
func (p *Plugin) Devices() []deps.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.devices)
}

// SetHealthy changes one device's health; ListAndWatch sends the new list.
func (p *Plugin) SetHealthy(id string, healthy bool) {
	p.mu.Lock()
	for i := range p.devices {
		if p.devices[i].ID == id {
			p.devices[i].Healthy = healthy
		}
	}
	p.mu.Unlock()
	p.changed.Notify()
}

// Die ends the ListAndWatch stream: the plugin is gone.
func (p *Plugin) Die() {
	p.mu.Lock()
	p.dead = true
	p.mu.Unlock()
	p.changed.Notify()
}

// Revive lets a dead plugin serve again (register it anew).
func (p *Plugin) Revive() {
	p.mu.Lock()
	p.dead = false
	p.mu.Unlock()
}

// Dead reports whether the plugin died.
func (p *Plugin) Dead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// ListAndWatch sends the device list now and after every change until the
// plugin dies or ctx ends.
func (p *Plugin) ListAndWatch(ctx context.Context, update func([]deps.Device)) error {
	for {
		p.mu.Lock()
		dead, devs := p.dead, slices.Clone(p.devices)
		p.mu.Unlock()
		if dead {
			return ErrDied
		}
		update(devs)
		if err := p.changed.Wait(ctx); err != nil {
			return err
		}
	}
}

// GetPreferredAllocation prefers the highest ids, mustInclude first.
func (p *Plugin) GetPreferredAllocation(_ context.Context, available, mustInclude []string, size int) ([]string, error) {
	if p.Dead() {
		return nil, ErrDied
	}
	out := slices.Clone(mustInclude)
	rest := slices.Clone(available)
	slices.Sort(rest)
	slices.Reverse(rest)
	for _, id := range rest {
		if len(out) >= size {
			break
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// Allocate answers the env and the mount for ids.
func (p *Plugin) Allocate(_ context.Context, ids []string) (deps.DeviceAllocation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return deps.DeviceAllocation{}, ErrDied
	}
	for _, id := range ids {
		if !slices.ContainsFunc(p.devices, func(d deps.Device) bool { return d.ID == id }) {
			return deps.DeviceAllocation{}, fmt.Errorf("allocate: unknown device %q", id)
		}
	}
	p.allocs = append(p.allocs, slices.Clone(ids))
	return Answer(p.cfg, ids), nil
}

// Answer is the allocation the sample plugin gives ids under cfg.
func Answer(cfg Config, ids []string) deps.DeviceAllocation {
	if cfg.HostDir == "" {
		cfg.HostDir = "/var/lib/lockstep-deviceplugin/" + base(cfg.Resource)
	}
	return deps.DeviceAllocation{
		Envs:   map[string]string{EnvName(cfg.Resource): strings.Join(ids, ",")},
		Mounts: []deps.DeviceMount{{ContainerPath: "/dev/" + base(cfg.Resource), HostPath: cfg.HostDir, ReadOnly: true}},
	}
}

// PreStartContainer records the call.
func (p *Plugin) PreStartContainer(_ context.Context, ids []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return ErrDied
	}
	p.preStart = append(p.preStart, slices.Clone(ids))
	return nil
}

// Allocations are the device sets Allocate was called with, in order.
func (p *Plugin) Allocations() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.allocs)
}

// PreStarts are the device sets PreStartContainer was called with.
func (p *Plugin) PreStarts() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.preStart)
}
