//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFQDNTooLongOnContainerd: with setHostnameAsFQDN, a pod whose
// hostname.subdomain.namespace.svc.cluster.local is longer than 64 bytes
// stays Pending with FailedCreatePodSandBox events in the kubelet's words
// ("Failed to create pod sandbox: failed to construct FQDN from pod
// hostname and cluster domain, FQDN …", what the node suite's
// pod_hostnamefqdn spec waits for), retried, and containerd never gets a
// sandbox of it; a pod whose FQDN fits gets it as its hostname.
func TestFQDNTooLongOnContainerd(t *testing.T) {
	e := setup(t)
	yes := true
	long := e.pod("fqdn-long", false, "sleep 3600")
	long.Spec.Hostname, long.Spec.Subdomain, long.Spec.SetHostnameAsFQDN = strings.Repeat("h", 40), "t", &yes
	gotLong := e.create(t, long)
	fqdn := strings.Repeat("h", 40) + ".t.default.svc.cluster.local"
	want := "Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN " + fqdn +
		" is too long (64 characters is the max, 68 characters requested)"
	var seen []string
	poll(t, 90*time.Second, "a FailedCreatePodSandBox event recorded twice", func() (bool, error) {
		evs, err := e.admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(gotLong.UID) + ",reason=FailedCreatePodSandBox"})
		if err != nil {
			return false, err
		}
		seen = nil
		count := int32(0)
		for _, ev := range evs.Items {
			seen = append(seen, ev.Message)
			if ev.Message == want && ev.Type == corev1.EventTypeWarning {
				count += max(ev.Count, 1)
			}
		}
		return count >= 2, nil
	})
	if p := e.get(t, gotLong); p.Status.Phase != corev1.PodPending {
		t.Errorf("pod with a too long FQDN is %s, want Pending (events %q)", p.Status.Phase, seen)
	}
	if sbs, _ := e.criOf(t, string(gotLong.UID)); len(sbs) != 0 {
		t.Errorf("containerd holds %d sandboxes of the pod whose FQDN is too long", len(sbs))
	}

	fits := e.pod("fqdn-fits", false, report(`echo "HOST $(hostname)"`))
	fits.Spec.Hostname, fits.Spec.Subdomain, fits.Spec.SetHostnameAsFQDN = "box", "t", &yes
	gotFits := e.create(t, fits)
	e.waitPod(t, gotFits, 60*time.Second, "Running and Ready", podReady)
	if h := field(e.logLines(t, gotFits), "HOST "); h != "box.t.default.svc.cluster.local" {
		t.Errorf("hostname in the pod is %q, want its FQDN box.t.default.svc.cluster.local", h)
	}
}
