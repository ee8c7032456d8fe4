package nodestatus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// every returns from, from+step, … up to to (inclusive), in seconds.
func every(from, step, to float64) []time.Duration {
	var out []float64
	for s := from; s <= to; s += step {
		out = append(out, s)
	}
	return secs(out...)
}

func TestLeaseRenewedEveryInterval(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.runCheckingLease(2 * time.Minute)
	if diff := cmp.Diff(every(0, 10, 120), w.leaseWrites(0)); diff != "" {
		t.Errorf("lease writes (-want +got):\n%s", diff)
	}
	if got := w.writes(apiserver.KindLease, apiserver.VerbCreate, 0); !cmp.Equal(secs(0), got) {
		t.Errorf("lease created at %v, want once at 0s", got)
	}
	l := w.lease()
	holder, dur := nodeName, int32(40)
	renew := metav1.NewMicroTime(w.k.Now())
	if diff := cmp.Diff(&holder, l.Spec.HolderIdentity); diff != "" {
		t.Errorf("holderIdentity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&dur, l.Spec.LeaseDurationSeconds); diff != "" {
		t.Errorf("leaseDurationSeconds (-want +got):\n%s", diff)
	}
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Equal(&renew) {
		t.Errorf("renewTime = %v, want %v", l.Spec.RenewTime, renew)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: w.node().UID}}
	if diff := cmp.Diff(want, l.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
}

func TestLeaseFreshWhileStatusWritesSlow(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(15 * time.Second)
	// Every node status write now takes 2 min and times out after 10 s,
	// and there is a change to write at every computation.
	w.srv.Latency(apiserver.VerbPatchStatus, 2*time.Minute)
	w.pleg.ok, w.pleg.err = false, errors.New("pleg: stuck")
	w.runCheckingLease(5 * time.Minute)
	if got := w.statusWrites(0); len(got) != 0 {
		t.Errorf("status writes at %v while every write times out", got)
	}
	if c := w.ready(); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready in the API = %s, want the stale True (no write got through)", c.Status)
	}
	if ready, _, _ := w.m.Ready(); ready {
		t.Error("Ready() = true with the PLEG unhealthy")
	}
	if diff := cmp.Diff(every(20, 10, 315), w.leaseWrites(15*time.Second)); diff != "" {
		t.Errorf("lease writes while status writes hang (-want +got):\n%s", diff)
	}
	// Once writes are fast again, the status catches up.
	w.srv.Latency(apiserver.VerbPatchStatus, 0)
	w.runUntil("NotReady written", w.readyIs(corev1.ConditionFalse), time.Minute)
}

func TestLeaseRetriesWithBackoff(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(15 * time.Second)
	// The renewal at 20 s fails, and its retries after 0.2 and 0.4 s;
	// the one after 0.8 more succeeds. The next is back on the interval.
	w.srv.FailWrites(3, nil)
	w.runCheckingLease(20 * time.Second)
	if diff := cmp.Diff(secs(21.4, 30), w.leaseWrites(15*time.Second)); diff != "" {
		t.Errorf("lease writes (-want +got):\n%s", diff)
	}
}

func TestLeaseConflictRereads(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(15 * time.Second)
	// Another writer changes the lease: the agent's copy is stale, its
	// next update conflicts and it must read the lease again.
	w.k.Tasks().Go("other writer", func() {
		l := w.lease()
		l.Labels = map[string]string{"touched": "yes"}
		if _, err := w.srv.UpdateLease(context.Background(), l); err != nil {
			t.Errorf("other writer: %v", err)
		}
	})
	w.runCheckingLease(20 * time.Second)
	if diff := cmp.Diff(secs(15, 20.2, 30), w.leaseWrites(15*time.Second)); diff != "" {
		t.Errorf("lease writes (-want +got):\n%s", diff)
	}
	if got := w.lease().Labels["touched"]; got != "yes" {
		t.Errorf("the other writer's label was lost: labels %v", w.lease().Labels)
	}
	// An injected conflict on a fresh copy is retried the same way.
	w.srv.Conflicts(1)
	w.runCheckingLease(10 * time.Second)
	if diff := cmp.Diff(secs(40.2), w.leaseWrites(35*time.Second)); diff != "" {
		t.Errorf("lease writes (-want +got):\n%s", diff)
	}
}

func TestLeaseAfterAPIOutage(t *testing.T) {
	w := newWorld(t, nil)
	w.start()
	w.run(15 * time.Second)
	w.srv.Down(true)
	w.run(time.Minute)
	w.srv.Down(false)
	// Retries at 20, 20.2, 20.6, 21.4, 23, 26.2, 32.6 s, then every 7 s:
	// 74.6 s failed, 81.6 s succeeds; then back on the 10 s interval.
	w.run(6 * time.Second)
	if got := w.leaseWrites(15 * time.Second); len(got) != 0 {
		t.Errorf("lease writes at %v before the next retry", got)
	}
	w.runCheckingLease(20 * time.Second)
	if diff := cmp.Diff(secs(81.6, 90, 100), w.leaseWrites(15*time.Second)); diff != "" {
		t.Errorf("lease writes (-want +got):\n%s", diff)
	}
}

// TestLeaseCreatedOwnedByTheNode: with the API down at start, the lease is
// not created before the Node, and it carries the Node as owner from its
// creation, as upstream's (the conformance suite lists every lease and
// checks its owner).
func TestLeaseCreatedOwnedByTheNode(t *testing.T) {
	w := newWorld(t, nil)
	w.srv.Down(true)
	w.start()
	w.run(5 * time.Second)
	if l := w.lease(); l != nil {
		t.Fatalf("lease exists before the Node: %+v", l.ObjectMeta)
	}
	w.srv.Down(false)
	w.runUntil("lease created", func() bool { return w.lease() != nil }, time.Minute)
	nodeCreated := w.writes(apiserver.KindNode, apiserver.VerbCreate, 0)
	leaseCreated := w.writes(apiserver.KindLease, apiserver.VerbCreate, 0)
	if len(nodeCreated) != 1 || len(leaseCreated) != 1 || leaseCreated[0] < nodeCreated[0] {
		t.Fatalf("node created at %v, lease at %v: want one each, the lease not first", nodeCreated, leaseCreated)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: w.node().UID}}
	if diff := cmp.Diff(want, w.lease().OwnerReferences); diff != "" {
		t.Errorf("lease owner at creation (-want +got):\n%s", diff)
	}
}
