package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// withSysctls sets pod-level sysctls.
func withSysctls(kv ...string) PodOption {
	return func(p *corev1.Pod) {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: kv[i], Value: kv[i+1]})
		}
	}
}

// TestSysctls: safe sysctls and those the node allows
// (--allowed-unsafe-sysctls) reach the sandbox; a pod setting an unsafe
// sysctl the node does not allow fails admission with reason
// SysctlForbidden and a Warning event, and never gets a sandbox. Before
// sysctls were supported they were ignored (the forbidden pod ran).
func TestSysctls(t *testing.T) {
	h := harness.New(harness.Config{
		Seed:   137,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Agent:  agent.Config{AllowedUnsafeSysctls: []string{"net.core.somaxconn"}},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	ok := mustCreate(t, h, NewPod("tuned", h.NodeName, withSysctls("net.ipv4.tcp_syncookies", "0", "net/core/somaxconn", "1024")))
	bad := mustCreate(t, h, NewPod("forbidden", h.NodeName, withSysctls("kernel.sem", "250 32000 32 128")))
	runUntil(t, h, "tuned Running", time.Minute, func() bool { return PodIs(h, "default", "tuned", corev1.PodRunning, true) })
	runUntil(t, h, "forbidden Failed", time.Minute, func() bool { return PodIs(h, "default", "forbidden", corev1.PodFailed, false) })

	sbs := Sandboxes(h, ok.UID)
	if len(sbs) != 1 {
		t.Fatalf("tuned has %d sandboxes, want 1", len(sbs))
	}
	cfg, _ := h.Runtime.TrueSandboxConfig(sbs[0].Id)
	if d := cmp.Diff(map[string]string{"net.ipv4.tcp_syncookies": "0", "net.core.somaxconn": "1024"}, cfg.GetLinux().GetSysctls()); d != "" {
		t.Errorf("sandbox sysctls (-want +got):\n%s", d)
	}
	p, _ := APIPod(h, "default", "forbidden")
	const msg = `forbidden sysctl: "kernel.sem" not allowlisted`
	if p.Status.Reason != "SysctlForbidden" || p.Status.Message != "Pod was rejected: "+msg {
		t.Errorf("forbidden: reason %q message %q, want SysctlForbidden %q", p.Status.Reason, p.Status.Message, msg)
	}
	if n := len(Sandboxes(h, bad.UID)); n != 0 {
		t.Errorf("forbidden got %d sandboxes", n)
	}
	if ev := eventsAbout(h, "default", "forbidden"); !hasEvent(ev, "Warning SysctlForbidden: ", "kernel.sem") {
		t.Errorf("no Warning SysctlForbidden event; events: %q", ev)
	}
	if tp, _ := APIPod(h, "default", "tuned"); strings.Contains(tp.Status.Message, "sysctls") {
		t.Errorf("tuned's sysctls are still flagged as unsupported: %q", tp.Status.Message)
	}
}
