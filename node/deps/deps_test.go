package deps_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

type objectStore struct{}

func (objectStore) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil
}

func (objectStore) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil
}

// TestObjectsNeedsBothPorts: API.Objects joins the configMap and secret
// ports, and is nil unless both are there (standalone reads nothing).
func TestObjectsNeedsBothPorts(t *testing.T) {
	var s objectStore
	if o := (deps.API{ConfigMaps: s}).Objects(); o != nil {
		t.Errorf("Objects with no secret port = %v, want nil", o)
	}
	if o := (deps.API{Secrets: s}).Objects(); o != nil {
		t.Errorf("Objects with no configMap port = %v, want nil", o)
	}
	o := deps.API{ConfigMaps: s, Secrets: s}.Objects()
	if o == nil {
		t.Fatal("Objects with both ports = nil")
	}
	cm, err := o.GetConfigMap(context.Background(), "ns", "cm")
	if err != nil || cm.Name != "cm" {
		t.Errorf("GetConfigMap = %v, %v", cm, err)
	}
	sec, err := o.GetSecret(context.Background(), "ns", "s")
	if err != nil || sec.Name != "s" {
		t.Errorf("GetSecret = %v, %v", sec, err)
	}
}

// TestInboxDeliversInOrderAndHonoursCancellation: values come out in the
// order they were put, a waiting Get wakes on Put, and a cancelled context
// ends a Get with its error.
func TestInboxDeliversInOrderAndHonoursCancellation(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	tasks := k.Tasks()
	in := deps.NewInbox[int](tasks, "test")
	var got []int
	var cancelErr error
	ctx, cancel := tasks.WithCancel(context.Background())
	tasks.Go("reader", func() {
		for range 3 {
			v, err := in.Get(context.Background())
			if err != nil {
				t.Errorf("Get: %v", err)
				return
			}
			got = append(got, v)
		}
		_, cancelErr = in.Get(ctx)
	})
	tasks.Go("writer", func() {
		in.Put(1)
		in.Put(2)
		_ = tasks.Sleep(context.Background(), time.Second)
		in.Put(3)
		_ = tasks.Sleep(context.Background(), time.Second)
		cancel()
	})
	if err := k.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if !errors.Is(cancelErr, context.Canceled) {
		t.Errorf("Get after cancel: %v, want context.Canceled", cancelErr)
	}
	if _, ok := in.TryGet(); ok {
		t.Errorf("TryGet on an empty inbox returned a value")
	}
}
