// Command driver is the differential harness of `make diff-kubelet`: it
// starts two fake runtimes, the upstream kubelet on one and lockstep on
// the other (each its own node of one kube-apiserver), runs every scenario
// of the catalogue on both nodes at once, records what a user can observe
// (pod states from a watch, events, the files and env the containers see,
// logs, exec output, the node), normalises names, IDs, addresses and
// times, and reports every difference: a table (table.md, printed) and a
// side-by-side HTML report (report.html). hack/diff-kubelet/run.sh runs it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Node names of the two sides.
const (
	KubeletNode  = "diff-kubelet"
	LockstepNode = "diff-lockstep"
)

func main() {
	dir := flag.String("dir", "", "the run's scratch dir (procs/*.cmd, <agent>/fakecri.sock, <agent>/manifests)")
	kubeconfig := flag.String("kubeconfig", "", "admin kubeconfig")
	catalogue := flag.String("catalogue", "", "directory of scenario files")
	globs := flag.String("scenarios", "*", "space-separated globs of scenario names to run")
	parallel := flag.Int("parallel", 6, "scenarios run at once (exclusive ones run alone)")
	outDir := flag.String("out", "", "output dir (table.md, report.html, recordings.json)")
	logs := flag.String("logs", "", "dir for the processes' logs")
	network := flag.Bool("network", true, "run the scenarios that probe or hook over the network (the fake runtimes serve pod endpoints on loopback addresses); false skips them")
	containerd := flag.String("containerd", "", "the containerd lane: this CRI socket (a real runtime both agents use, one after the other: the kubelet runs the scenarios, then lockstep) instead of a fake runtime per agent at once")
	flag.Parse()
	if err := run(*dir, *kubeconfig, *catalogue, *globs, *parallel, *outDir, *logs, *network, *containerd); err != nil {
		log.Fatalf("diff-kubelet: %v", err)
	}
}

