package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Scenario is one file of the catalogue: objects and pods created on both
// nodes at once, actions at times since the start, and how long to watch.
type Scenario struct {
	// Name is the file's base name without .yaml (set by the loader).
	Name string `json:"name,omitempty"`
	// Summary says what the scenario shows (one line).
	Summary string `json:"summary"`
	// Covers names the item(s) it covers (for the catalogue list).
	Covers string `json:"covers,omitempty"`
	// Duration is how long pods are watched after the start.
	Duration Duration `json:"duration"`
	// Exclusive scenarios run alone: they restart the agents or change the
	// node, which would disturb others.
	Exclusive bool `json:"exclusive,omitempty"`
	// Objects (ConfigMaps, Secrets) are created in the namespace first.
	Objects []Object `json:"objects,omitempty"`
	// Pods are created at the start, spec.nodeName set to each node.
	Pods []v1.Pod `json:"pods,omitempty"`
	// Static pods are written to each agent's manifest directory.
	Static []v1.Pod `json:"static,omitempty"`
	// Actions happen at their times, on both nodes at once.
	Actions []Action `json:"actions,omitempty"`
	// Fill creates that many pods (ignored by the comparison) before the
	// scenario's own pods, to reach the node's pod limit.
	Fill int `json:"fill,omitempty"`
	// Tolerance overrides the transition-time tolerance.
	Tolerance Duration `json:"tolerance,omitempty"`
	// Network scenarios probe or hook over the network (HTTP, TCP, gRPC):
	// they need the fake runtime to serve each sandbox's endpoints on its
	// own loopback address (run.sh's default), and are skipped with
	// -network=false (a pod IP outside loopback is never dialled from this
	// machine). Their probed ports must be scripted or declared: any other
	// port refuses.
	Network bool `json:"network,omitempty"`
	// RealRuntime marks a scenario whose difference only shows on a real
	// runtime (recorded on the fake runtime all the same).
	RealRuntime string `json:"realRuntime,omitempty"`
}

// Object is a ConfigMap, a Secret, or a local PersistentVolume with its
// claim. The driver gives each side's copy of a PersistentVolume its own
// name (<namespace>-<name>), a host directory of its own as its local
// path, and a node affinity to that side's node; a claim whose
// volumeName names a scenario's volume is bound to that copy by hand, as
// the PV controller (not run here) would bind it.
type Object struct {
	ConfigMap             *v1.ConfigMap             `json:"configMap,omitempty"`
	Secret                *v1.Secret                `json:"secret,omitempty"`
	PersistentVolume      *v1.PersistentVolume      `json:"persistentVolume,omitempty"`
	PersistentVolumeClaim *v1.PersistentVolumeClaim `json:"persistentVolumeClaim,omitempty"`
}

// Action is one step at a time since the scenario's start.
type Action struct {
	At Duration `json:"at"`
	// Do is the kind: delete, patch, patch-status, resize, exec, logs, snapshot,
	// restart-agent, taint, untaint, ephemeral, remove-static,
	// rewrite-static (the manifest removed and written back unchanged at
	// once), patch-static (Patch, a strategic merge patch, applied to the
	// static pod's manifest, written back atomically as a new file: a new
	// version of the static pod; Repeat times, Every apart), create.
	Do string `json:"do"`
	// Pod names the scenario's pod acted on.
	Pod string `json:"pod,omitempty"`
	// Grace is the deletion's grace period in seconds (nil: the pod's).
	Grace *int64 `json:"grace,omitempty"`
	// Patch is a strategic merge patch (patch, resize, patch-status,
	// patch-static) as YAML/JSON. In patch-static, every "{{n}}" of the
	// patch's text is the rewrite's number (1 to Repeat), so that each
	// rewrite makes a different version.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Repeat (patch-static) is how many rewrites to make (0 means 1), Every
	// apart; the actions after it wait until the last one is written.
	Repeat int      `json:"repeat,omitempty"`
	Every  Duration `json:"every,omitempty"`
	// Container and Command (exec, logs: Previous).
	Container string   `json:"container,omitempty"`
	Command   []string `json:"command,omitempty"`
	Previous  bool     `json:"previous,omitempty"`
	// Taint (taint, untaint) as key=value:Effect.
	Taint string `json:"taint,omitempty"`
	// Ephemeral is the ephemeral container to add (ephemeral).
	Ephemeral *v1.EphemeralContainer `json:"ephemeral,omitempty"`
	// Path and Content (write-file): a file the container writes, as it
	// sees it (the fake runtime runs no command: the driver writes it into
	// the volume's host directory).
	Path    string `json:"path,omitempty"`
	Content string `json:"content,omitempty"`
	// NewPod is the pod to create (create).
	NewPod *v1.Pod `json:"newPod,omitempty"`
}

// Duration is a time.Duration read from "10s".
type Duration struct{ time.Duration }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s: want a string like \"10s\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// actionKinds are the known Action.Do values; disruptive ones make a
// scenario exclusive.
var actionKinds = map[string]bool{
	"delete": false, "patch": false, "resize": false, "exec": false, "logs": false, "snapshot": false,
	"ephemeral": false, "remove-static": false, "rewrite-static": false, "patch-static": false, "create": false, "patch-status": false, "write-file": false,
	"restart-agent": true, "taint": true, "untaint": true,
}

