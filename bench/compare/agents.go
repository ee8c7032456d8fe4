package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockstep-dev/lockstep/node/real/mounter"
)

// Agent names accepted in BENCH_COMPARE_AGENTS.
const (
	KubemarkAgent       = "kubemark"
	LockstepAgent       = "lockstep"
	LockstepRelistAgent = "lockstep-relist"
)

// MaxPods is both agents' --max-pods: above every N measured (the
// kubelet's default, 110, would reject the rest as OutOfpods).
const MaxPods = 5000

// NodeName is the node each agent registers as (one per agent, so every
// run starts from its own Node object).
func NodeName(agent string) string { return "bc-" + agent }

// running is an agent's processes during one run.
type running struct {
	procs []*proc
	// pprofPort is the secure port serving /debug/pprof (lockstep), or 0.
	pprofPort int
	// runtimePprof is host:port of fakecri's plain-HTTP /debug/pprof, or "".
	runtimePprof string
}

func (r *running) pids() []int {
	var ps []int
	for _, p := range r.procs {
		ps = append(ps, p.pid())
	}
	return ps
}

// dead names a process of the agent that has exited, or "".
func (r *running) dead() string {
	for _, p := range r.procs {
		if p.exited() {
			return fmt.Sprintf("%s exited (%v)", p.name, p.err)
		}
	}
	return ""
}

// peakRSS sums VmHWM over the agent's processes.
func (r *running) peakRSS() (float64, error) {
	t := 0.0
	for _, p := range r.procs {
		v, err := ProcPeakRSS(p.pid())
		if err != nil {
			return 0, err
		}
		t += v
	}
	return t, nil
}

// cpus returns each process's CPU seconds so far, in start order.
func (r *running) cpus() []float64 {
	out := make([]float64, len(r.procs))
	for i, p := range r.procs {
		c, err := ProcCPU(p.pid())
		if err != nil {
			log.Printf("%s: %v", p.name, err)
		}
		out[i] = c
	}
	return out
}

// stop stops the processes, the agent first, its runtime last.
func (r *running) stop() {
	for i := len(r.procs) - 1; i >= 0; i-- {
		r.procs[i].stop()
	}
}

// startAgent starts agent (kubemark or one of the lockstep variants) as its
// node, with the client QPS and burst given; logs go to logDir.
func (d *driver) startAgent(ctx context.Context, agent string, qps, burst int, logDir string) (*running, error) {
	node := NodeName(agent)
	kubeconfig := filepath.Join(d.dir, "node-"+node+".kubeconfig")
	work := filepath.Join(d.dir, "bench", agent)
	// lockstep made its root directory, below work, a bind mount of
	// itself in an earlier round.
	if err := mounter.New().UnmountTree(work); err != nil {
		return nil, fmt.Errorf("clean %s: %w", work, err)
	}
	if err := os.RemoveAll(work); err != nil {
		return nil, fmt.Errorf("clean %s: %w", work, err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", work, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, agent+".log")
	r := &running{}
	switch agent {
	case KubemarkAgent:
		// The hollow kubelet makes its root dir with os.MkdirTemp: TMPDIR
		// keeps it under the scratch dir.
		p, err := startProc("kubemark", logPath, []string{"TMPDIR=" + work}, d.kubemark,
			"--morph=kubelet", "--name="+node, "--kubeconfig="+kubeconfig,
			"--kube-api-qps="+strconv.Itoa(qps), "--kube-api-burst="+strconv.Itoa(burst),
			"--use-host-image-service=false", "--max-pods="+strconv.Itoa(MaxPods),
			"--kubelet-port="+strconv.Itoa(port), "--kubelet-read-only-port=0")
		if err != nil {
			return nil, err
		}
		r.procs = append(r.procs, p)
	case LockstepAgent, LockstepRelistAgent:
		sock := filepath.Join(work, "fakecri.sock")
		rtPort, err := freePort()
		if err != nil {
			return nil, err
		}
		r.runtimePprof = fmt.Sprintf("127.0.0.1:%d", rtPort)
		// The fake runtime runs from its own binary (cmd/fakecri) when
		// given, as containerd is a process and binary of its own; else as
		// `lockstep fakecri`, which loads the whole agent's code too.
		bin, args := d.fakecri, []string{"--listen=unix://" + sock, "--pprof-address=" + r.runtimePprof}
		if bin == "" {
			bin, args = d.lockstep, append([]string{"fakecri"}, args...)
		}
		if agent == LockstepRelistAgent {
			args = append(args, "--no-events")
		}
		rt, err := startProc("fakecri", filepath.Join(logDir, agent+"-fakecri.log"), nil, bin, args...)
		if err != nil {
			return nil, err
		}
		r.procs = append(r.procs, rt)
		if err := waitForFile(ctx, sock, 10*time.Second); err != nil {
			r.stop()
			return nil, fmt.Errorf("fakecri of %s: %w", agent, err)
		}
		p, err := startProc("lockstep", logPath, nil, d.lockstep, "node",
			"--kubeconfig="+kubeconfig,
			"--container-runtime-endpoint=unix://"+sock,
			"--hostname-override="+node, "--node-ip=127.0.0.1",
			"--root-dir="+filepath.Join(work, "root"),
			"--pod-logs-dir="+filepath.Join(work, "pods"),
			"--container-logs-dir="+filepath.Join(work, "containers"),
			"--address=127.0.0.1", "--port="+strconv.Itoa(port), "--read-only-port=0", "--healthz-port=0",
			"--authorization-mode=AlwaysAllow",
			"--image-gc-high-threshold=100", "--max-pods="+strconv.Itoa(MaxPods),
			// As kubemark's hollow kubelet: no cgroups (the fake runtime
			// runs nothing).
			"--cgroups-per-qos=false", "--enforce-node-allocatable=none",
			"--kube-api-qps="+strconv.Itoa(qps), "--kube-api-burst="+strconv.Itoa(burst))
		if err != nil {
			r.stop()
			return nil, err
		}
		r.procs = append(r.procs, p)
		r.pprofPort = port
	default:
		return nil, fmt.Errorf("unknown agent %q (kubemark, lockstep, lockstep-relist, ceiling)", agent)
	}
	return r, nil
}

// saveHeaps saves the in-use heap profile of lockstep (its secure port)
// and of fakecri (its --pprof-address) into dir, after a GC each, as
// <process>-heap<suffix>.pprof.
func (r *running) saveHeaps(ctx context.Context, token, dir, suffix string) {
	if r.pprofPort != 0 {
		url := fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/heap?gc=1", r.pprofPort)
		path := filepath.Join(dir, "lockstep-heap"+suffix+".pprof")
		if err := fetchProfile(ctx, url, token, path); err != nil {
			log.Printf("heap profile of lockstep: %v", err)
		} else {
			log.Printf("heap profile of lockstep in %s", path)
		}
	}
	if r.runtimePprof != "" {
		path := filepath.Join(dir, "fakecri-heap"+suffix+".pprof")
		if err := fetchProfile(ctx, "http://"+r.runtimePprof+"/debug/pprof/heap?gc=1", "", path); err != nil {
			log.Printf("heap profile of fakecri: %v", err)
		} else {
			log.Printf("heap profile of fakecri in %s", path)
		}
	}
}
