package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Tolerances of the comparison.
const (
	// TransitionTolerance: how far apart the same state change may be seen
	// on the two nodes: the kubelet's 1 s relist, its status manager's
	// batching of writes (up to ~1 s more under load) and the watch.
	TransitionTolerance = 2500 * time.Millisecond
	// EventTolerance: how far apart an event may be first seen (its
	// sender batches too).
	EventTolerance = 3 * time.Second
)

// Observed is a state and when it was first seen, since the scenario's start.
type Observed[T any] struct {
	At    time.Duration `json:"at"`
	State T             `json:"state"`
}

// EventRecord is one (object, type, reason, message) an agent reported,
// normalised, its count at the end and when first seen.
type EventRecord struct {
	Object  string        `json:"object"`
	Type    string        `json:"type"`
	Reason  string        `json:"reason"`
	Message string        `json:"message"`
	Count   int32         `json:"count"`
	First   time.Duration `json:"first"`
}

func (e EventRecord) key() string {
	return e.Object + " " + e.Type + " " + e.Reason + " " + e.Message
}

// Result is the text an action or snapshot produced (exec output, logs,
// files the containers see), by label.
type Result struct {
	At    time.Duration `json:"at"`
	Label string        `json:"label"`
	Text  string        `json:"text"`
}

// Recording is what one node showed during one scenario.
type Recording struct {
	Node    string                          `json:"node"`
	Pods    map[string][]Observed[PodState] `json:"pods"`
	Events  []EventRecord                   `json:"events"`
	Results []Result                        `json:"results"`
}

// Difference is one observable difference between the two nodes.
type Difference struct {
	At       time.Duration `json:"at"`
	Where    string        `json:"where"`
	What     string        `json:"what"`
	Kubelet  string        `json:"kubelet"`
	Lockstep string        `json:"lockstep"`
}

func (d Difference) String() string {
	return fmt.Sprintf("%s @%.1fs %s: kubelet %s; lockstep %s", d.Where, d.At.Seconds(), d.What, d.Kubelet, d.Lockstep)
}

