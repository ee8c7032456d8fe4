package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/cpumanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// newCPUManager builds the CPU manager over the machine's topology, its
// checkpoint under the root directory.
func newCPUManager(d deps.Deps, cfg Config) (*cpumanager.Manager, error) {
	var info deps.MachineInfo
	if d.Machine != nil {
		var err error
		// Built before any task runs; both machines answer at once.
		if info, err = d.Machine.Info(context.Background()); err != nil && cfg.CPUManager.Policy == cpumanager.PolicyStatic {
			return nil, fmt.Errorf("CPU manager: read the machine's topology: %w", err)
		}
	}
	c := cfg.CPUManager
	if c.RootDir == "" {
		c.RootDir = cfg.Node.RootDir
	}
	if c.RootDir == "" {
		c.RootDir = podspec.DefaultRootDir
	}
	m, err := cpumanager.New(d.Core, cpumanager.Ports{Runtime: d.Runtime, Files: d.Files}, c, info)
	if err != nil {
		return nil, fmt.Errorf("CPU manager: %w", err)
	}
	return m, nil
}

// admitCPUs gives an admitted pod's containers their exclusive CPUs; a
// pod that cannot get them is refused as the kubelet refuses it.
func (a *Agent) admitCPUs(pod *corev1.Pod) admission.Decision {
	if rej := a.cpus.Admit(pod); rej != nil {
		return admission.Decision{Reason: rej.Reason, Message: rej.Message}
	}
	return admission.Decision{}
}

// cpuPods is the agent's side of the CPU manager's reconcile loop.
type cpuPods struct{ a *Agent }

// ActivePods are the pods that may hold CPUs, once every source spoke.
func (p cpuPods) ActivePods() ([]*corev1.Pod, bool) {
	if !p.a.merger.AllSeen() {
		return nil, false
	}
	return p.a.activePods(), true
}

// RunningContainers are the running containers in the runtime's view.
func (p cpuPods) RunningContainers() []cpumanager.Container {
	var out []cpumanager.Container
	cache := p.a.pleg.Cache()
	for _, uid := range cache.UIDs() {
		st, ok := cache.Get(uid)
		if !ok {
			continue
		}
		for _, c := range st.Running() {
			out = append(out, cpumanager.Container{PodUID: uid, Name: c.Name, ID: c.ID})
		}
	}
	return out
}
