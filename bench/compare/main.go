// Command compare is the driver of `make bench-compare`: against one
// kube-apiserver + etcd started by hack/bench-compare/run.sh it runs the
// upstream kubelet (kubemark's hollow node), lockstep on `lockstep fakecri`
// and a trivial ceiling client one after another, creates and deletes N
// pods for each, and prints a side-by-side table (markdown) and an SVG plot.
//
// Settings come from the environment: BENCH_COMPARE_N (pod counts, default
// "100 1000 2000"), BENCH_COMPARE_QPS (qps/burst pairs of the agents'
// clients, default "1000/2000 50/100"), BENCH_COMPARE_AGENTS (default
// "ceiling kubemark lockstep lockstep-relist"), BENCH_COMPARE_RELIST_N (the
// N at which lockstep-relist runs, default "100"), BENCH_COMPARE_IDLE
// (seconds of the idle window, default 60), BENCH_COMPARE_PROFILE (seconds
// of a CPU profile of lockstep and of fakecri from /debug/pprof taken from
// the start of the creations, and another from the start of the
// deletions, saved beside the run's logs; default 0: none),
// BENCH_COMPARE_SERIAL (pods started one at a time after each agent's run
// at the smallest N; default 0: none).
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Namespace holds every benchmark pod.
const Namespace = "bench-compare"

// creators is how many create (and delete) requests the driver has in
// flight, the same for every agent.
const creators = 32

type qpsSetting struct{ qps, burst int }

func (q qpsSetting) String() string { return fmt.Sprintf("%d/%d", q.qps, q.burst) }

