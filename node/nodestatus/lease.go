package nodestatus

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// runLease is the "node lease" task: it renews the lease every
// LeaseRenewInterval, on its own, whatever the status task is doing.
func (m *Manager) runLease(ctx context.Context) {
	tk := m.d.Tasks.NewTicker("node lease renew", m.cfg.LeaseRenewInterval)
	defer tk.Stop()
	for {
		// Late: renewed at the next tick, well within the lease's
		// duration (a lease not yet created is never late).
		if m.lease == nil || !m.d.Fault(deps.FaultLeaseRenewLate) {
			m.syncLease(ctx)
		}
		if tk.Wait(ctx) != nil {
			return
		}
	}
}

// syncLease renews the lease, creating it if it is missing, and retries
// failures with a back-off of 200 ms doubling to 7 s until it succeeds;
// the next renewal is then back on the normal interval.
func (m *Manager) syncLease(ctx context.Context) {
	retry := backoff.Curve{Initial: leaseBackoffInitial, Max: leaseBackoffMax}
	for {
		err := m.renewLease(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		delay := retry.Next()
		m.log.Warn("renewing node lease failed, will retry", "err", err, "retryIn", delay)
		if m.d.Tasks.Sleep(ctx, delay) != nil {
			return
		}
	}
}

// renewLease makes one renewal attempt. It updates the lease it last wrote
// without reading it first (nobody else writes a node's lease); without
// one, or after a conflict, it reads the lease, creating it if missing.
func (m *Manager) renewLease(ctx context.Context) error {
	name := LeaseNamespace + "/" + m.cfg.NodeName
	if m.lease != nil && m.d.Fault(deps.FaultLeaseReread) {
		m.lease = nil // read again, as a restarted agent does
	}
	base := m.lease
	if base == nil {
		cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
		l, err := m.ports.Leases.GetLease(cctx, LeaseNamespace, m.cfg.NodeName)
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
			created, err := m.ports.Leases.CreateLease(cctx, m.newLease(nil))
			cancel()
			if err != nil {
				return fmt.Errorf("create lease %s: %w", name, err)
			}
			m.lease = created
			m.log.Info("node lease created", "lease", name)
			return nil
		case err != nil:
			return fmt.Errorf("get lease %s: %w", name, err)
		}
		base = l
	}
	cctx, cancel := m.d.Clock.WithTimeout(ctx, m.timeout)
	l, err := m.ports.Leases.UpdateLease(cctx, m.newLease(base))
	cancel()
	if err == nil && m.d.Fault(deps.FaultLeaseReplyLost) {
		l, err = nil, deps.FaultLeaseReplyLost.Err()
	}
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			m.lease = nil
		}
		return fmt.Errorf("update lease %s: %w", name, err)
	}
	m.lease = l
	return nil
}

// newLease is base (nil: a new lease) held by this node and renewed now,
// owned by the Node once its UID is known.
func (m *Manager) newLease(base *coordinationv1.Lease) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if base != nil {
		l = base.DeepCopy()
	} else {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Namespace: LeaseNamespace}}
	}
	holder := m.cfg.NodeName
	secs := int32(m.cfg.LeaseDuration.Seconds())
	now := metav1.NewMicroTime(m.d.Clock.Now())
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &now
	if uid := m.nodeUID(); uid != "" && len(l.OwnerReferences) == 0 {
		l.OwnerReferences = []metav1.OwnerReference{nodeOwner(m.cfg.NodeName, uid)}
	}
	return l
}

// nodeOwner is the owner reference to the Node.
func nodeOwner(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: corev1.SchemeGroupVersion.Version, Kind: "Node", Name: name, UID: uid}
}
