package scenarios

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
)

// deviceStatusBound is how long the Node's allocatable may count more
// devices than are healthy while the agent runs: a status update period
// (10 s), its write, and slack.
const deviceStatusBound = 30 * time.Second

// deviceChecks is what devices-once remembers.
type deviceChecks struct {
	// overSince: when allocatable was first seen above the healthy count
	// (by resource); absent while it is not.
	overSince map[string]time.Duration
	reported  map[string]bool
	// ran: pods the API has shown Running.
	ran map[types.UID]bool
	// plugins: what device-plugin-down remembers, by resource.
	plugins map[string]*pluginWatch
	// listed: the extended resources the Node has ever shown (capacity
	// or allocatable, any value), by the writes the checker saw.
	listed map[corev1.ResourceName]bool
	// deviceless: by pod, the extended resources it requested that the
	// Node had never shown when the pod was created (upstream's
	// admission may drop them: the pod may run without their devices).
	deviceless map[types.UID]map[string]bool
}

func newDeviceChecks() *deviceChecks {
	return &deviceChecks{overSince: map[string]time.Duration{}, reported: map[string]bool{}, ran: map[types.UID]bool{},
		listed: map[corev1.ResourceName]bool{}, deviceless: map[types.UID]map[string]bool{}}
}

// onWriteDeviceNode records the extended resources the Node shows.
func (c *Checker) onWriteDeviceNode(r apiserver.Record) {
	if r.Node == nil || r.Node.Name != c.h.NodeName {
		return
	}
	for _, l := range []corev1.ResourceList{r.Node.Status.Capacity, r.Node.Status.Allocatable} {
		for name := range l {
			c.dv.listed[name] = true
		}
	}
}

// notePodDevices records, when pod is first seen, the resources it
// requests that the Node never showed: upstream's admission takes the
// Node's allocatable from its own copy of the Node
// (removeMissingExtendedResources drops a request of an extended
// resource the Node lacks, so the pod runs without those devices); once
// the Node has shown a resource (a removed device resource stays at 0),
// a pod asking for it gets its devices or is refused. The moment of the
// pod's creation stands for its admission: the kubelet admits no API pod
// before its Node informer has synced, and no later than the pod exists.
func (c *Checker) notePodDevices(p *corev1.Pod) {
	if _, seen := c.dv.deviceless[p.UID]; seen {
		return
	}
	out := map[string]bool{}
	for _, ct := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		for name, q := range ct.Resources.Limits {
			if q.Value() <= 0 || c.dv.listed[name] {
				continue
			}
			// Writes before the checker existed: the Node as it is.
			if _, capOK, _, allocOK := c.nodeResource(string(name)); capOK || allocOK {
				c.dv.listed[name] = true
				continue
			}
			out[string(name)] = true
		}
	}
	c.dv.deviceless[p.UID] = out
}

// onWriteDevices checks the last part of devices-once: a pod that ran is
// never refused for devices afterwards (an agent restart re-admits it on
// the devices it holds, its plugin registered again or not), but one
// that may have run without them (created before the Node showed the
// resource).
func (c *Checker) onWriteDevices(r apiserver.Record) {
	plugins := c.h.DevicePlugins()
	if r.Pod == nil || len(plugins) == 0 {
		return
	}
	p := r.Pod
	c.notePodDevices(p)
	if p.Status.Phase == corev1.PodRunning {
		c.dv.ran[p.UID] = true
		return
	}
	if p.Status.Phase != corev1.PodFailed || !c.dv.ran[p.UID] {
		return
	}
	refused := p.Status.Reason == "UnexpectedAdmissionError"
	for _, pl := range plugins {
		res := pl.Registration().ResourceName
		if c.dv.deviceless[p.UID][res] {
			// It ran without the devices (the Node lacked the resource);
			// upstream admits every pod again at a restart, against the
			// Node that now shows it, and refuses it.
			return
		}
		refused = refused || p.Status.Reason == "OutOf"+res
	}
	if refused {
		c.failOnce("devices-once", "refused "+string(p.UID), "pod %s/%s ran, then was refused: %s: %s", p.Namespace, p.Name, p.Status.Reason, p.Status.Message)
	}
}

