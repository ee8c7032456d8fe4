package scenarios

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// featureState is what features-declared keeps: the pods that need node
// features (refmodel.NodeFeaturesNeeded), by UID, and those reported.
type featureState struct {
	needs    map[types.UID]featureNeed
	reported map[types.UID]bool
}

// featureNeed is one pod's need: its name and the features.
type featureNeed struct {
	name     string
	features []string
}

func newFeatureState() featureState {
	return featureState{needs: map[types.UID]featureNeed{}, reported: map[types.UID]bool{}}
}

// onWriteFeatures notes the pods users create that need node features.
func (c *Checker) onWriteFeatures(r apiserver.Record) {
	if r.Kind != apiserver.KindPod || r.Pod == nil || r.Actor != apiserver.ActorUser || r.Verb != apiserver.VerbCreate {
		return
	}
	if f := refmodel.NodeFeaturesNeeded(r.Pod); len(f) > 0 {
		c.features.needs[r.UID] = featureNeed{name: r.Namespace + "/" + r.Name, features: f}
	}
}

// checkFeaturesDeclared checks features-declared: a pod that needs a node
// feature its node does not declare (status.declaredFeatures, as the API
// shows it) is refused by the kubelet's admission (PodFeatureUnsupported)
// and never runs: no container of it is ever created in the runtime. An
// absence, judged from the runtime's own containers.
func (c *Checker) checkFeaturesDeclared() {
	if len(c.features.needs) == 0 || !c.due("features", readsRuntime|readsAPI, false) {
		return
	}
	var declared []string
	for _, n := range c.apiNodes() {
		if n.Name == c.h.NodeName {
			declared = n.Status.DeclaredFeatures
		}
	}
	for uid, need := range c.features.needs {
		if c.features.reported[uid] || !slices.ContainsFunc(need.features, func(f string) bool { return !slices.Contains(declared, f) }) {
			continue
		}
		if cts := c.truth().byPod[uid]; len(cts) > 0 {
			c.features.reported[uid] = true
			c.fail("features-declared", "pod %s needs node features %q the node does not declare (%q) but its container %s was created",
				need.name, need.features, declared, cts[0].Name)
		}
	}
}

// restartAllPod is a pod whose container "app" asks, through a
// RestartAllContainers restart rule, to restart the whole pod when it
// exits with 42: it needs RestartAllContainersOnContainerExits.
func restartAllPod(name, node string) *corev1.Pod {
	p := NewPod(name, node)
	never := corev1.ContainerRestartPolicyNever
	p.Spec.Containers[0].RestartPolicy = &never
	p.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	return p
}

// opCreateRestartAll creates restartAllPod: a pod the node's admission
// must refuse (features-declared).
func opCreateRestartAll(r *run, _ [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, restartAllPod(name, r.h.NodeName)); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}
