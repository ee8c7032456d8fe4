package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// appArmorState is what apparmor-refused keeps: the pods users created
// that ask for AppArmor (refmodel.AsksForAppArmor), by UID, with their
// names, and those already reported.
type appArmorState struct {
	asks     map[types.UID]string
	reported map[types.UID]bool
}

func newAppArmorState() appArmorState {
	return appArmorState{asks: map[types.UID]string{}, reported: map[types.UID]bool{}}
}

// earlierRefusals are the reasons the kubelet's admission chain can give
// before its AppArmor handler (eviction, sysctls, resource fit and node
// predicates): a pod asking for AppArmor may be refused for one of those
// instead.
var earlierRefusals = []string{"Evicted", "SysctlForbidden", "NodeAffinity", "NodeName", "NodePorts", "TaintToleration",
	"PodOSNotSupported", "PodOSSelectorNodeLabelDoesNotMatch", "UnexpectedAdmissionError", "TopologyAffinityError"}

// refusedEarlier reports whether reason is one of earlierRefusals or an
// OutOf<resource> one.
func refusedEarlier(reason string) bool {
	for _, r := range earlierRefusals {
		if r == reason {
			return true
		}
	}
	return strings.HasPrefix(reason, "OutOf")
}

// onWriteAppArmor checks apparmor-refused on every committed pod write:
// it notes the user-created pods asking for AppArmor; on a host without
// AppArmor (the harness's machine fact) such a pod is never reported
// Running or Succeeded, and once Failed it names AppArmor with the
// kubelet's message (or an admission refusal the kubelet makes before
// AppArmor's); and no pod is ever refused for AppArmor when it asks for
// nothing or the host has AppArmor.
func (c *Checker) onWriteAppArmor(r apiserver.Record) {
	p := r.Pod
	if r.Actor == apiserver.ActorUser && r.Verb == apiserver.VerbCreate {
		if refmodel.AsksForAppArmor(p) {
			c.appArmor.asks[r.UID] = p.Namespace + "/" + p.Name
		}
		return
	}
	if r.Actor != apiserver.ActorAgent {
		return
	}
	_, asks := c.appArmor.asks[r.UID]
	refusable := asks && !c.h.AppArmor()
	st := p.Status
	switch {
	case st.Reason == refmodel.AppArmorReason && !refusable:
		c.fail("apparmor-refused", "pod %s/%s was refused for AppArmor (%q) but asks for none or the host has it (host AppArmor %v)",
			p.Namespace, p.Name, st.Message, c.h.AppArmor())
	case !refusable:
	case st.Phase == corev1.PodRunning || st.Phase == corev1.PodSucceeded:
		c.fail("apparmor-refused", "pod %s/%s asks for AppArmor on a host without it but is reported %s", p.Namespace, p.Name, st.Phase)
	case st.Phase != corev1.PodFailed || p.DeletionTimestamp != nil:
	case st.Reason == refmodel.AppArmorReason && st.Message != refmodel.AppArmorMessage:
		c.fail("apparmor-refused", "pod %s/%s refused for AppArmor with message %q, want %q", p.Namespace, p.Name, st.Message, refmodel.AppArmorMessage)
	case st.Reason != refmodel.AppArmorReason && !refusedEarlier(st.Reason):
		c.fail("apparmor-refused", "pod %s/%s asks for AppArmor on a host without it but failed with reason %q (%q), want %q",
			p.Namespace, p.Name, st.Reason, st.Message, refmodel.AppArmorReason)
	}
}

// checkAppArmorRefused checks apparmor-refused against the runtime: a pod
// asking for AppArmor on a host without it never has a sandbox or a
// container created. An absence, judged from the runtime's own records.
func (c *Checker) checkAppArmorRefused() {
	if len(c.appArmor.asks) == 0 || c.h.AppArmor() || !c.due("apparmor", readsRuntime, false) {
		return
	}
	truth := c.truth()
	for _, uid := range slices.Sorted(maps.Keys(c.appArmor.asks)) { // in order: the trace must not depend on the map's
		name := c.appArmor.asks[uid]
		if c.appArmor.reported[uid] {
			continue
		}
		if cts := truth.byPod[uid]; len(cts) > 0 {
			c.appArmor.reported[uid] = true
			c.fail("apparmor-refused", "pod %s asks for AppArmor on a host without it but its container %s was created", name, cts[0].Name)
			continue
		}
		for _, sb := range truth.sandboxes {
			if types.UID(sb.GetMetadata().GetUid()) == uid {
				c.appArmor.reported[uid] = true
				c.fail("apparmor-refused", "pod %s asks for AppArmor on a host without it but its sandbox %s was created", name, sb.Id)
				break
			}
		}
	}
}

// appArmorSettled is apparmor-refused in the settled world: every pod
// still in the API that asks for AppArmor on a host without it has ended
// Failed (refused).
func (c *Checker) appArmorSettled(pods []*corev1.Pod) []string {
	if c.h.AppArmor() {
		return nil
	}
	var out []string
	for _, p := range pods {
		if _, asks := c.appArmor.asks[p.UID]; asks && p.Status.Phase != corev1.PodFailed {
			out = append(out, fmt.Sprintf("pod %s/%s asks for AppArmor on a host without it but is %q, not Failed (reason %q)",
				p.Namespace, p.Name, p.Status.Phase, p.Status.Reason))
		}
	}
	return out
}

// appArmorKinds are the ways opCreateAppArmor's pods ask for AppArmor, or
// do not: a pod-level RuntimeDefault, a container Localhost profile, an
// init container's RuntimeDefault, the deprecated annotation's
// runtime/default and localhost/<name>; then a container Unconfined and
// the annotation's unconfined, which ask for nothing.
var appArmorKinds = []string{"pod-runtime-default", "container-localhost", "init-runtime-default", "annotation-runtime-default",
	"annotation-localhost", "container-unconfined", "annotation-unconfined"}

// AppArmorPod is a pod asking for AppArmor as appArmorKinds[kind] says.
func AppArmorPod(name, node string, kind int) *corev1.Pod {
	p := NewPod(name, node)
	profile := func(t corev1.AppArmorProfileType) *corev1.AppArmorProfile {
		a := &corev1.AppArmorProfile{Type: t}
		if t == corev1.AppArmorProfileTypeLocalhost {
			n := "k8s-apparmor-example-deny-write"
			a.LocalhostProfile = &n
		}
		return a
	}
	annotate := func(v string) {
		p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + p.Spec.Containers[0].Name: v}
	}
	switch appArmorKinds[kind] {
	case "pod-runtime-default":
		p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeRuntimeDefault)}
	case "container-localhost":
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeLocalhost)}
	case "init-runtime-default":
		init := p.Spec.Containers[0]
		init.Name = "init"
		init.SecurityContext = &corev1.SecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeRuntimeDefault)}
		p.Spec.InitContainers = []corev1.Container{init}
	case "annotation-runtime-default":
		annotate("runtime/default")
	case "annotation-localhost":
		annotate("localhost/k8s-apparmor-example-deny-write")
	case "container-unconfined":
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: profile(corev1.AppArmorProfileTypeUnconfined)}
	case "annotation-unconfined":
		annotate("unconfined")
	}
	return p
}

// opCreateAppArmor creates AppArmorPod of kind a: on the simulated host,
// which has no AppArmor, the first five are refused (apparmor-refused),
// the last two run.
func opCreateAppArmor(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, AppArmorPod(name, r.h.NodeName, pick(a[0], len(appArmorKinds)))); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}
