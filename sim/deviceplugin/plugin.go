// Package deviceplugin is lockstep's sample device plugin, in process: a
// resource of fake devices whose health can be scripted and whose
// connection can die, speaking deps.DevicePlugin. The simulator registers
// it through Registry; `lockstep deviceplugin` serves the same plugin over
// gRPC to a real agent.
//
// Faults: GetDevicePluginOptions can fail (FailOptions), ListAndWatch can
// fail at once or end a stream that has listed (FailListAndWatch), and the
// plugin can stop altogether (Die). The plugin keeps its own truth for the
// simulation checker: the calls it received (Calls) and whether it is down
// (State): its options call failed, or a stream of its ended by its fault
// or death, and no stream has listed its devices since.
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

// The errors of the plugin's faults: a dead plugin's calls and streams
// end with ErrDied; FailOptions makes GetDevicePluginOptions answer
// ErrOptions, FailListAndWatch ends streams with ErrListAndWatch.
var (
	ErrDied         = errors.New("device plugin died")
	ErrOptions      = errors.New("GetDevicePluginOptions failed")
	ErrListAndWatch = errors.New("ListAndWatch failed")
)

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
	// FailOptions makes GetDevicePluginOptions fail from the start (until
	// Plugin.FailOptions(false) or Heal).
	FailOptions bool
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

	failOptions, failList bool
	calls                 []Call
	state                 State
	// streams are the ListAndWatch streams open, by number; seq numbers
	// them.
	streams map[int]bool
	seq     int
}

// Call is one call the plugin received.
type Call struct {
	// Method is the DevicePlugin method called (GetDevicePluginOptions,
	// ListAndWatch, GetPreferredAllocation, Allocate, PreStartContainer).
	Method string
	// Down and Epoch are the plugin's State.Down and State.Epoch when the
	// call came.
	Down  bool
	Epoch int
	// Err is the error the plugin answered ("" for success; a stream's
	// later end is not recorded here).
	Err string
}

// State is the plugin's own account of itself.
type State struct {
	// Down: GetDevicePluginOptions failed with no stream open, or a
	// stream ended by the plugin's fault or death (or the plugin died),
	// and no ListAndWatch has listed the devices since.
	Down bool
	// Epoch counts the times the plugin went down.
	Epoch int
	// Stops counts the ListAndWatch calls that ended by the plugin's fault
	// or death, at once or after listing (each stops the agent's
	// endpoint, as upstream's); Lists counts the device lists sent.
	Stops, Lists int
	// OptionsOK counts the successful GetDevicePluginOptions calls.
	OptionsOK int
	// Devices is how many devices the plugin offers.
	Devices int
}

// New returns a plugin with every device healthy; newSignal makes the
// signal its ListAndWatch waits on (deps.Tasks.NewSignal).
func New(cfg Config, newSignal func(name string) deps.Signal) *Plugin {
	if cfg.HostDir == "" {
		cfg.HostDir = "/var/lib/lockstep-deviceplugin/" + base(cfg.Resource)
	}
	p := &Plugin{cfg: cfg, changed: newSignal("device plugin " + cfg.Resource), failOptions: cfg.FailOptions, streams: map[int]bool{}}
	for i := range cfg.Count {
		p.devices = append(p.devices, deps.Device{ID: fmt.Sprintf("%s-%d", base(cfg.Resource), i), Healthy: true})
	}
	p.state.Devices = len(p.devices)
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

// Die stops the plugin: its streams end, every call fails.
func (p *Plugin) Die() {
	p.mu.Lock()
	p.dead = true
	p.goDown()
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

// FailOptions makes GetDevicePluginOptions fail (on) or answer (off).
func (p *Plugin) FailOptions(on bool) {
	p.mu.Lock()
	p.failOptions = on
	p.mu.Unlock()
}

// FailListAndWatch, on, makes ListAndWatch fail at once and ends the
// streams open (after the lists they sent), as upstream's test plugin
// does; off lets new calls list again.
func (p *Plugin) FailListAndWatch(on bool) {
	p.mu.Lock()
	p.failList = on
	p.mu.Unlock()
	if on {
		p.changed.Notify()
	}
}

// Heal clears every fault (revives a dead plugin) and reports whether the
// plugin is down, so that it must register again to serve.
func (p *Plugin) Heal() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead, p.failOptions, p.failList = false, false, false
	return p.state.Down
}

// Disconnect forgets the open streams: the agent that held them is gone
// (it crashed), which is no fault of the plugin's.
func (p *Plugin) Disconnect() {
	p.mu.Lock()
	clear(p.streams)
	p.mu.Unlock()
}

// State returns the plugin's account of itself.
func (p *Plugin) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Calls returns the calls the plugin received, in order.
func (p *Plugin) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// goDown marks the plugin down; p.mu held.
func (p *Plugin) goDown() {
	if !p.state.Down {
		p.state.Down = true
		p.state.Epoch++
	}
}

// record notes a call and its answer; p.mu held.
func (p *Plugin) record(method string, err error) {
	c := Call{Method: method, Down: p.state.Down, Epoch: p.state.Epoch}
	if err != nil {
		c.Err = err.Error()
	}
	p.calls = append(p.calls, c)
}

// GetDevicePluginOptions answers the plugin's options, or ErrOptions
// under FailOptions (the plugin is then down unless a stream is open).
func (p *Plugin) GetDevicePluginOptions(context.Context) (deps.DevicePluginOptions, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	switch {
	case p.dead:
		err = ErrDied
	case p.failOptions:
		err = ErrOptions
	}
	p.record("GetDevicePluginOptions", err)
	if err != nil {
		if len(p.streams) == 0 {
			p.goDown()
		}
		return deps.DevicePluginOptions{}, err
	}
	p.state.OptionsOK++
	return p.Registration().Options, nil
}

// ListAndWatch sends the device list now and after every change until the
// plugin dies, FailListAndWatch ends it or ctx ends.
func (p *Plugin) ListAndWatch(ctx context.Context, update func([]deps.Device)) error {
	p.mu.Lock()
	err := p.streamErr()
	p.record("ListAndWatch", err)
	p.seq++
	id := p.seq
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.streams, id)
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		if err := p.streamErr(); err != nil {
			p.state.Stops++
			p.goDown()
			p.mu.Unlock()
			return err
		}
		devs := slices.Clone(p.devices)
		p.streams[id] = true
		p.state.Down = false
		p.state.Lists++
		p.mu.Unlock()
		update(devs)
		if err := p.changed.Wait(ctx); err != nil {
			return err
		}
	}
}

// streamErr is why a stream cannot go on (nil: it can); p.mu held.
func (p *Plugin) streamErr() error {
	switch {
	case p.dead:
		return ErrDied
	case p.failList:
		return ErrListAndWatch
	}
	return nil
}

// GetPreferredAllocation prefers the highest ids, mustInclude first.
func (p *Plugin) GetPreferredAllocation(_ context.Context, available, mustInclude []string, size int) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		p.record("GetPreferredAllocation", ErrDied)
		return nil, ErrDied
	}
	p.record("GetPreferredAllocation", nil)
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
		p.record("Allocate", ErrDied)
		return deps.DeviceAllocation{}, ErrDied
	}
	for _, id := range ids {
		if !slices.ContainsFunc(p.devices, func(d deps.Device) bool { return d.ID == id }) {
			err := fmt.Errorf("allocate: unknown device %q", id)
			p.record("Allocate", err)
			return deps.DeviceAllocation{}, err
		}
	}
	p.record("Allocate", nil)
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
		p.record("PreStartContainer", ErrDied)
		return ErrDied
	}
	p.record("PreStartContainer", nil)
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