// compareRecordings lists every difference between the kubelet's and
// lockstep's recordings of one scenario, earliest first.
func compareRecordings(k, l *Recording, tol time.Duration) []Difference {
	if tol <= 0 {
		tol = TransitionTolerance
	}
	var out []Difference
	for _, pod := range unionKeys(k.Pods, l.Pods) {
		out = append(out, compareTimelines("pod "+pod, k.Pods[pod], l.Pods[pod], tol)...)
	}
	out = append(out, compareEvents(k.Events, l.Events)...)
	out = append(out, compareResults(k.Results, l.Results)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareTimelines aligns two sequences of distinct states (longest
// common subsequence of equal states): a state only one node showed is a
// difference (with the fields it differs in from what the other node
// showed at that time), and so is an equal state seen more than tol apart.
func compareTimelines[T any](where string, k, l []Observed[T], tol time.Duration) []Difference {
	var out []Difference
	pairs := align(k, l)
	ki, li := 0, 0
	for _, p := range append(pairs, [2]int{len(k), len(l)}) {
		for ; ki < p[0]; ki++ {
			other := stateAt(l, k[ki].At)
			out = append(out, Difference{At: k[ki].At, Where: where, What: "state only on kubelet" + transient(k, ki),
				Kubelet: fieldDiff(k[ki].State, other, true), Lockstep: fieldDiff(k[ki].State, other, false)})
		}
		for ; li < p[1]; li++ {
			other := stateAt(k, l[li].At)
			out = append(out, Difference{At: l[li].At, Where: where, What: "state only on lockstep" + transient(l, li),
				Kubelet: fieldDiff(l[li].State, other, false), Lockstep: fieldDiff(l[li].State, other, true)})
		}
		if p[0] == len(k) {
			break
		}
		if d := k[p[0]].At - l[p[1]].At; d > tol || d < -tol {
			out = append(out, Difference{At: min(k[p[0]].At, l[p[1]].At), Where: where,
				What:    fmt.Sprintf("same state %.1fs apart (tolerance %.1fs): %s", abs(d).Seconds(), tol.Seconds(), summarise(k[p[0]].State)),
				Kubelet: fmt.Sprintf("at %.1fs", k[p[0]].At.Seconds()), Lockstep: fmt.Sprintf("at %.1fs", l[p[1]].At.Seconds())})
		}
		ki, li = p[0]+1, p[1]+1
	}
	return out
}

// TransientFor is how long a state may last and still be called
// transient: one an agent's status writer replaced so soon that the other
// agent's may well have coalesced it with the next (W1 in
// docs/fidelity.md). Such a state is still a difference, marked.
const TransientFor = 100 * time.Millisecond

// transient marks a state of seq that the next one replaced within
// TransientFor: " (transient: N ms)"; "" otherwise.
func transient[T any](seq []Observed[T], i int) string {
	if i+1 < len(seq) {
		if d := seq[i+1].At - seq[i].At; d < TransientFor {
			return fmt.Sprintf(" (transient: %d ms)", d.Milliseconds())
		}
	}
	return ""
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// align returns the index pairs of a longest common subsequence of equal
// states.
func align[T any](k, l []Observed[T]) [][2]int {
	n, m := len(k), len(l)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if cmp.Equal(k[i].State, l[j].State) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var pairs [][2]int
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case cmp.Equal(k[i].State, l[j].State):
			pairs = append(pairs, [2]int{i, j})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			i++
		default:
			j++
		}
	}
	return pairs
}

// stateAt is the state seen last at or before at (the first one if none
// yet), or nil when there is none.
func stateAt[T any](seq []Observed[T], at time.Duration) any {
	if len(seq) == 0 {
		return nil
	}
	cur := seq[0].State
	for _, o := range seq {
		if o.At > at {
			break
		}
		cur = o.State
	}
	return cur
}

// flatten turns a state into "path=value" lines: objects by key, lists of
// objects by their "name" or "type".
func flatten(v any) map[string]string {
	out := map[string]string{}
	if v == nil {
		return out
	}
	b, _ := json.Marshal(v)
	var tree any
	_ = json.Unmarshal(b, &tree)
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, c := range t {
				walk(joinPath(prefix, k), c)
			}
		case []any:
			for i, c := range t {
				idx := fmt.Sprint(i)
				if m, ok := c.(map[string]any); ok {
					if n, ok := m["name"].(string); ok {
						idx = n
					} else if n, ok := m["type"].(string); ok {
						idx = n
					}
				}
				if _, ok := c.(map[string]any); ok {
					walk(prefix+"["+idx+"]", c)
				} else {
					out[prefix+"["+idx+"]"] = fmt.Sprint(c)
				}
			}
		default:
			out[prefix] = fmt.Sprint(t)
		}
	}
	walk("", tree)
	return out
}

