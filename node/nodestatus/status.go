package nodestatus

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// runStatus is the "node register+status" task: it registers the node,
// then computes the status every StatusUpdateFrequency and writes it when
// needed.
func (m *Manager) runStatus(ctx context.Context) {
	if !m.register(ctx) {
		return
	}
	// The lease is created once the Node is known, so that the Node owns
	// it from its creation, as upstream's does (the conformance suite
	// checks every lease's owner). From then on it renews on its own,
	// whatever the status loop is doing.
	m.d.Tasks.Go("node lease", func() { m.runLease(ctx) })
	tk := m.d.Tasks.NewTicker("node status", m.cfg.StatusUpdateFrequency)
	defer tk.Stop()
	m.mu.Lock()
	m.statusCtx = ctx
	m.mu.Unlock()
	for {
		m.syncSerialized(ctx)
		if tk.Wait(ctx) != nil {
			return
		}
	}
}

// SyncNow writes the node status at once, on a task of its own, without
// waiting for the next update (the node starts or stops shutting down).
// Before registration it does nothing: the first status follows it.
func (m *Manager) SyncNow() {
	m.mu.Lock()
	ctx := m.statusCtx
	m.mu.Unlock()
	if ctx == nil || !m.Registered() {
		return
	}
	m.d.Tasks.Go("node status now", func() { m.syncSerialized(ctx) })
}

