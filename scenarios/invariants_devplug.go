package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
)

// upstreamDeviceGrace is upstream's endpointStopGracePeriod: how long a
// stopped device plugin's resource keeps its capacity before the kubelet
// removes it (the node then shows it at 0).
const upstreamDeviceGrace = 5 * time.Minute

// lateCallSlack is how long after the checker saw a plugin go down a call
// already under way may still reach it (the checker's step and more).
const lateCallSlack = time.Second

// pluginWatch is what device-plugin-down remembers of one plugin, from
// the plugin's own account (deviceplugin.State and Calls) as the checker
// saw it step by step.
type pluginWatch struct {
	// epoch is the plugin's last down epoch seen; epochAt when each was
	// first seen.
	epoch   int
	epochAt map[int]time.Duration
	// stops and stopAt: the plugin's stream stops seen, and when the last
	// was seen; stopsSinceList counts those since its last device list.
	stops          int
	stopAt         time.Duration
	stopsSinceList int
	// lists: the device lists seen; listGen the agent's life (harness
	// restarts) when the last was seen (-1: the agent was down).
	lists   int
	listGen int
	// calls: the plugin's calls already judged; registrations the
	// successful GetDevicePluginOptions not yet followed by their one
	// ListAndWatch.
	calls, registrations int
	// seen: the resource has been in the node's capacity.
	seen bool
}

// watchPlugin returns the record of resource res.
func (c *Checker) watchPlugin(res string) *pluginWatch {
	if c.dv.plugins == nil {
		c.dv.plugins = map[string]*pluginWatch{}
	}
	w := c.dv.plugins[res]
	if w == nil {
		w = &pluginWatch{epochAt: map[int]time.Duration{}, listGen: -1}
		c.dv.plugins[res] = w
	}
	return w
}

// nodeResource is resource res in the node's capacity and allocatable as
// the API shows them (ok false: absent).
func (c *Checker) nodeResource(res string) (capacity int64, capOK bool, allocatable int64, allocOK bool) {
	for _, n := range c.h.API.User().Nodes() {
		if n.Name != c.h.NodeName {
			continue
		}
		if q, ok := n.Status.Capacity[corev1.ResourceName(res)]; ok {
			capacity, capOK = q.Value(), true
		}
		if q, ok := n.Status.Allocatable[corev1.ResourceName(res)]; ok {
			allocatable, allocOK = q.Value(), true
		}
	}
	return capacity, capOK, allocatable, allocOK
}

// checkPluginDown checks device-plugin-down for plugin p, from what the
// plugin did and upstream's device manager rules (never the agent's
// manager):
//   - a resource whose plugin never answered GetDevicePluginOptions is
//     never on the node (upstream refuses the registration);
//   - every ListAndWatch the plugin gets follows its own successful
//     GetDevicePluginOptions (a registration): a stream that ended is not
//     listened to again, a refused plugin never listed;
//   - while the plugin is down (its options failed or its stream ended),
//     no GetPreferredAllocation, Allocate or PreStartContainer reaches it
//     (no pod is given its devices), beyond lateCallSlack;
//   - while it is down and the agent has been up for deviceStatusBound,
//     the node's allocatable of the resource is 0;
//   - its capacity stays the devices it listed until upstreamDeviceGrace
//     after its stream stopped (when it listed to this agent and stopped
//     once since), and is 0, not absent, once the grace and
//     deviceStatusBound have passed (from the stop, or the agent's start
//     when later: upstream restores a stopped endpoint at start).
func (c *Checker) checkPluginDown(p *deviceplugin.Plugin) {
	res := p.Registration().ResourceName
	w := c.watchPlugin(res)
	st := p.State()
	now := c.h.K.Elapsed()
	gen, upSince := c.stc.agentGen, c.stc.upSince
	if st.Epoch != w.epoch {
		w.epoch, w.epochAt[st.Epoch] = st.Epoch, now
	}
	if st.Lists != w.lists {
		w.lists, w.listGen, w.stopsSinceList = st.Lists, gen, 0
	}
	if st.Stops != w.stops {
		w.stopsSinceList += st.Stops - w.stops
		w.stops, w.stopAt = st.Stops, now
	}
	c.checkPluginCalls(res, p.Calls(), w, now)

	capacity, capOK, alloc, allocOK := c.nodeResource(res)
	w.seen = w.seen || capOK
	if st.OptionsOK == 0 && capOK {
		c.failOnce("device-plugin-down", "unregistered "+res, "resource %s is on the node (capacity %d) though its plugin never answered GetDevicePluginOptions", res, capacity)
	}
	if gen < 0 || !st.Down {
		return
	}
	from := max(w.epochAt[st.Epoch], upSince)
	if now-from <= deviceStatusBound {
		return
	}
	if allocOK && alloc != 0 {
		c.failOnce("device-plugin-down", fmt.Sprintf("alloc %s %d", res, st.Epoch), "node allocatable of %s is %d, %v after its plugin went down (down since +%v, agent up since +%v)", res, alloc, now-from, w.epochAt[st.Epoch], upSince)
	}
	if w.stops == 0 {
		return
	}
	graceFrom := max(w.stopAt, upSince)
	switch {
	case now-graceFrom > upstreamDeviceGrace+deviceStatusBound:
		if (w.seen && !capOK) || capacity != 0 {
			c.failOnce("device-plugin-down", fmt.Sprintf("removed %s %d", res, w.stops), "%v after its plugin's stream stopped, past the %v grace, node capacity of %s is %s, want 0", now-graceFrom, upstreamDeviceGrace, res, quantityText(capacity, capOK))
		}
	case w.stopsSinceList == 1 && w.listGen == gen && now < w.stopAt+upstreamDeviceGrace-lateCallSlack:
		if !capOK || capacity != int64(st.Devices) {
			c.failOnce("device-plugin-down", fmt.Sprintf("kept %s %d", res, w.stops), "%v after its plugin's stream stopped, within the %v grace, node capacity of %s is %s, want the %d devices it listed", now-w.stopAt, upstreamDeviceGrace, res, quantityText(capacity, capOK), st.Devices)
		}
	}
}

// quantityText shows a resource quantity or its absence.
func quantityText(n int64, ok bool) string {
	if !ok {
		return "absent"
	}
	return fmt.Sprint(n)
}

// checkPluginCalls judges the plugin's calls not yet judged.
func (c *Checker) checkPluginCalls(res string, calls []deviceplugin.Call, w *pluginWatch, now time.Duration) {
	for ; w.calls < len(calls); w.calls++ {
		call := calls[w.calls]
		switch call.Method {
		case "GetDevicePluginOptions":
			if call.Err == "" {
				w.registrations++
			}
		case "ListAndWatch":
			if w.registrations == 0 {
				c.failOnce("device-plugin-down", fmt.Sprintf("relist %s %d", res, w.calls), "plugin of %s got ListAndWatch (call %d) without a registration whose GetDevicePluginOptions succeeded: a stream that ended was listened to again, or a refused plugin used", res, w.calls+1)
				continue
			}
			w.registrations--
		default:
			if seen, ok := w.epochAt[call.Epoch]; call.Down && ok && now-seen > lateCallSlack {
				c.failOnce("device-plugin-down", fmt.Sprintf("late %s %d", res, w.calls), "plugin of %s got %s (call %d) %v after it went down", res, call.Method, w.calls+1, now-seen)
			}
		}
	}
}
