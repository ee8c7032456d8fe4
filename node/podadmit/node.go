package podadmit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// nodeMaxAge is how old admission's view of the Node's labels and taints
// may be when the Node is not watched: older, the Node is read again
// before a pod is admitted. Node status writes are patches that read
// nothing, so without this a taint or label an administrator sets would
// never be seen. Idle, no read is made; under churn at most one per
// period.
const nodeMaxAge = 10 * time.Second

// nodeWatchRetry is how long the node watch waits before it opens again
// after a failure (a watch the apiserver closed normally reopens at once).
const nodeWatchRetry = time.Second

// nodeReadTimeout bounds admission's read of the Node.
const nodeReadTimeout = 5 * time.Second

// NodeView keeps admission's copy of the Node (labels and taints): from a
// watch of it when there is one (Run), as the kubelet's node informer
// does, else read from the API at most nodeMaxAge ago.
type NodeView struct {
	core  deps.Core
	name  string
	watch deps.NodeWatchAPI // nil: not watched
	nodes deps.NodeAPI      // nil: no apiserver

	mu     sync.Mutex
	node   *corev1.Node
	readAt time.Time
	// triedAt: when Current last tried to read a watched Node the watch
	// had not reported.
	triedAt time.Time
}

// NewNodeView returns the view of node name through watch and nodes
// (either may be nil).
func NewNodeView(core deps.Core, name string, watch deps.NodeWatchAPI, nodes deps.NodeAPI) *NodeView {
	return &NodeView{core: core, name: name, watch: watch, nodes: nodes}
}

// Watched reports whether the Node is kept from a watch (Run has work).
func (v *NodeView) Watched() bool { return v.watch != nil }

// Run keeps the copy current from a watch of the Node until ctx ends.
func (v *NodeView) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := v.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			continue
		}
		v.core.Log.Warn("node watch failed; opening it again", "node", v.name, "error", err.Error(), "retry", nodeWatchRetry)
		if v.core.Tasks.Sleep(ctx, nodeWatchRetry) != nil {
			return
		}
	}
}

// follow opens one watch of the Node and records each state it reports
// until the watch ends.
func (v *NodeView) follow(ctx context.Context) error {
	w, err := v.watch.WatchNode(ctx, v.name)
	if err != nil {
		return fmt.Errorf("watch node %s: %w", v.name, err)
	}
	defer w.Stop()
	for {
		n, err := w.Next(ctx)
		if err != nil {
			return err
		}
		if n == nil { // not registered yet, or deleted
			continue
		}
		v.keep(n)
	}
}

func (v *NodeView) keep(n *corev1.Node) {
	v.mu.Lock()
	v.node, v.readAt = n, v.core.Clock.Now()
	v.mu.Unlock()
}

// Current is the Node as its watch last reported it (read from the API
// when the watch has reported none yet), or, when it is not watched, as
// read from the API at most nodeMaxAge ago (reading it again when it is
// older); nil when none is known.
func (v *NodeView) Current() *corev1.Node {
	now := v.core.Clock.Now()
	v.mu.Lock()
	node, at := v.node, v.readAt
	v.mu.Unlock()
	// Watched, the Node is read when the watch has not reported it yet
	// (the agent just started), as the kubelet admits API pods only once
	// its node informer has synced; at most once a nodeMaxAge, so that an
	// apiserver out of reach does not hold every admission.
	if v.watch != nil && (node != nil || !v.tryRead(now)) {
		return node
	}
	if node != nil && now.Sub(at) < nodeMaxAge {
		return node
	}
	if fresh, ok := v.Read(); ok {
		return fresh
	}
	return node
}

// tryRead reports whether a read of the unwatched-yet Node may be tried
// at now (none tried for nodeMaxAge), and records the try.
func (v *NodeView) tryRead(now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.triedAt.IsZero() && now.Sub(v.triedAt) < nodeMaxAge {
		return false
	}
	v.triedAt = now
	return true
}

// Read reads the Node from the API now and keeps it.
func (v *NodeView) Read() (*corev1.Node, bool) {
	if v.nodes == nil {
		return nil, false
	}
	ctx, cancel := v.core.Clock.WithTimeout(context.Background(), nodeReadTimeout)
	defer cancel()
	n, err := v.nodes.GetNode(ctx, v.name)
	if err != nil {
		v.core.Log.Warn("admission could not read the node; deciding on the last one read", "error", err.Error())
		return nil, false
	}
	v.keep(n)
	return n, true
}

// NodeFacts are what admission's node is made of besides labels and
// taints.
type NodeFacts struct {
	Name        string
	Allocatable corev1.ResourceList
	// MaxPods is the node's pod capacity (already defaulted).
	MaxPods int
	// Devices are the device plugins' allocatable resources (nil: none).
	Devices corev1.ResourceList
}

// AdmissionNode is the node as admission sees it: its allocatable
// resources with the pod capacity, the extended resources of the Node's
// own allocatable that the device manager does not report (as the
// kubelet's admission reads its Node: a device resource its plugin left,
// shown at 0, still refuses a pod that asks for it after a restart forgot
// the plugin; a resource the Node lacks is no node's, and not checked)
// and the devices, and the labels and taints of the first Node known asks
// for in turn (the watched or read one, then the one the node status last
// wrote; nil: not known), else registered's labels (what the node
// registers with). A source is asked only when those before it know no
// Node.
func AdmissionNode(f NodeFacts, registered func() map[string]string, known ...func() *corev1.Node) admission.Node {
	n := admission.Node{Name: f.Name, Allocatable: f.Allocatable.DeepCopy()}
	if n.Allocatable == nil {
		n.Allocatable = corev1.ResourceList{}
	}
	n.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(int64(f.MaxPods), resource.DecimalSI)
	var node *corev1.Node
	for _, source := range known {
		if node = source(); node != nil {
			break
		}
	}
	if node != nil {
		n.Labels, n.Taints = node.Labels, node.Spec.Taints
		if !teethNodeExtendedIgnored {
			for r, q := range node.Status.Allocatable {
				if _, ours := n.Allocatable[r]; !ours && admission.IsExtendedResourceName(r) {
					n.Allocatable[r] = q.DeepCopy()
				}
			}
		}
	} else {
		n.Labels = registered()
	}
	maps.Copy(n.Allocatable, f.Devices)
	return n
}
