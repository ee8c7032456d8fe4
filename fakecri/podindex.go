package fakecri

import "slices"

// podIndex holds the live sandboxes and containers whose own labels carry
// one value of podUIDLabel, in creation order. A list filtered by that
// label (the kubelet's relist of one pod on a CRI event) reads them
// instead of every object the runtime holds, so its cost grows with the
// pod, not with the node.
type podIndex struct {
	sandboxes  []*sandbox
	containers []*container
}

// indexedPod returns the index entry for selector's pod UID label, and
// whether selector names one. A pod with nothing live has an empty entry.
func (r *Runtime) indexedPod(selector map[string]string) (podIndex, bool) {
	uid, ok := selector[podUIDLabel]
	if !ok {
		return podIndex{}, false
	}
	if e := r.byPod[uid]; e != nil {
		return *e, true
	}
	return podIndex{}, true
}

func (r *Runtime) podEntry(labels map[string]string) *podIndex {
	uid, ok := labels[podUIDLabel]
	if !ok {
		return nil
	}
	e := r.byPod[uid]
	if e == nil {
		e = &podIndex{}
		r.byPod[uid] = e
	}
	return e
}

func (r *Runtime) indexSandbox(sb *sandbox) {
	if e := r.podEntry(sb.config.GetLabels()); e != nil {
		e.sandboxes = append(e.sandboxes, sb)
	}
}

func (r *Runtime) indexContainer(c *container) {
	if e := r.podEntry(c.config.GetLabels()); e != nil {
		e.containers = append(e.containers, c)
	}
}

func (r *Runtime) unindexSandbox(sb *sandbox) {
	uid, ok := sb.config.GetLabels()[podUIDLabel]
	if e := r.byPod[uid]; ok && e != nil {
		e.sandboxes = slices.DeleteFunc(e.sandboxes, func(o *sandbox) bool { return o == sb })
		r.dropEmptyEntry(uid, e)
	}
}

func (r *Runtime) unindexContainer(c *container) {
	uid, ok := c.config.GetLabels()[podUIDLabel]
	if e := r.byPod[uid]; ok && e != nil {
		e.containers = slices.DeleteFunc(e.containers, func(o *container) bool { return o == c })
		r.dropEmptyEntry(uid, e)
	}
}

func (r *Runtime) dropEmptyEntry(uid string, e *podIndex) {
	if len(e.sandboxes) == 0 && len(e.containers) == 0 {
		delete(r.byPod, uid)
	}
}
