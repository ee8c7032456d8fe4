package apiserver

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Single-object watches of configMaps, secrets and the node's own Node. A
// watch reports the
// object's state when it opened, then each newer state (consecutive
// changes between two Next calls coalesce into the latest, as a
// reflector's store would); a missing object is nil. The faults that
// break pod watches (DropWatches, Down) break these too.

// objWatch is one open watch on a configMap, secret or node.
type objWatch struct {
	s *Server
	// resource is "configmaps", "secrets" or "nodes"; key the object's
	// namespace/name (a node's name alone).
	resource string
	key      string
	sig      deps.Signal
	started  bool
	seen     string // resource version last returned ("" missing)
	drops    uint64 // Server.objDrops when opened
	stopped  bool
}

// WatchConfigMap opens a watch on one configMap a pod bound to the node
// refers to.
func (s *Server) WatchConfigMap(ctx context.Context, namespace, name string) (deps.ObjectWatch[*corev1.ConfigMap], error) {
	w, err := s.openObjWatch(ctx, "configmaps", namespace, name)
	if err != nil {
		return nil, err
	}
	return typedWatch[*corev1.ConfigMap]{w, func() (*corev1.ConfigMap, string) {
		if cm := s.objs.configMaps[w.key]; cm != nil {
			return cm.DeepCopy(), cm.ResourceVersion
		}
		return nil, ""
	}}, nil
}

// WatchSecret opens a watch on one secret a pod bound to the node refers
// to.
func (s *Server) WatchSecret(ctx context.Context, namespace, name string) (deps.ObjectWatch[*corev1.Secret], error) {
	w, err := s.openObjWatch(ctx, "secrets", namespace, name)
	if err != nil {
		return nil, err
	}
	return typedWatch[*corev1.Secret]{w, func() (*corev1.Secret, string) {
		if sec := s.objs.secrets[w.key]; sec != nil {
			return sec.DeepCopy(), sec.ResourceVersion
		}
		return nil, ""
	}}, nil
}

// WatchNode opens a watch on a node; under Node authorization only on the
// node's own Node.
func (s *Server) WatchNode(ctx context.Context, name string) (deps.ObjectWatch[*corev1.Node], error) {
	w, err := s.openObjWatch(ctx, "nodes", "", name)
	if err != nil {
		return nil, err
	}
	return typedWatch[*corev1.Node]{w, func() (*corev1.Node, string) {
		if n := s.nodes[w.key]; n != nil {
			return n.DeepCopy(), n.ResourceVersion
		}
		return nil, ""
	}}, nil
}

func (s *Server) openObjWatch(ctx context.Context, resource, namespace, name string) (*objWatch, error) {
	k := key(namespace, name)
	if resource == "nodes" {
		k = name
	}
	if err := s.request(ctx, VerbWatch, fmt.Sprintf("%s %s", resource, k)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	switch resource {
	case "configmaps":
		if err := s.authorizeReferenced(resource, namespace, name, refersToConfigMap); err != nil {
			return nil, err
		}
	case "secrets":
		if err := s.authorizeReferenced(resource, namespace, name, refersToSecret); err != nil {
			return nil, err
		}
	case "nodes":
		if s.node != "" && name != s.node {
			return nil, s.forbidden(VerbWatch, "nodes", name, fmt.Sprintf("node %q may only watch its own Node", s.node))
		}
	}
	w := &objWatch{s: s, resource: resource, key: k, drops: s.objDrops,
		sig: s.tasks.NewSignal(fmt.Sprintf("watch %s %s", resource, k))}
	s.objWatches = append(s.objWatches, w)
	if resource != "nodes" {
		s.objWatchCount[resource]++
	}
	return w, nil
}

// notifyObjWatchesLocked wakes the watches of one object of resource
// (every watch when key is ""). Caller holds mu.
func (s *Server) notifyObjWatchesLocked(resource, key string) {
	for _, w := range s.objWatches {
		if key == "" || w.resource == resource && w.key == key {
			w.sig.Notify()
		}
	}
}

// breakObjWatchesLocked ends every open object watch with an error at its
// next Next. Caller holds mu.
func (s *Server) breakObjWatchesLocked() int {
	s.objDrops++
	n := len(s.objWatches)
	s.notifyObjWatchesLocked("", "")
	return n
}

// typedWatch gives an objWatch its object type.
type typedWatch[T any] struct {
	w       *objWatch
	current func() (T, string) // under mu
}

func (t typedWatch[T]) Next(ctx context.Context) (T, error) {
	w, s := t.w, t.w.s
	var zero T
	for {
		s.mu.Lock()
		switch {
		case w.stopped:
			s.mu.Unlock()
			return zero, fmt.Errorf("watch %s: stopped", w.key)
		case s.faults.down:
			s.mu.Unlock()
			return zero, s.refused(VerbWatch, w.key)
		case w.drops != s.objDrops:
			s.mu.Unlock()
			return zero, fmt.Errorf("watch %s: connection dropped: %w", w.key, io.ErrUnexpectedEOF)
		}
		obj, rv := t.current()
		if !w.started || rv != w.seen {
			w.started, w.seen = true, rv
			s.mu.Unlock()
			s.response()
			return obj, nil
		}
		s.mu.Unlock()
		if err := w.sig.Wait(ctx); err != nil {
			return zero, err
		}
	}
}

func (t typedWatch[T]) Stop() {
	w, s := t.w, t.w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	for i, o := range s.objWatches {
		if o == w {
			s.objWatches = append(s.objWatches[:i], s.objWatches[i+1:]...)
			break
		}
	}
	w.sig.Notify()
}

// ObjectRequests counts the agent's requests about configMaps and secrets
// so far, by verb ("get" reads, "watch" watches opened).
func (u *User) ObjectRequests() map[string]int {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.objWatchCount {
		out["watch "+k] = v
	}
	for k, v := range s.objGetCount {
		out["get "+k] = v
	}
	return out
}

// OpenObjectWatches is how many configMap and secret watches are open.
func (u *User) OpenObjectWatches() int {
	return u.s.openWatches(func(resource string) bool { return resource != "nodes" })
}

// OpenNodeWatches is how many Node watches are open.
func (u *User) OpenNodeWatches() int {
	return u.s.openWatches(func(resource string) bool { return resource == "nodes" })
}

func (s *Server) openWatches(of func(resource string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.objWatches {
		if of(w.resource) {
			n++
		}
	}
	return n
}
