package deviceplugin

import (
	"context"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Registry is an in-process deps.DevicePluginRegistry: Register queues a
// plugin's request for the agent's Next.
type Registry struct {
	queue *deps.Inbox[pending]
}

type pending struct {
	req    deps.DeviceRegistration
	plugin deps.DevicePlugin
	answer func(error)
}

// NewRegistry returns an empty registry whose waits run on tasks.
func NewRegistry(tasks deps.Tasks) *Registry {
	return &Registry{queue: deps.NewInbox[pending](tasks, "device plugin registrations")}
}

// Register queues plugin's request; answer (may be nil) receives the
// agent's verdict.
func (r *Registry) Register(req deps.DeviceRegistration, plugin deps.DevicePlugin, answer func(error)) {
	if answer == nil {
		answer = func(error) {}
	}
	r.queue.Put(pending{req, plugin, answer})
}

// Next implements deps.DevicePluginRegistry.
func (r *Registry) Next(ctx context.Context) (deps.DeviceRegistration, deps.DevicePlugin, func(error), error) {
	p, err := r.queue.Get(ctx)
	if err != nil {
		return deps.DeviceRegistration{}, nil, nil, err
	}
	return p.req, p.plugin, p.answer, nil
}
