package runtimesync

import "sync"

// lastGood remembers the last answer the apiserver gave for each object
// (configMaps and secrets) by key, so that containers
// can still be configured while the apiserver is unreachable, as the
// upstream kubelet's watch-based caches allow. A NotFound answer forgets
// the object.
type lastGood[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// put remembers v under key.
func (c *lastGood[T]) put(key string, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]T{}
	}
	c.m[key] = v
}

// forget drops key.
func (c *lastGood[T]) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// get returns what was last remembered under key.
func (c *lastGood[T]) get(key string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// through calls read and remembers its answer under key; when read fails
// with anything but NotFound (isNotFound) and an earlier answer is known,
// that answer is returned instead of the error.
func (c *lastGood[T]) through(key string, isNotFound func(error) bool, read func() (T, error)) (T, error) {
	v, err := read()
	switch {
	case err == nil:
		c.put(key, v)
	case isNotFound(err):
		c.forget(key)
	default:
		if old, ok := c.get(key); ok {
			return old, nil
		}
	}
	return v, err
}
