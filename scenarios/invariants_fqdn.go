package scenarios

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// fqdnState is what fqdn-too-long keeps: the user-created pods whose FQDN
// hostname (refmodel.KernelFQDN) is longer than refmodel.FQDNMaxLen, by
// UID, with that FQDN; the other pods that ask for an FQDN hostname; and
// the pods already reported.
type fqdnState struct {
	tooLong  map[types.UID]string
	fits     map[types.UID]bool
	reported map[types.UID]bool
}

func newFQDNState() fqdnState {
	return fqdnState{tooLong: map[types.UID]string{}, fits: map[types.UID]bool{}, reported: map[types.UID]bool{}}
}

// onWriteFQDN notes the pods users create whose hostname is their FQDN,
// and checks fqdn-too-long on the agent's status writes: a pod whose FQDN
// is too long never runs (no sandbox means no container), so it is never
// reported Running or Succeeded.
func (c *Checker) onWriteFQDN(r apiserver.Record) {
	p := r.Pod
	if r.Actor == apiserver.ActorUser && r.Verb == apiserver.VerbCreate {
		if fqdn, ok := refmodel.KernelFQDN(p, c.h.ClusterDomain()); ok {
			if len(fqdn) > refmodel.FQDNMaxLen {
				c.fqdn.tooLong[r.UID] = fqdn
			} else {
				c.fqdn.fits[r.UID] = true
			}
		}
		return
	}
	if _, long := c.fqdn.tooLong[r.UID]; long && r.Actor == apiserver.ActorAgent &&
		(p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
		c.fail("fqdn-too-long", "pod %s/%s, whose FQDN is longer than %d bytes, is reported %s", p.Namespace, p.Name, refmodel.FQDNMaxLen, p.Status.Phase)
	}
}

// checkFQDNTooLong checks fqdn-too-long against the runtime: a pod whose
// FQDN hostname is longer than 64 bytes never has a sandbox created (the
// kubelet fails before RunPodSandbox). An absence, judged from the
// runtime's own sandboxes.
func (c *Checker) checkFQDNTooLong() {
	if len(c.fqdn.tooLong) == 0 || !c.due("fqdn", readsRuntime, false) {
		return
	}
	for _, sb := range c.truth().sandboxes {
		uid := types.UID(sb.GetMetadata().GetUid())
		if fqdn, long := c.fqdn.tooLong[uid]; long && !c.fqdn.reported[uid] {
			c.fqdn.reported[uid] = true
			c.fail("fqdn-too-long", "pod %s/%s's FQDN %s is %d bytes (at most %d) but its sandbox %s was created",
				sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), fqdn, len(fqdn), refmodel.FQDNMaxLen, sb.Id)
		}
	}
}

// fqdnSettled is fqdn-too-long's report in the settled world: every pod
// still in the API whose FQDN is too long has a FailedCreatePodSandBox
// event with the kubelet's message naming that FQDN, and no other pod an
// event saying its FQDN is too long.
func (c *Checker) fqdnSettled(pods []*corev1.Pod) []string {
	seen := map[types.UID][]string{}
	for _, e := range c.h.API.User().Events() {
		if e.Reason == "FailedCreatePodSandBox" {
			seen[e.Object.UID] = append(seen[e.Object.UID], e.Message)
		}
	}
	var out []string
	for _, p := range pods {
		fqdn, long := c.fqdn.tooLong[p.UID]
		if !long && !c.fqdn.fits[p.UID] {
			continue
		}
		want := refmodel.FQDNTooLongEvent(fqdn)
		found := false
		for _, m := range seen[p.UID] {
			switch {
			case long && m == want:
				found = true
			case !long && strings.Contains(m, "failed to construct FQDN"):
				out = append(out, fmt.Sprintf("pod %s/%s, whose FQDN fits, got event FailedCreatePodSandBox %q", p.Namespace, p.Name, m))
			}
		}
		if long && !found {
			out = append(out, fmt.Sprintf("pod %s/%s's FQDN %s is too long but no FailedCreatePodSandBox event %q was seen (events: %q)",
				p.Namespace, p.Name, fqdn, want, seen[p.UID]))
		}
	}
	return out
}

// FQDNPod is a pod whose hostname is its FQDN (setHostnameAsFQDN,
// subdomain "t"), its spec.hostname made of n letters: in namespace
// default with the pod-refusals scenario's cluster.local, n > 36 makes
// the FQDN longer than 64 bytes.
func FQDNPod(name, node string, n int) *corev1.Pod {
	p := NewPod(name, node)
	yes := true
	p.Spec.Hostname = strings.Repeat("h", n)
	p.Spec.Subdomain = "t"
	p.Spec.SetHostnameAsFQDN = &yes
	return p
}

// opCreateFQDN creates FQDNPod with a hostname of a letters (1-63).
func opCreateFQDN(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, FQDNPod(name, r.h.NodeName, max(1, min(63, a[0])))); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}