func joinPath(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// fieldDiff lists the fields in which a differs from b, with a's values
// (mine) or b's (!mine); "(nothing)" when b is nil and !mine.
func fieldDiff(a, b any, mine bool) string {
	if b == nil && !mine {
		return "(nothing yet)"
	}
	fa, fb := flatten(a), flatten(b)
	var keys []string
	for k := range fa {
		if fa[k] != fb[k] {
			keys = append(keys, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "(what the other node showed then: the order of states differs)"
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := fa[k]
		if !mine {
			v, ok = fb[k]
		}
		if !ok {
			v = "(none)"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// summarise is a one-line description of a pod state (phase and each
// container's state) for timing differences.
func summarise(v any) string {
	if p, ok := v.(PodState); ok {
		parts := []string{p.Phase}
		for _, group := range [][]ContainerState{p.Init, p.Containers} {
			for _, c := range group {
				parts = append(parts, fmt.Sprintf("%s:%s ready=%v restarts=%d", c.Name, c.State, c.Ready, c.RestartCount))
			}
		}
		for _, c := range p.Conditions {
			parts = append(parts, c.Type+"="+c.Status)
		}
		if p.Deleting != "" {
			parts = append(parts, "deleting")
		}
		if p.Gone {
			parts = append(parts, "gone")
		}
		return strings.Join(parts, " ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// countTolerance is how far two counts of one repeated event may differ:
// exact up to 2, then a quarter (back-off events repeat on timers that
// drift within the transition tolerance).
func countTolerance(a, b int32) int32 {
	m := max(a, b)
	if m <= 2 {
		return 0
	}
	return max(1, m/4)
}

// compareEvents matches events by object, type, reason and message.
func compareEvents(k, l []EventRecord) []Difference {
	km, lm := map[string]EventRecord{}, map[string]EventRecord{}
	for _, e := range k {
		km[e.key()] = e
	}
	for _, e := range l {
		lm[e.key()] = e
	}
	var out []Difference
	for _, key := range unionKeys(km, lm) {
		ke, kok := km[key]
		le, lok := lm[key]
		switch {
		case !lok:
			out = append(out, Difference{At: ke.First, Where: "events of " + ke.Object, What: "event only on kubelet",
				Kubelet: describeEvent(ke), Lockstep: "(none)"})
		case !kok:
			out = append(out, Difference{At: le.First, Where: "events of " + le.Object, What: "event only on lockstep",
				Kubelet: "(none)", Lockstep: describeEvent(le)})
		default:
			if d := ke.Count - le.Count; d > countTolerance(ke.Count, le.Count) || -d > countTolerance(ke.Count, le.Count) {
				out = append(out, Difference{At: min(ke.First, le.First), Where: "events of " + ke.Object,
					What: "event count", Kubelet: describeEvent(ke), Lockstep: describeEvent(le)})
			}
			if d := ke.First - le.First; d > EventTolerance || -d > EventTolerance {
				out = append(out, Difference{At: min(ke.First, le.First), Where: "events of " + ke.Object,
					What:    fmt.Sprintf("event first seen %.1fs apart (tolerance %.1fs)", abs(d).Seconds(), EventTolerance.Seconds()),
					Kubelet: describeEvent(ke), Lockstep: describeEvent(le)})
			}
		}
	}
	return out
}

func describeEvent(e EventRecord) string {
	return fmt.Sprintf("%s %s %q x%d (first at %.1fs)", e.Type, e.Reason, e.Message, e.Count, e.First.Seconds())
}

// compareResults matches action results by label and compares their
// text line by line (the first differing line is named).
func compareResults(k, l []Result) []Difference {
	km, lm := map[string]Result{}, map[string]Result{}
	for _, r := range k {
		km[r.Label] = r
	}
	for _, r := range l {
		lm[r.Label] = r
	}
	var out []Difference
	for _, label := range unionKeys(km, lm) {
		kr, kok := km[label]
		lr, lok := lm[label]
		switch {
		case !lok:
			out = append(out, Difference{At: kr.At, Where: label, What: "result only on kubelet", Kubelet: firstLine(kr.Text), Lockstep: "(none)"})
		case !kok:
			out = append(out, Difference{At: lr.At, Where: label, What: "result only on lockstep", Kubelet: "(none)", Lockstep: firstLine(lr.Text)})
		case kr.Text != lr.Text:
			kl, ll := differentLines(kr.Text, lr.Text)
			out = append(out, Difference{At: kr.At, Where: label, What: "differs", Kubelet: kl, Lockstep: ll})
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// maxShownLines bounds the lines a result difference lists per side.
const maxShownLines = 12

// differentLines returns the lines only a has and only b has (a longest
// common subsequence of lines is the same), each side's at most
// maxShownLines, joined by newlines.
func differentLines(a, b string) (string, string) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	ao := make([]Observed[string], len(al))
	for i, l := range al {
		ao[i].State = l
	}
	bo := make([]Observed[string], len(bl))
	for i, l := range bl {
		bo[i].State = l
	}
	inA, inB := map[int]bool{}, map[int]bool{}
	for _, p := range align(ao, bo) {
		inA[p[0]], inB[p[1]] = true, true
	}
	only := func(ls []string, common map[int]bool) string {
		var out []string
		for i, l := range ls {
			if !common[i] {
				out = append(out, l)
			}
		}
		if len(out) > maxShownLines {
			out = append(out[:maxShownLines], fmt.Sprintf("(… %d more lines)", len(out)-maxShownLines))
		}
		if len(out) == 0 {
			return "(nothing else)"
		}
		return strings.Join(out, "\n")
	}
	return only(al, inA), only(bl, inB)
}
