package main

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// IgnoreLabel marks pods the comparison skips (a scenario's filler pods),
// named FillerPrefix-<n> (their events are skipped by that name).
const (
	IgnoreLabel  = "diff.lockstep.dev/ignore"
	FillerPrefix = "filler-"
)

// recorder watches pods (per node), events and nodes, and appends what it
// sees to the recording of the scenario whose namespace it is in (or of
// the node), each with the time since that recording's start.
type recorder struct {
	mu    sync.Mutex
	byNS  map[string]*liveRecording
	nodes map[string]*liveNode
}

// liveRecording is one node's recording of a running scenario.
type liveRecording struct {
	start time.Time
	norm  *normaliser
	rec   Recording
	// events by the Event object's UID (its count grows in place).
	events map[string]EventRecord
	// uids of the scenario's pods by their normalised name.
	uids map[string]string
}

// liveNode is a node's recording over the whole run.
type liveNode struct {
	start  time.Time
	norm   *normaliser
	states []Observed[NodeState]
	events map[string]EventRecord
}

func newRecorder() *recorder {
	return &recorder{byNS: map[string]*liveRecording{}, nodes: map[string]*liveNode{}}
}

// watchNode records node name's own state and events from now.
func (r *recorder) watchNode(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[name] = &liveNode{start: time.Now(), norm: newNormaliser(name, "\x00"), events: map[string]EventRecord{}}
}

// begin starts node's recording of a scenario in namespace ns.
func (r *recorder) begin(node, ns string) *liveRecording {
	lr := &liveRecording{start: time.Now(), norm: newNormaliser(node, ns),
		rec: Recording{Node: node, Pods: map[string][]Observed[PodState]{}}, events: map[string]EventRecord{}, uids: map[string]string{}}
	r.mu.Lock()
	r.byNS[ns] = lr
	r.mu.Unlock()
	return lr
}

// end stops the recording of namespace ns and returns it.
func (r *recorder) end(ns string) Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	lr := r.byNS[ns]
	delete(r.byNS, ns)
	for _, e := range lr.events {
		lr.rec.Events = append(lr.rec.Events, e)
	}
	lr.rec.Events = mergeEvents(lr.rec.Events)
	return lr.rec
}

// mergeEvents adds up records of equal key (several Event objects may
// carry the same message) and sorts them by first sight.
func mergeEvents(es []EventRecord) []EventRecord {
	by := map[string]EventRecord{}
	for _, e := range es {
		if o, ok := by[e.key()]; ok {
			o.Count += e.Count
			o.First = min(o.First, e.First)
			by[e.key()] = o
		} else {
			by[e.key()] = e
		}
	}
	out := make([]EventRecord, 0, len(by))
	for _, e := range by {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].First != out[j].First {
			return out[i].First < out[j].First
		}
		return out[i].key() < out[j].key()
	})
	return out
}

// uid returns the UID of the scenario pod named name (normalised), or "".
func (r *recorder) uid(ns, name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lr := r.byNS[ns]; lr != nil {
		return lr.uids[name]
	}
	return ""
}

// addResult appends an action's result to namespace ns's recording.
func (r *recorder) addResult(ns, label, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lr := r.byNS[ns]; lr != nil {
		lr.rec.Results = append(lr.rec.Results, Result{At: time.Since(lr.start), Label: label, Text: lr.norm.String(text)})
	}
}

// pod records a pod's state (gone: deleted).
func (r *recorder) pod(p *v1.Pod, gone bool) {
	if p.Labels[IgnoreLabel] == "true" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	lr := r.byNS[p.Namespace]
	if lr == nil {
		return
	}
	lr.norm.addUID(string(p.UID))
	// Mirror pods are named <name>-<node>.
	name := lr.norm.String(p.Name)
	lr.uids[name] = string(p.UID)
	st := observePod(p, lr.norm)
	st.Gone = gone
	seq := lr.rec.Pods[name]
	if len(seq) > 0 && cmp.Equal(seq[len(seq)-1].State, st) {
		return
	}
	lr.rec.Pods[name] = append(seq, Observed[PodState]{At: time.Since(lr.start), State: st})
}

// event records an Event's latest count.
func (r *recorder) event(e *v1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := max(e.Count, 1)
	if e.Series != nil {
		count = max(count, e.Series.Count)
	}
	if e.InvolvedObject.Kind == "Node" {
		ln := r.nodes[e.InvolvedObject.Name]
		if ln == nil {
			return
		}
		ln.events[string(e.UID)] = eventRecord(e, ln.norm, count, ln.start, ln.events[string(e.UID)])
		return
	}
	lr := r.byNS[e.InvolvedObject.Namespace]
	if lr == nil || (e.InvolvedObject.Kind == "Pod" && strings.HasPrefix(e.InvolvedObject.Name, FillerPrefix)) {
		return
	}
	if e.InvolvedObject.UID != "" {
		lr.norm.addUID(string(e.InvolvedObject.UID))
	}
	lr.events[string(e.UID)] = eventRecord(e, lr.norm, count, lr.start, lr.events[string(e.UID)])
}

func eventRecord(e *v1.Event, n *normaliser, count int32, start time.Time, prev EventRecord) EventRecord {
	obj := e.InvolvedObject.Kind + "/" + n.String(e.InvolvedObject.Name)
	if e.InvolvedObject.FieldPath != "" {
		obj += " " + e.InvolvedObject.FieldPath
	}
	first := time.Since(start)
	if prev.Reason != "" {
		first = prev.First
	}
	return EventRecord{Object: obj, Type: e.Type, Reason: e.Reason, Message: n.String(e.Message), Count: count, First: first}
}

// node records a node's state.
func (r *recorder) node(no *v1.Node, gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ln := r.nodes[no.Name]
	if ln == nil {
		return
	}
	st := observeNode(no, ln.norm)
	st.Gone = gone
	if len(ln.states) > 0 && cmp.Equal(ln.states[len(ln.states)-1].State, st) {
		return
	}
	ln.states = append(ln.states, Observed[NodeState]{At: time.Since(ln.start), State: st})
}

// nodeRecording returns a node's states and events so far.
func (r *recorder) nodeRecording(name string) ([]Observed[NodeState], []EventRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ln := r.nodes[name]
	var es []EventRecord
	for _, e := range ln.events {
		es = append(es, e)
	}
	return append([]Observed[NodeState](nil), ln.states...), mergeEvents(es)
}

// startInformers watches the nodes, every event, and each node's pods,
// feeding r, until stop closes; it returns once the caches have synced.
func (r *recorder) startInformers(c kubernetes.Interface, nodes []string, stop <-chan struct{}) {
	all := informers.NewSharedInformerFactory(c, 0)
	podOf := func(obj any) (*v1.Pod, bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		p, ok := obj.(*v1.Pod)
		return p, ok
	}
	_, _ = all.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.event(o.(*v1.Event)) },
		UpdateFunc: func(_, o any) { r.event(o.(*v1.Event)) },
	})
	_, _ = all.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.node(o.(*v1.Node), false) },
		UpdateFunc: func(_, o any) { r.node(o.(*v1.Node), false) },
	})
	all.Start(stop)
	all.WaitForCacheSync(stop)
	for _, n := range nodes {
		f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", n).String()
		}))
		_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { r.pod(o.(*v1.Pod), false) },
			UpdateFunc: func(_, o any) { r.pod(o.(*v1.Pod), false) },
			DeleteFunc: func(o any) {
				if p, ok := podOf(o); ok {
					r.pod(p, true)
				}
			},
		})
		f.Start(stop)
		f.WaitForCacheSync(stop)
	}
}