// checkDevices checks devices-once: no device is in two running
// containers' configs (the sample plugin's <RESOURCE>_DEVICE variable
// lists a container's devices); every running container holds exactly the
// devices it requested, and they are a set the plugin itself allocated
// (an Allocate call in its own record), unless the Node had never shown
// the resource when its pod was created (notePodDevices); and, while the
// agent runs, the Node's allocatable never counts more devices than are
// healthy for longer than deviceStatusBound (see also onWriteDevices);
// and device-plugin-down (invariants_devplug.go).
func (c *Checker) checkDevices(truth []RuntimeContainer) {
	plugins := c.h.DevicePlugins()
	if len(plugins) == 0 {
		return
	}
	for _, p := range plugins {
		c.checkDeviceHolders(p, truth)
		c.checkDeviceAllocatable(p)
		c.checkPluginDown(p)
	}
}

func (c *Checker) checkDeviceHolders(p *deviceplugin.Plugin, truth []RuntimeContainer) {
	res := p.Registration().ResourceName
	env := deviceplugin.EnvName(res)
	holder := map[string]string{}
	var allocated map[string]bool // the plugin's allocations, read once needed
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		cfg, ok := c.h.Runtime.TrueContainerConfigView(ct.ID)
		if !ok {
			continue
		}
		var ids []string
		for _, kv := range cfg.GetEnvs() {
			if kv.GetKey() == env && len(kv.GetValue()) > 0 {
				ids = strings.Split(string(kv.GetValue()), ",")
			}
		}
		key := string(ct.PodUID) + "/" + ct.Name
		want := c.deviceRequest(ct.PodUID, ct.Name, res)
		excused := want > 0 && c.dv.deviceless[ct.PodUID][res]
		if want >= 0 && want != len(ids) && !excused {
			c.failOnce("devices-once", "short "+ct.ID, "container %s (%s) runs with %d devices of %s %v, requested %d", key, ct.ID, len(ids), res, ids, want)
		}
		if len(ids) > 0 && !excused {
			if allocated == nil {
				allocated = map[string]bool{}
				for _, a := range p.Allocations() {
					allocated[strings.Join(slices.Sorted(slices.Values(a)), ",")] = true
				}
			}
			if !allocated[strings.Join(slices.Sorted(slices.Values(ids)), ",")] {
				c.failOnce("devices-once", "unallocated "+ct.ID, "container %s (%s) runs with devices %v of %s that the plugin never allocated together", key, ct.ID, ids, res)
			}
		}
		for _, id := range ids {
			if other, ok := holder[id]; ok && other != key {
				c.failOnce("devices-once", "twice "+id+" "+ct.ID, "device %s of %s is in two running containers: %s and %s", id, res, other, key)
			}
			holder[id] = key
		}
	}
}

// deviceRequest is how many devices of res container name of pod uid
// requests, from the pod's latest API object (-1 when unknown: no check).
func (c *Checker) deviceRequest(uid types.UID, name, res string) int {
	p, ok := c.cg.pods[uid]
	if !ok {
		return -1
	}
	for _, ct := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		if ct.Name == name {
			q := ct.Resources.Limits[corev1.ResourceName(res)]
			return int(q.Value())
		}
	}
	return -1
}

func (c *Checker) checkDeviceAllocatable(p *deviceplugin.Plugin) {
	res := p.Registration().ResourceName
	now := c.h.K.Elapsed()
	healthy := 0
	if !p.Dead() {
		for _, d := range p.Devices() {
			if d.Healthy {
				healthy++
			}
		}
	}
	var alloc int64
	for _, n := range c.h.API.User().Nodes() {
		if n.Name == c.h.NodeName {
			q := n.Status.Allocatable[corev1.ResourceName(res)]
			alloc = q.Value()
		}
	}
	if c.h.Agent() == nil || alloc <= int64(healthy) {
		delete(c.dv.overSince, res)
		return
	}
	since, ok := c.dv.overSince[res]
	if !ok {
		c.dv.overSince[res] = now
		return
	}
	if now-since > deviceStatusBound {
		c.failOnce("devices-once", "alloc "+res, "node allocatable counts %d devices of %s, only %d healthy, for %v", alloc, res, healthy, now-since)
	}
}
