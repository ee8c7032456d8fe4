package kube

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func service(ns, name, rv string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// TestListServicesOfAllNamespaces: one list of every namespace, its
// resource version returned.
func TestListServicesOfAllNamespaces(t *testing.T) {
	c, cs := newClient(t)
	cs.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items: []corev1.Service{*service("default", "kubernetes", "1"), *service("web", "front", "7")}}, nil
	})
	svcs, rv, err := c.ListServices(context.Background())
	if err != nil {
		t.Fatalf("ListServices: %v", err)
	}
	if d := cmp.Diff([]*corev1.Service{service("default", "kubernetes", "1"), service("web", "front", "7")}, svcs); d != "" || rv != "42" {
		t.Errorf("services (-want +got):\n%s\nresource version %q, want 42", d, rv)
	}
	lists := actionsOf(cs, "list", "services")
	if len(lists) != 1 || lists[0].GetNamespace() != "" {
		t.Errorf("list actions %v, want one of all namespaces", lists)
	}
}

// TestWatchServices: the watch covers every namespace from the given
// resource version with bookmarks; added, modified and deleted services
// and bookmarks become events carrying their resource version; an ERROR
// event is the API error; a closed watch wraps io.EOF.
func TestWatchServices(t *testing.T) {
	c, cs := newClient(t)
	fw := watch.NewFakeWithChanSize(10, false)
	cs.PrependWatchReactor("services", k8stesting.DefaultWatchReactor(fw, nil))
	w, err := c.WatchServices(context.Background(), "7")
	if err != nil {
		t.Fatalf("WatchServices: %v", err)
	}
	t.Cleanup(w.Stop)
	watches := actionsOf(cs, "watch", "services")
	if len(watches) != 1 {
		t.Fatalf("%d watch actions, want 1", len(watches))
	}
	wa := watches[0].(k8stesting.WatchActionImpl)
	if r := wa.GetWatchRestrictions(); r.ResourceVersion != "7" || wa.GetNamespace() != "" {
		t.Errorf("watch from %q in namespace %q, want from 7 in all namespaces", r.ResourceVersion, wa.GetNamespace())
	}
	fw.Add(service("web", "front", "8"))
	fw.Modify(service("web", "front", "9"))
	fw.Action(watch.Bookmark, service("", "", "10"))
	fw.Delete(service("web", "front", "11"))
	var got []deps.ServiceEvent
	for range 4 {
		ev, err := w.Next(context.Background())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, ev)
	}
	want := []deps.ServiceEvent{
		{Service: service("web", "front", "8"), ResourceVersion: "8"},
		{Service: service("web", "front", "9"), ResourceVersion: "9"},
		{ResourceVersion: "10"},
		{Deleted: true, Service: service("web", "front", "11"), ResourceVersion: "11"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	gone := apierrors.NewResourceExpired("too old resource version: 7 (12)")
	fw.Error(&gone.ErrStatus)
	if _, err := w.Next(context.Background()); !apierrors.IsResourceExpired(err) {
		t.Errorf("after an ERROR event: %v, want ResourceExpired", err)
	}
	fw.Stop()
	if _, err := w.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("after the watch closed: %v, want io.EOF", err)
	}
}