// syncSerialized runs syncStatus, never two at once: asked while one runs,
// it has that one run again when it ends.
func (m *Manager) syncSerialized(ctx context.Context) {
	m.mu.Lock()
	if m.syncing {
		m.syncAgain = true
		m.mu.Unlock()
		return
	}
	m.syncing = true
	m.mu.Unlock()
	for {
		m.syncStatus(ctx)
		m.mu.Lock()
		again := m.syncAgain && ctx.Err() == nil
		m.syncAgain = false
		if !again {
			m.syncing = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
}

// register creates the Node, or adopts the one that exists, retrying with
// a back-off of 100 ms doubling to 7 s until it succeeds. It reports false
// when ctx ended first.
func (m *Manager) register(ctx context.Context) bool {
	retry := backoff.Curve{Initial: registerBackoffInitial, Max: registerBackoffMax}
	for {
		err := m.tryRegister(ctx)
		if m.ports.Metrics != nil {
			m.ports.Metrics.ObserveRegistrationAttempt()
		}
		m.mu.Lock()
		m.regErr = err
		m.mu.Unlock()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		delay := retry.Next()
		m.log.Warn("node registration failed, will retry", "err", err, "retryIn", delay)
		if m.d.Tasks.Sleep(ctx, delay) != nil {
			return false
		}
	}
}

// tryRegister makes one registration attempt.
func (m *Manager) tryRegister(ctx context.Context) error {
	if m.cfg.NoRegister {
		return m.tryAdopt(ctx)
	}
	m.checkRuntime(ctx)
	f, err := m.gather(ctx)
	if err != nil {
		return err
	}
	node := newNode(m.cfg, f)
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	created, err := m.ports.Nodes.CreateNode(cctx, node)
	cancel()
	if err == nil && m.d.Fault(deps.FaultRegisterReplyLost) {
		return fmt.Errorf("register node %q: %w", m.cfg.NodeName, deps.FaultRegisterReplyLost.Err())
	}
	if err == nil {
		m.registeredAs(created, f)
		m.log.Info("node registered", "uid", created.UID)
		m.conditionEvents(nil, &created.Status)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %q: %w", m.cfg.NodeName, err)
	}
	cctx, cancel = m.d.Clock.WithTimeout(ctx, m.timeout)
	existing, err := m.ports.Nodes.GetNode(cctx, m.cfg.NodeName)
	cancel()
	if err != nil {
		return fmt.Errorf("register node %q: it exists but reading it failed: %w", m.cfg.NodeName, err)
	}
	m.mu.Lock()
	m.registered, m.uid, m.written = true, existing.UID, existing
	m.mu.Unlock()
	m.log.Info("node already registered, adopting it", "uid", existing.UID)
	return nil
}

// tryAdopt looks for the Node an administrator creates
// (--register-node=false) and adopts it once it exists.
func (m *Manager) tryAdopt(ctx context.Context) error {
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	existing, err := m.ports.Nodes.GetNode(cctx, m.cfg.NodeName)
	cancel()
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("node %q does not exist yet: with --register-node=false an administrator creates it; its status and lease are written once it does", m.cfg.NodeName)
	}
	if err != nil {
		return fmt.Errorf("read node %q (--register-node=false): %w", m.cfg.NodeName, err)
	}
	m.mu.Lock()
	m.registered, m.uid = true, existing.UID
	m.mu.Unlock()
	m.log.Info("node created by an administrator found, adopting it", "uid", existing.UID)
	return nil
}

// registeredAs records a node this agent created with facts f.
func (m *Manager) registeredAs(n *corev1.Node, f facts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registered, m.uid, m.lastReport, m.written = true, n.UID, f.now, n
}

// gather collects the facts of a status now. Machine info is read once;
// the filesystem size every time and the runtime version until known,
// both best effort.
func (m *Manager) gather(ctx context.Context) (facts, error) {
	m.mu.Lock()
	info, ver := m.info, m.runtimeVer
	m.mu.Unlock()
	if info != nil && m.d.Fault(deps.FaultMachineInfoReread) {
		info = nil // read again, as the kubelet's cadvisor does
	}
	if info == nil {
		cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
		i, err := m.ports.Machine.Info(cctx)
		cancel()
		if err != nil {
			return facts{}, fmt.Errorf("machine info of node %q: %w", m.cfg.NodeName, err)
		}
		info = &i
	}
	if ver == "" {
		cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
		v, err := m.ports.Runtime.Version(cctx, "v1")
		cancel()
		if err != nil {
			m.log.Warn("container runtime version unknown", "err", err)
		} else {
			ver = v.GetRuntimeName() + "://" + v.GetRuntimeVersion()
		}
	}
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	u, uerr := m.ports.Machine.Usage(cctx)
	cancel()

	m.mu.Lock()
	m.info, m.runtimeVer = info, ver
	if uerr == nil && u.NodeFSCapacityBytes > 0 {
		m.fsCapacity = u.NodeFSCapacityBytes
	}
	fsCap := m.fsCapacity
	m.mu.Unlock()
	if uerr != nil {
		m.log.Warn("machine usage unknown", "err", uerr)
	}

	f := facts{
		now:            m.d.Clock.Now(),
		info:           *info,
		fsCapacity:     fsCap,
		runtimeVersion: ver,
		ready:          m.readiness(),
		images:         m.images(ctx),
	}
	m.mu.Lock()
	f.handlers, f.features = m.handlers, m.features
	m.mu.Unlock()
	if m.cfg.Pressure != nil {
		f.memoryPressure, f.diskPressure, f.pidPressure = m.cfg.Pressure.NodePressure()
	}
	if m.cfg.Devices != nil {
		f.devCapacity, f.devAllocatable, f.devRemoved = m.cfg.Devices.Resources()
	}
	return f, nil
}

// images lists the node's images for the status; nil (keep the old list)
// without an image service or when the listing fails.
func (m *Manager) images(ctx context.Context) []corev1.ContainerImage {
	if m.ports.Images == nil {
		return nil
	}
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	imgs, err := m.ports.Images.ListImages(cctx, nil)
	cancel()
	if err != nil {
		m.log.Warn("listing images for the node status failed", "err", err)
		return nil
	}
	return nodeImages(imgs, m.cfg.MaxImages)
}

// syncStatus computes the status and writes it when it changed or a
// report is due, trying up to statusUpdateRetries times.
func (m *Manager) syncStatus(ctx context.Context) {
	m.checkRuntime(ctx)
	var err error
	for i := range statusUpdateRetries {
		if err = m.tryUpdateStatus(ctx); err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("updating node status failed, will retry", "attempt", i+1, "err", err)
	}
	m.log.Error("updating node status failed", "attempts", statusUpdateRetries, "err", err)
}

// errNotRegistered is returned by a sync that runs before registration.
var errNotRegistered = errors.New("not registered")

// tryUpdateStatus computes the status on top of the node as last written
// and patches the difference if needed. The node is read only when this
// process has neither created nor written it, or its last write failed.
func (m *Manager) tryUpdateStatus(ctx context.Context) error {
	if !m.Registered() {
		return errNotRegistered
	}
	f, err := m.gather(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	node := m.written
	m.mu.Unlock()
	if node == nil {
		cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
		node, err = m.ports.Nodes.GetNode(cctx, m.cfg.NodeName)
		cancel()
		if err != nil {
			return fmt.Errorf("get node %q: %w", m.cfg.NodeName, err)
		}
	}
	m.mu.Lock()
	m.uid, m.written = node.UID, node
	due := !f.now.Before(m.lastReport.Add(m.cfg.StatusReportFrequency))
	m.mu.Unlock()

	status := buildStatus(m.cfg, &node.Status, f)
	if !due && m.d.Fault(deps.FaultNodeStatusReportEarly) {
		due = true // reported early, as after a restart of the agent
	}
	if !due && !statusChanged(&node.Status, &status) {
		return nil
	}
	patch, err := statusPatch(m.cfg.NodeName, node.Status, status)
	if err != nil {
		return err
	}
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	out, err := m.ports.Nodes.PatchNodeStatus(cctx, m.cfg.NodeName, patch)
	cancel()
	if err == nil && m.d.Fault(deps.FaultNodeStatusReplyLost) {
		out, err = nil, deps.FaultNodeStatusReplyLost.Err()
	}
	if err != nil {
		// The patch may have applied (a reply lost): the next try reads
		// the node again, as the kubelet's does, instead of patching from
		// the old base — a status equal to that base would send nothing
		// and leave the applied patch's fields in place.
		m.mu.Lock()
		m.written = nil
		m.mu.Unlock()
		return fmt.Errorf("patch status of node %q: %w", m.cfg.NodeName, err)
	}
	m.mu.Lock()
	m.lastReport, m.written = f.now, out
	m.mu.Unlock()
	m.conditionEvents(&node.Status, &status)
	return nil
}

// conditionEvents logs and records, as the kubelet does, the changes of
// the node's conditions between the written status before (nil for a new
// node) and after: "Node <node> status is now: <event>" for each pressure
// condition that is new or changed status (NodeHasSufficientMemory,
// NodeHasNoDiskPressure, NodeHasSufficientPID or their opposites), then
// for a change of the Ready condition's status (NodeReady, NodeNotReady).
func (m *Manager) conditionEvents(before, after *corev1.NodeStatus) {
	for _, e := range conditionChanges(before, after) {
		switch e {
		case EventNodeReady:
			m.log.Info("node is Ready")
		case EventNodeNotReady:
			now := findCondition(after, corev1.NodeReady)
			m.log.Warn("node is NotReady", "reason", now.Reason, "message", now.Message)
		}
		m.event(corev1.EventTypeNormal, e, fmt.Sprintf("Node %s status is now: %s", m.cfg.NodeName, e))
	}
}
