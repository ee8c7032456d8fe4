package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

func service(ns, name, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip}}
}

// describe is an event as "ADDED|DELETED ns/name ip @rv".
func describe(ev deps.ServiceEvent) string {
	what := "ADDED"
	if ev.Deleted {
		what = "DELETED"
	}
	return fmt.Sprintf("%s %s/%s %s @%s", what, ev.Service.Namespace, ev.Service.Name, ev.Service.Spec.ClusterIP, ev.ResourceVersion)
}

// TestServiceListAndWatch: a watch from the list's resource version
// replays the changes after it and then delivers new ones (a replace, a
// delete) in order; after Compact a watch from an older version expires,
// and DropWatches and Down break an open watch. Every list and watch is
// counted.
func TestServiceListAndWatch(t *testing.T) {
	w := newWorld(t, 4, apiserver.Config{Node: "node-a"}, false)
	w.u.PutService(service("default", "kubernetes", "10.96.0.1"))
	list := call(t, w, func(ctx context.Context) []string {
		svcs, rv, err := w.s.ListServices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{"rv " + rv}
		for _, s := range svcs {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	})
	if d := cmp.Diff([]string{"rv 1", "default/kubernetes"}, list); d != "" {
		t.Errorf("list (-want +got):\n%s", d)
	}
	w.u.PutService(service("web", "front", "10.96.1.1"))
	wt := call(t, w, func(ctx context.Context) deps.ServiceWatch {
		wt, err := w.s.WatchServices(ctx, "1")
		if err != nil {
			t.Fatal(err)
		}
		return wt
	})
	next := func() string {
		return call(t, w, func(ctx context.Context) string {
			ev, err := wt.Next(ctx)
			if err != nil {
				return "error: " + err.Error()
			}
			return describe(ev)
		})
	}
	got := []string{next()}
	w.u.PutService(service("web", "front", "10.96.1.2"))
	if !w.u.DeleteService("web", "front") || w.u.DeleteService("web", "front") {
		t.Error("DeleteService: want true for the service, then false")
	}
	got = append(got, next(), next())
	want := []string{"ADDED web/front 10.96.1.1 @2", "ADDED web/front 10.96.1.2 @3", "DELETED web/front 10.96.1.2 @4"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if n := w.u.OpenServiceWatches(); n != 1 {
		t.Errorf("%d service watches open, want 1", n)
	}
	w.s.DropWatches()
	if err := call(t, w, func(ctx context.Context) error { _, err := wt.Next(ctx); return err }); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Next after DropWatches: %v, want a dropped connection", err)
	}
	w.s.Compact()
	expired := call(t, w, func(ctx context.Context) error {
		wt, err := w.s.WatchServices(ctx, "1")
		if err != nil {
			return err
		}
		defer wt.Stop()
		_, err = wt.Next(ctx)
		return err
	})
	if !apierrors.IsResourceExpired(expired) {
		t.Errorf("watch from before the compaction: %v, want ResourceExpired", expired)
	}
	reqs := w.s.Requests()
	if l, wa := reqs[apiserver.Request{Verb: "list", Resource: "services"}], reqs[apiserver.Request{Verb: "watch", Resource: "services"}]; l != 1 || wa != 2 {
		t.Errorf("requests %v: want 1 list and 2 watches of services", reqs)
	}
}
