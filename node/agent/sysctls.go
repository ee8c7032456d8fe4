package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// sysctlAllowlist builds the node's sysctl allowlist: the safe sysctls of
// the machine's kernel and the allowed unsafe patterns. An invalid pattern
// (the daemon validates its flag first) is logged and left out.
func sysctlAllowlist(d deps.Deps, unsafe []string) *admission.SysctlAllowlist {
	kernel := ""
	if d.Machine != nil {
		// Built before any task runs; both machines answer without blocking.
		if info, err := d.Machine.Info(context.Background()); err == nil {
			kernel = info.KernelVersion
		}
	}
	patterns := admission.SafeSysctls(kernel)
	for _, p := range unsafe {
		if _, err := admission.NewSysctlAllowlist([]string{p}); err != nil {
			if d.Log != nil {
				d.Log.Warn("ignoring an allowed unsafe sysctl pattern", "pattern", p, "error", err.Error())
			}
			continue
		}
		patterns = append(patterns, p)
	}
	w, err := admission.NewSysctlAllowlist(patterns)
	if err != nil { // cannot happen: every pattern was checked
		panic(err)
	}
	return w
}

// hostAppArmor reads whether the host has AppArmor enabled
// (deps.MachineInfo.AppArmor); a machine that cannot say has none.
func hostAppArmor(d deps.Deps) bool {
	if d.Machine == nil {
		return false
	}
	// Built before any task runs; both machines answer without blocking.
	info, err := d.Machine.Info(context.Background())
	return err == nil && info.AppArmor
}

// rejection returns why pod must not run at all (podadmit.Book.Rejection:
// admission refused it, or a sysctl the node does not allow; "" when it
// may run).
func (a *Agent) rejection(pod *corev1.Pod) (reason, message string) {
	return a.admission.book.Rejection(pod, a.admission.sysctls)
}

// refused reports whether pod is refused at admission, for any reason: it
// runs nothing and keeps the status of its refusal.
func (a *Agent) refused(pod *corev1.Pod) bool {
	reason, _ := a.rejection(pod)
	return reason != ""
}