type config struct {
	ns      []int
	qps     []qpsSetting
	agents  []string
	relistN map[int]bool
	idle    time.Duration
	profile time.Duration
	// serial is how many pods each agent starts one at a time after its
	// run at the smallest N (BENCH_COMPARE_SERIAL; 0: none).
	serial int
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func parseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func loadConfig() (config, error) {
	var c config
	var err error
	if c.ns, err = parseInts("BENCH_COMPARE_N", envOr("BENCH_COMPARE_N", "100 1000 2000")); err != nil {
		return c, err
	}
	for _, f := range strings.Fields(envOr("BENCH_COMPARE_QPS", "1000/2000 50/100")) {
		q, b, ok := strings.Cut(f, "/")
		qi, err1 := strconv.Atoi(q)
		bi, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || qi <= 0 || bi <= 0 {
			return c, fmt.Errorf("BENCH_COMPARE_QPS: %q is not qps/burst", f)
		}
		c.qps = append(c.qps, qpsSetting{qi, bi})
	}
	for _, a := range strings.Fields(envOr("BENCH_COMPARE_AGENTS", "ceiling kubemark lockstep lockstep-relist")) {
		switch a {
		case CeilingAgent, KubemarkAgent, LockstepAgent, LockstepRelistAgent:
			c.agents = append(c.agents, a)
		default:
			return c, fmt.Errorf("BENCH_COMPARE_AGENTS: unknown agent %q (ceiling, kubemark, lockstep, lockstep-relist)", a)
		}
	}
	rn, err := parseInts("BENCH_COMPARE_RELIST_N", envOr("BENCH_COMPARE_RELIST_N", "100"))
	if err != nil {
		return c, err
	}
	c.relistN = map[int]bool{}
	for _, n := range rn {
		c.relistN[n] = true
	}
	idle, err := strconv.Atoi(envOr("BENCH_COMPARE_IDLE", "60"))
	if err != nil || idle < 0 {
		return c, fmt.Errorf("BENCH_COMPARE_IDLE: %q is not a number of seconds", os.Getenv("BENCH_COMPARE_IDLE"))
	}
	c.idle = time.Duration(idle) * time.Second
	prof, err := strconv.Atoi(envOr("BENCH_COMPARE_PROFILE", "0"))
	if err != nil || prof < 0 {
		return c, fmt.Errorf("BENCH_COMPARE_PROFILE: %q is not a number of seconds", os.Getenv("BENCH_COMPARE_PROFILE"))
	}
	c.profile = time.Duration(prof) * time.Second
	if c.serial, err = strconv.Atoi(envOr("BENCH_COMPARE_SERIAL", "0")); err != nil || c.serial < 0 {
		return c, fmt.Errorf("BENCH_COMPARE_SERIAL: %q is not a number of pods", os.Getenv("BENCH_COMPARE_SERIAL"))
	}
	return c, nil
}

// driver holds what every run shares.
type driver struct {
	dir, lockstep, fakecri, kubemark, out string
	serverPIDs                            []int
	adminToken                            string
	admin                                 kubernetes.Interface
	track                                 *tracker
	cfg                                   config
	seq                                   int
}

func main() {
	var d driver
	var pidDir string
	flag.StringVar(&d.dir, "dir", "/tmp/lockstep-bench-compare", "scratch dir of the control plane (admin.kubeconfig, node-<name>.kubeconfig)")
	flag.StringVar(&pidDir, "pid-dir", "", "dir holding the kube-apiserver and etcd pid files (default <dir>/pids)")
	flag.StringVar(&d.lockstep, "lockstep", "", "lockstep binary")
	flag.StringVar(&d.fakecri, "fakecri", "", "fakecri binary (cmd/fakecri; default: lockstep's own `lockstep fakecri`)")
	flag.StringVar(&d.kubemark, "kubemark", "", "kubemark binary")
	flag.StringVar(&d.out, "out", "", "output dir (default /tmp/lockstep-bench-compare-<ts>)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if err := d.main(pidDir); err != nil {
		log.Fatalf("bench-compare: %v", err)
	}
}

func (d *driver) main(pidDir string) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	d.cfg = cfg
	if d.out == "" {
		d.out = "/tmp/lockstep-bench-compare-" + time.Now().UTC().Format("20060102T150405")
	}
	if err := os.MkdirAll(filepath.Join(d.out, "logs"), 0o755); err != nil {
		return fmt.Errorf("make output dir: %w", err)
	}
	if pidDir == "" {
		pidDir = filepath.Join(d.dir, "pids")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		b, err := os.ReadFile(filepath.Join(pidDir, name))
		if err != nil {
			return fmt.Errorf("pid of %s: %w", name, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("pid of %s: %w", name, err)
		}
		d.serverPIDs = append(d.serverPIDs, pid)
	}
	tok, err := os.ReadFile(filepath.Join(d.dir, "admin.token"))
	if err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	d.adminToken = strings.TrimSpace(string(tok))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	restCfg, err := clientConfig(filepath.Join(d.dir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	if d.admin, err = kubernetes.NewForConfig(restCfg); err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := d.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	d.track = newTracker(d.admin, Namespace)
	started := make(chan struct{})
	go d.track.run(ctx, started)
	<-started

	log.Printf("output in %s; N=%v QPS=%v agents=%v idle=%s", d.out, cfg.ns, cfg.qps, cfg.agents, cfg.idle)
	var results []Result
	save := func() {
		rs := append([]Result(nil), results...)
		SortResults(rs)
		FillCeilingFractions(rs)
		_ = writeOutputs(d.out, rs)
	}
	// QPS settings outermost, so that a run cut short has whole curves
	// against N; the ceiling (not rate limited) runs once per N, in the
	// first pass.
	for qi, q := range cfg.qps {
		for _, n := range cfg.ns {
			for _, agent := range cfg.agents {
				if agent == LockstepRelistAgent && !cfg.relistN[n] || agent == CeilingAgent && qi > 0 {
					continue
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r := d.run(ctx, agent, n, q)
				if r.Err != "" {
					log.Printf("%s N=%d QPS %s: INCOMPLETE: %s", agent, n, qpsLabel(r.QPS), r.Err)
				}
				results = append(results, r)
				save()
			}
		}
	}
	SortResults(results)
	FillCeilingFractions(results)
	if err := writeOutputs(d.out, results); err != nil {
		return err
	}
	fmt.Println(MarkdownTable(results))
	fmt.Printf("results, table and plot in %s (results.json, table.md, bench-compare.svg)\n", d.out)
	return nil
}

// clientConfig loads a kubeconfig with no client-side rate limit and
// protobuf encoding.
func clientConfig(path string) (*rest.Config, error) {
	c, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	c.QPS, c.Burst = -1, 0
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return c, nil
}

func writeOutputs(dir string, rs []Result) error {
	js, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	for name, data := range map[string][]byte{
		"results.json":      js,
		"table.md":          []byte(MarkdownTable(rs)),
		"bench-compare.svg": []byte(SVG(rs)),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// scrape reads apiserver_request_total from the apiserver's /metrics.
func (d *driver) scrape(ctx context.Context) (Requests, error) {
	b, err := d.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape the apiserver's metrics: %w", err)
	}
	return ParseRequestTotals(string(b), "apiserver_request_total")
}

// run measures one agent at one N and QPS setting.
func (d *driver) run(ctx context.Context, agent string, n int, q qpsSetting) (res Result) {
	res = Result{Agent: agent, N: n, AgentCPUPerPod: -1, PeakRSSMiB: -1}
	if agent != CeilingAgent {
		res.QPS = q.String()
	}
	d.seq++
	prefix := fmt.Sprintf("r%d-", d.seq)
	node := NodeName(agent)
	logDir := filepath.Join(d.out, "logs", fmt.Sprintf("%02d-%s-n%d-q%d", d.seq, agent, n, q.qps))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		res.Err = err.Error()
		return res
	}
	log.Printf("=== %s N=%d QPS %s (pods %s*)", agent, n, qpsLabel(res.QPS), prefix)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var ag *running
	var pids []int
	dead := func() string { return "" }
	defer d.cleanup(node, prefix)
	if agent == CeilingAgent {
		cfg, err := clientConfig(filepath.Join(d.dir, "node-"+node+".kubeconfig"))
		if err != nil {
			res.Err = err.Error()
			return res
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		if err := runCeiling(runCtx, c, Namespace, node); err != nil {
			res.Err = err.Error()
			return res
		}
	} else {
		var err error
		if ag, err = d.startAgent(runCtx, agent, q.qps, q.burst, logDir); err != nil {
			res.Err = err.Error()
			return res
		}
		defer ag.stop()
		pids, dead = ag.pids(), ag.dead
		if err := d.waitNodeReady(ctx, node, 90*time.Second, dead); err != nil {
			res.Err = err.Error()
			return res
		}
		time.Sleep(3 * time.Second) // let registration's writes settle
	}
	cpu := func() float64 {
		if len(pids) == 0 {
			return 0
		}
		c, err := sumCPU(pids)
		if err != nil {
			log.Printf("%s: %v", agent, err)
		}
		return c
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}

	// Start.
	srv0, _ := sumCPU(d.serverPIDs)
	cpu0 := cpu()
	m0, err := d.scrape(ctx)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	relist0 := d.track.relists()
	ready0, _ := d.track.counts()
	var procCPU0 []float64
	if ag != nil {
		procCPU0 = ag.cpus()
	}
	if ag != nil && d.cfg.profile > 0 {
		saveCPUProfiles(runCtx, ag, d.adminToken, d.cfg.profile, logDir, "")
	}
	t0 := time.Now()
	d.forEach(ctx, names, func(ctx context.Context, name string) error {
		d.track.expect(name, time.Now())
		_, err := d.admin.CoreV1().Pods(Namespace).Create(ctx, benchPod(name, node), metav1.CreateOptions{})
		return err
	})
	startErr := waitFor(ctx, "pods Running+Ready", time.Minute+time.Duration(n)*250*time.Millisecond, time.Minute,
		func() (int, int, string) { r, _ := d.track.counts(); return r - ready0, n, dead() })
	m1, err := d.scrape(ctx)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	cpu1 := cpu()
	srv1, _ := sumCPU(d.serverPIDs)
	var procCPU1 []float64
	if ag != nil {
		procCPU1 = ag.cpus()
		if startErr == nil {
			// The heap with every pod running: what each process keeps
			// per pod (RSS is this plus the garbage between collections).
			ag.saveHeaps(ctx, d.adminToken, logDir, "")
		}
	}
	own := Requests{"POST pods": float64(n), "LIST pods": float64(d.track.relists() - relist0)}
	res.StartReqs = m1.Sub(m0).Minus(own).PerPod(n)
	if startErr != nil {
		res.Err = startErr.Error()
	}

	// Idle, with the pods running.
	if startErr == nil && d.cfg.idle > 0 {
		time.Sleep(5 * time.Second)
		mi0, err := d.scrape(ctx)
		if err == nil {
			ti := time.Now()
			select {
			case <-ctx.Done():
				return res
			case <-time.After(d.cfg.idle):
			}
			if mi1, err := d.scrape(ctx); err == nil {
				secs := time.Since(ti).Seconds()
				res.IdleSeconds = secs
				// The second scrape counts the first (a non-resource GET,
				// left out by the parser).
				idle := mi1.Sub(mi0)
				for k, v := range idle {
					idle[k] = v / secs
				}
				res.IdleReqs = idle
			}
		}
	}

	// Delete.
	cpu2 := cpu()
	srv2, _ := sumCPU(d.serverPIDs)
	var procCPU2 []float64
	if ag != nil {
		procCPU2 = ag.cpus()
	}
	m2, err := d.scrape(ctx)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	relist2 := d.track.relists()
	_, gone0 := d.track.counts()
	if ag != nil && d.cfg.profile > 0 {
		saveCPUProfiles(runCtx, ag, d.adminToken, d.cfg.profile, logDir, "-delete")
	}
	t2 := time.Now()
	if ag != nil {
		// The heap again when a fifth of the pods are gone: deletion has
		// its own peak (every pod's termination in flight at once).
		go func() {
			for runCtx.Err() == nil {
				if _, g := d.track.counts(); g-gone0 >= n/5 {
					ag.saveHeaps(runCtx, d.adminToken, logDir, "-mid-delete")
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	d.forEach(ctx, names, func(ctx context.Context, name string) error {
		d.track.deleting(name, time.Now())
		return d.admin.CoreV1().Pods(Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	delErr := waitFor(ctx, "pods gone", time.Minute+time.Duration(n)*250*time.Millisecond, time.Minute,
		func() (int, int, string) { _, g := d.track.counts(); return g - gone0, n, dead() })
	m3, err := d.scrape(ctx)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	cpu3 := cpu()
	srv3, _ := sumCPU(d.serverPIDs)
	own = Requests{"DELETE pods": float64(n), "LIST pods": float64(d.track.relists() - relist2)}
	res.DeleteReqs = m3.Sub(m2).Minus(own).PerPod(n)
	if delErr != nil && res.Err == "" {
		res.Err = delErr.Error()
	}
	if ag != nil {
		if rss, err := ag.peakRSS(); err == nil {
			res.PeakRSSMiB = rss
		}
		res.AgentCPUPerPod = (cpu1 - cpu0 + cpu3 - cpu2) / float64(n)
		res.AgentStartCPUPerPod = (cpu1 - cpu0) / float64(n)
		procCPU3 := ag.cpus()
		for i, p := range ag.procs {
			f := ProcFigures{Name: p.name, PeakRSSMiB: -1,
				CPUPerPod: (procCPU1[i] - procCPU0[i] + procCPU3[i] - procCPU2[i]) / float64(n)}
			if rss, err := ProcPeakRSS(p.pid()); err == nil {
				f.PeakRSSMiB = rss
			}
			res.Procs = append(res.Procs, f)
		}
	}
	res.ServerCPUPerPod = (srv1 - srv0 + srv3 - srv2) / float64(n)
	res.ServerStartCPUPerPod = (srv1 - srv0) / float64(n)

	// Pods started one at a time: the latency of a start with nothing
	// else going on (the PLEG's floor: events against the relist period).
	if ag != nil && d.cfg.serial > 0 && n == slices.Min(d.cfg.ns) && startErr == nil && delErr == nil {
		lat, err := d.serialStarts(ctx, node, prefix+"s", d.cfg.serial, dead)
		if err != nil {
			log.Printf("%s: serial starts: %v", agent, err)
		} else {
			res.SerialN = len(lat)
			res.SerialP50, res.SerialP99, res.SerialMax = Percentile(lat, 50), Percentile(lat, 99), slices.Max(lat)
			log.Printf("%s: %d pods started one at a time: p50 %s p99 %s max %s", agent, len(lat),
				res.SerialP50.Round(time.Millisecond), res.SerialP99.Round(time.Millisecond), res.SerialMax.Round(time.Millisecond))
		}
	}

	// Latencies and rates from the watch's times.
	times := d.track.take(names)
	var starts, deletes []time.Duration
	var lastReady, lastGone time.Time
	for _, p := range times {
		if !p.ready.IsZero() {
			starts = append(starts, p.ready.Sub(p.created))
			if p.ready.After(lastReady) {
				lastReady = p.ready
			}
		}
		if !p.gone.IsZero() && !p.deleted.IsZero() {
			deletes = append(deletes, p.gone.Sub(p.deleted))
			if p.gone.After(lastGone) {
				lastGone = p.gone
			}
		}
	}
	res.StartP50, res.StartP90, res.StartP99 = Percentile(starts, 50), Percentile(starts, 90), Percentile(starts, 99)
	res.DeleteP50, res.DeleteP99 = Percentile(deletes, 50), Percentile(deletes, 99)
	if len(starts) == n {
		res.StartRate = Rate(n, lastReady.Sub(t0))
	}
	if len(deletes) == n {
		res.DeleteRate = Rate(n, lastGone.Sub(t2))
	}
	log.Printf("%s N=%d QPS %s: start %.1f pods/s (p50 %s p99 %s), delete %.1f pods/s (p99 %s), req/pod start %s / delete %s, idle %.2f req/s, agent CPU %s ms/pod, RSS %s MiB",
		agent, n, qpsLabel(res.QPS), res.StartRate, res.StartP50.Round(time.Millisecond), res.StartP99.Round(time.Millisecond),
		res.DeleteRate, res.DeleteP99.Round(time.Millisecond), trimFloat(res.StartReqs.Total(true)), trimFloat(res.DeleteReqs.Total(true)),
		res.IdleReqs.Total(true), orDash(res.AgentCPUPerPod*1000, "%.2f"), orDash(res.PeakRSSMiB, "%.0f"))
	for _, p := range res.Procs {
		log.Printf("  %s: CPU %.2f ms/pod, peak RSS %.0f MiB", p.Name, p.CPUPerPod*1000, p.PeakRSSMiB)
	}
	return res
}

// forEach runs f for every name with `creators` in flight; errors are
// logged (the watch decides whether the pods made it).
func (d *driver) forEach(ctx context.Context, names []string, f func(context.Context, string) error) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < creators; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range ch {
				if err := f(ctx, name); err != nil && ctx.Err() == nil {
					log.Printf("pod %s: %v", name, err)
				}
			}
		}()
	}
	for _, n := range names {
		ch <- n
	}
	close(ch)
	wg.Wait()
}

// waitNodeReady waits until node reports Ready.
func (d *driver) waitNodeReady(ctx context.Context, node string, timeout time.Duration, dead func() string) error {
	return waitFor(ctx, "node "+node+" Ready", timeout, timeout, func() (int, int, string) {
		n, err := d.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return 1, 1, ""
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
		return 0, 1, dead()
	})
}

// cleanup force-deletes what a run left behind: its pods, its Node and the
// node's lease, so the next run of the agent starts afresh.
func (d *driver) cleanup(node, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zero := int64(0)
	pods, err := d.admin.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err == nil {
		var left []string
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		if len(left) > 0 {
			log.Printf("cleanup: force-deleting %d pods left on %s", len(left), node)
			d.forEach(ctx, left, func(ctx context.Context, name string) error {
				err := d.admin.CoreV1().Pods(Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
		}
	}
	if err := d.admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Printf("cleanup: delete node %s: %v", node, err)
	}
	if err := d.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Printf("cleanup: delete lease %s: %v", node, err)
	}
	_ = prefix
}

// benchPod is the pod every agent runs: one busybox container, no volumes
// (no service account token), the default 30 s grace period.
func benchPod(name, node string) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{"app": "bench-compare"}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{
				Name:  "c",
				Image: "busybox:latest",
				// A server that exits on SIGTERM, as most do: `sleep` as
				// PID 1 ignores it, and lockstep fakecri models that (the
				// kill would wait out the 30 s grace period), while
				// kubemark's fake runtime stops everything at once.
				Command:         []string{"httpd", "-f", "-p", "8080"},
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
}

// saveCPUProfiles fetches CPU profiles of secs, in the background, from
// lockstep's /debug/pprof (its secure port, self-signed; the admin token,
// checked by TokenReview, AlwaysAllow in this benchmark) and from
// fakecri's (its plain-HTTP --pprof-address), into dir as
// <process>-cpu<suffix>.pprof.
func saveCPUProfiles(ctx context.Context, ag *running, token string, secs time.Duration, dir, suffix string) {
	q := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(secs.Seconds()))
	if ag.pprofPort != 0 {
		go saveProfile(ctx, "lockstep", fmt.Sprintf("https://127.0.0.1:%d%s", ag.pprofPort, q), token, filepath.Join(dir, "lockstep-cpu"+suffix+".pprof"))
	}
	if ag.runtimePprof != "" {
		go saveProfile(ctx, "fakecri", "http://"+ag.runtimePprof+q, "", filepath.Join(dir, "fakecri-cpu"+suffix+".pprof"))
	}
}

// saveProfile fetches one profile of process who from url into path,
// logging the outcome.
func saveProfile(ctx context.Context, who, url, token, path string) {
	if err := fetchProfile(ctx, url, token, path); err != nil {
		log.Printf("profile of %s: %v", who, err)
		return
	}
	log.Printf("CPU profile of %s in %s", who, path)
}

// fetchProfile GETs a profile from url (with a bearer token when given;
// lockstep's secure port is self-signed) into path.
func fetchProfile(ctx context.Context, url, token, path string) error {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return os.WriteFile(path, b, 0o644)
}

// serialStarts creates k pods on node one at a time, each at a random
// moment within a second of the one before being Running and Ready, and
// returns each one's create → Running+
// Ready latency (as the watch saw it); then deletes them.
func (d *driver) serialStarts(ctx context.Context, node, prefix string, k int, dead func() string) ([]time.Duration, error) {
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	defer func() {
		_, gone0 := d.track.counts()
		for _, name := range names {
			d.track.deleting(name, time.Now())
			if err := d.admin.CoreV1().Pods(Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				log.Printf("delete %s: %v", name, err)
			}
		}
		_ = waitFor(ctx, "serial pods gone", time.Minute, time.Minute,
			func() (int, int, string) { _, g := d.track.counts(); return g - gone0, k, dead() })
		d.track.take(names)
	}()
	rng := rand.New(rand.NewPCG(uint64(k), 1))
	for _, name := range names {
		// Created at a random moment within a second of the one before
		// being Ready: Ready is seen just after a relist, so without the
		// pause every pod would wait out a whole relist period.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(rng.Int64N(int64(time.Second)))):
		}
		ready0, _ := d.track.counts()
		d.track.expect(name, time.Now())
		if _, err := d.admin.CoreV1().Pods(Namespace).Create(ctx, benchPod(name, node), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
		if err := waitFor(ctx, "pod "+name+" Running+Ready", 30*time.Second, 30*time.Second,
			func() (int, int, string) { r, _ := d.track.counts(); return r - ready0, 1, dead() }); err != nil {
			return nil, err
		}
	}
	var out []time.Duration
	for _, p := range d.track.peek(names) {
		if !p.ready.IsZero() {
			out = append(out, p.ready.Sub(p.created))
		}
	}
	if len(out) != k {
		return nil, fmt.Errorf("%d of %d serial pods timed", len(out), k)
	}
	return out, nil
}