func run(dir, kubeconfig, catalogue, globs string, parallel int, outDir, logs string, network bool, containerd string) error {
	all, err := loadCatalogue(catalogue, globs)
	if err != nil {
		return err
	}
	var scenarios []*Scenario
	var skipped []*Outcome
	for _, s := range all {
		if s.Network && !network {
			skipped = append(skipped, &Outcome{Scenario: s, Skipped: "network probes and hooks: the fake runtimes serve no pod network (-network=false, DIFF_NETWORK=0)"})
			continue
		}
		scenarios = append(scenarios, s)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	h := &harness{client: client, config: cfg, rec: newRecorder(), procs: newProcs(dir, logs)}
	defer h.procs.stopAll()
	for i, agent := range []string{"kubelet", "lockstep"} {
		node := map[string]string{"kubelet": KubeletNode, "lockstep": LockstepNode}[agent]
		sock := containerd
		if containerd == "" {
			sock = filepath.Join(dir, agent, "fakecri.sock")
			if err := h.procs.start("fakecri-" + agent); err != nil {
				return err
			}
			if err := waitForFile(ctx, sock, 20*time.Second); err != nil {
				return fmt.Errorf("fake runtime of %s: %w", agent, err)
			}
		}
		rv, err := dialRuntime(sock)
		if err != nil {
			return err
		}
		h.sides[i] = &side{agent: agent, node: node, runtime: rv, manifests: filepath.Join(dir, agent, "manifests"),
			localVolumes: filepath.Join(dir, agent, "local-volumes")}
		h.rec.watchNode(node)
	}
	informerStop := make(chan struct{})
	defer close(informerStop)
	h.rec.startInformers(client, []string{KubeletNode, LockstepNode}, informerStop)

	runStart := time.Now()
	var outcomes []*Outcome
	if containerd != "" {
		if outcomes, err = h.runOneAfterTheOther(ctx, scenarios, parallel); err != nil {
			return err
		}
	} else {
		if err := both(func(_ int, sd *side) error { return h.procs.start(sd.agent) }, h.sides); err != nil {
			return err
		}
		if err := both(func(_ int, sd *side) error { return h.waitReady(ctx, sd, runStart) }, h.sides); err != nil {
			return err
		}
		log.Printf("both nodes Ready after %.1f s; running %d scenarios", time.Since(runStart).Seconds(), len(scenarios))
		outcomes = h.runAll(ctx, scenarios, parallel, h.run)
	}
	outcomes = append(append(outcomes, skipped...), h.nodeOutcome())
	catalogueWall := time.Since(runStart)
	if err := writeOutputs(outDir, outcomes, catalogueWall); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Differences are findings, not failures; a scenario the harness could
	// not run is.
	var broken []string
	for _, o := range outcomes {
		if o.Error != "" {
			broken = append(broken, o.Scenario.Name)
		}
	}
	if len(broken) > 0 {
		return fmt.Errorf("scenarios the harness could not run: %v", broken)
	}
	return nil
}

// waitReady waits until sd's node reports Ready with a heartbeat after since.
func (h *harness) waitReady(ctx context.Context, sd *side, since time.Time) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if h.procs.exited(sd.agent) {
			return fmt.Errorf("%s exited before its node was Ready (see its log)", sd.agent)
		}
		no, err := h.client.CoreV1().Nodes().Get(ctx, sd.node, metav1.GetOptions{})
		if err == nil {
			for _, c := range no.Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("node %s not Ready 3 min after its agent started", sd.node)
}

// runAll runs the shared scenarios, parallel at a time, then the
// exclusive ones one by one.
func (h *harness) runAll(ctx context.Context, scenarios []*Scenario, parallel int, run func(context.Context, *Scenario) *Outcome) []*Outcome {
	var shared, exclusive []*Scenario
	for _, s := range scenarios {
		if s.Exclusive {
			exclusive = append(exclusive, s)
		} else {
			shared = append(shared, s)
		}
	}
	outcomes := make([]*Outcome, 0, len(scenarios))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, parallel))
	for _, s := range shared {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			log.Printf("scenario %s: start", s.Name)
			o := run(ctx, s)
			log.Printf("scenario %s: %d differences (%.0f s)", s.Name, len(o.Differences), o.Wall)
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, s := range exclusive {
		if ctx.Err() != nil {
			break
		}
		log.Printf("scenario %s (alone): start", s.Name)
		o := run(ctx, s)
		log.Printf("scenario %s: %d differences (%.0f s)", s.Name, len(o.Differences), o.Wall)
		outcomes = append(outcomes, o)
	}
	return outcomes
}

// nodeOutcome compares the two nodes' own states and events over the run.
func (h *harness) nodeOutcome() *Outcome {
	ks, ke := h.rec.nodeRecording(KubeletNode)
	ls, le := h.rec.nodeRecording(LockstepNode)
	o := &Outcome{Scenario: &Scenario{Name: "node", Summary: "the Node objects and the nodes' own events over the whole run"}}
	o.Kubelet = Recording{Node: KubeletNode, Events: ke}
	o.Lockstep = Recording{Node: LockstepNode, Events: le}
	// Node states go in as results (a node changes with every scenario's
	// load; the sequence of distinct states is compared without times).
	o.Kubelet.Results = nodeResults(ks)
	o.Lockstep.Results = nodeResults(ls)
	o.Differences = append(compareResults(o.Kubelet.Results, o.Lockstep.Results), compareEvents(ke, le)...)
	return o
}

// nodeResults lists a node's distinct states (heartbeat-only changes are
// not states: times are not recorded) as one text.
func nodeResults(states []Observed[NodeState]) []Result {
	var text []byte
	var last []byte
	for _, s := range states {
		b, _ := json.MarshalIndent(s.State, "", " ")
		if string(b) == string(last) {
			continue
		}
		last = b
		text = append(append(text, b...), '\n')
	}
	return []Result{{Label: "node states", Text: string(text)}}
}