// parseScenario reads one catalogue file's content.
func parseScenario(name string, data []byte) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	s.Name = name
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	return &s, nil
}

// validate checks the scenario is runnable; disruptive actions make it
// exclusive.
func (s *Scenario) validate() error {
	if s.Summary == "" {
		return fmt.Errorf("no summary")
	}
	if s.Duration.Duration <= 0 {
		return fmt.Errorf("no duration")
	}
	if len(s.Name) > 40 {
		return fmt.Errorf("name longer than 40 characters (namespaces are named after it)")
	}
	pods := map[string]bool{}
	for _, group := range [][]v1.Pod{s.Pods, s.Static} {
		for _, p := range group {
			if p.Name == "" {
				return fmt.Errorf("a pod without a name")
			}
			if pods[p.Name] {
				return fmt.Errorf("pod %s twice", p.Name)
			}
			if strings.HasPrefix(p.Name, FillerPrefix) {
				return fmt.Errorf("pod %s: names starting %q are the filler pods'", p.Name, FillerPrefix)
			}
			pods[p.Name] = true
		}
	}
	for i, a := range s.Actions {
		disruptive, ok := actionKinds[a.Do]
		if !ok {
			return fmt.Errorf("action %d: unknown kind %q", i, a.Do)
		}
		if disruptive {
			s.Exclusive = true
		}
		if a.At.Duration > s.Duration.Duration {
			return fmt.Errorf("action %d (%s) at %v, after the scenario's end %v", i, a.Do, a.At, s.Duration)
		}
		if a.Repeat < 0 || a.Every.Duration < 0 || ((a.Repeat > 1 || a.Every.Duration > 0) && a.Do != "patch-static") {
			return fmt.Errorf("action %d (%s): repeat and every are patch-static's, and not negative", i, a.Do)
		}
		if a.Repeat > 1 {
			if last := a.At.Duration + time.Duration(a.Repeat-1)*a.Every.Duration; last > s.Duration.Duration {
				return fmt.Errorf("action %d (%s): its last rewrite at %v, after the scenario's end %v", i, a.Do, last, s.Duration)
			}
		}
		if strings.HasSuffix(a.Do, "-static") && !isStatic(s, a.Pod) {
			return fmt.Errorf("action %d (%s): %q is not a static pod of the scenario", i, a.Do, a.Pod)
		}
		switch a.Do {
		case "create":
			if a.NewPod == nil || a.NewPod.Name == "" {
				return fmt.Errorf("action %d: create needs newPod with a name", i)
			}
			if pods[a.NewPod.Name] {
				return fmt.Errorf("action %d: pod %s twice", i, a.NewPod.Name)
			}
			pods[a.NewPod.Name] = true
		case "taint", "untaint":
			if a.Taint == "" {
				return fmt.Errorf("action %d: %s needs taint", i, a.Do)
			}
		case "restart-agent", "snapshot":
		default:
			if !pods[a.Pod] {
				return fmt.Errorf("action %d (%s): unknown pod %q", i, a.Do, a.Pod)
			}
		}
		if (a.Do == "write-file" && (a.Container == "" || a.Path == "")) ||
			(a.Do == "exec" && len(a.Command) == 0) || (a.Do == "ephemeral" && a.Ephemeral == nil) ||
			((a.Do == "patch" || a.Do == "resize" || a.Do == "patch-status" || a.Do == "patch-static") && len(a.Patch) == 0) {
			return fmt.Errorf("action %d: %s lacks its argument", i, a.Do)
		}
	}
	volumes := map[string]bool{}
	for i, o := range s.Objects {
		n := 0
		for _, set := range []bool{o.ConfigMap != nil, o.Secret != nil, o.PersistentVolume != nil, o.PersistentVolumeClaim != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("object %d: want exactly one of configMap, secret, persistentVolume, persistentVolumeClaim", i)
		}
		if pv := o.PersistentVolume; pv != nil {
			if pv.Name == "" || pv.Spec.Local == nil {
				return fmt.Errorf("object %d: a persistentVolume needs a name and spec.local (the driver sets its path)", i)
			}
			volumes[pv.Name] = true
		}
	}
	for i, o := range s.Objects {
		if c := o.PersistentVolumeClaim; c != nil && (c.Name == "" || !volumes[c.Spec.VolumeName]) {
			return fmt.Errorf("object %d: a persistentVolumeClaim needs a name and a volumeName naming one of the scenario's persistentVolumes", i)
		}
	}
	if s.Fill > 0 {
		s.Exclusive = true
	}
	sort.SliceStable(s.Actions, func(i, j int) bool { return s.Actions[i].At.Duration < s.Actions[j].At.Duration })
	return nil
}

// loadCatalogue reads every dir/*.yaml whose name matches one of the
// space-separated globs.
func loadCatalogue(dir, globs string) ([]*Scenario, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if !matchAny(globs, name) {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read scenario: %w", err)
		}
		s, err := parseScenario(name, data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario in %s matches %q", dir, globs)
	}
	return out, nil
}

func matchAny(globs, name string) bool {
	for _, g := range strings.Fields(globs) {
		if ok, _ := filepath.Match(g, name); ok {
			return true
		}
	}
	return false
}
