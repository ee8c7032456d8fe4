package main

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
	"time"
)

// CeilingAgent is the name of the trivial client that bounds what the
// apiserver can take.
const CeilingAgent = "ceiling"

// Result holds the figures of one (agent, N, QPS) run.
type Result struct {
	Agent string `json:"agent"`
	N     int    `json:"n"`
	// QPS is "qps/burst" of the agent's client ("" for the ceiling, whose
	// client is not rate limited).
	QPS string `json:"qps"`
	// Err is why the run did not finish (a timeout, a crash); figures
	// measured before it are kept.
	Err string `json:"error,omitempty"`

	StartRate  float64       `json:"start_pods_per_s"`
	StartP50   time.Duration `json:"start_p50_ns"`
	StartP90   time.Duration `json:"start_p90_ns"`
	StartP99   time.Duration `json:"start_p99_ns"`
	DeleteRate float64       `json:"delete_pods_per_s"`
	DeleteP50  time.Duration `json:"delete_p50_ns"`
	DeleteP99  time.Duration `json:"delete_p99_ns"`

	// StartReqs and DeleteReqs are the agent's requests per pod by verb and
	// resource (apiserver_request_total, the driver's own creates and
	// deletes subtracted).
	StartReqs  Requests `json:"start_requests_per_pod"`
	DeleteReqs Requests `json:"delete_requests_per_pod"`
	// IdleReqs are all requests per second with N pods running and nothing
	// happening (the apiserver's own background requests included).
	IdleReqs    Requests `json:"idle_requests_per_s"`
	IdleSeconds float64  `json:"idle_seconds"`

	// AgentCPUPerPod is the agent's CPU seconds (user+system, every process
	// of the agent) over the start and delete phases divided by N; negative
	// when not measured (the ceiling runs inside the driver).
	AgentCPUPerPod float64 `json:"agent_cpu_s_per_pod"`
	// ServerCPUPerPod is the same for kube-apiserver + etcd.
	ServerCPUPerPod float64 `json:"apiserver_etcd_cpu_s_per_pod"`
	// AgentStartCPUPerPod and ServerStartCPUPerPod are the start phase's
	// alone.
	AgentStartCPUPerPod  float64 `json:"agent_start_cpu_s_per_pod"`
	ServerStartCPUPerPod float64 `json:"apiserver_etcd_start_cpu_s_per_pod"`
	// SerialN pods were started one at a time after the run (each once
	// the one before was Running and Ready): their latency p50/p99/max.
	SerialN   int           `json:"serial_n,omitempty"`
	SerialP50 time.Duration `json:"serial_p50_ns,omitempty"`
	SerialP99 time.Duration `json:"serial_p99_ns,omitempty"`
	SerialMax time.Duration `json:"serial_max_ns,omitempty"`
	// PeakRSSMiB is the sum of the agent processes' VmHWM; negative when not
	// measured.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// Procs are the same two figures for each of the agent's processes
	// (lockstep and fakecri apart), in start order.
	Procs []ProcFigures `json:"procs,omitempty"`

	// StartFrac and DeleteFrac are the pods/s as a fraction of the
	// ceiling's at the same N (0 when there is no ceiling run).
	StartFrac  float64 `json:"start_fraction_of_ceiling"`
	DeleteFrac float64 `json:"delete_fraction_of_ceiling"`
}

// ProcFigures are one agent process's CPU seconds per pod (start and
// delete phases) and peak RSS.
type ProcFigures struct {
	Name       string  `json:"name"`
	CPUPerPod  float64 `json:"cpu_s_per_pod"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

// FillCeilingFractions sets StartFrac and DeleteFrac of every result from
// the ceiling's result at the same N.
func FillCeilingFractions(rs []Result) {
	ceil := map[int]Result{}
	for _, r := range rs {
		if r.Agent == CeilingAgent {
			ceil[r.N] = r
		}
	}
	for i := range rs {
		c, ok := ceil[rs[i].N]
		if !ok {
			continue
		}
		if c.StartRate > 0 {
			rs[i].StartFrac = rs[i].StartRate / c.StartRate
		}
		if c.DeleteRate > 0 {
			rs[i].DeleteFrac = rs[i].DeleteRate / c.DeleteRate
		}
	}
}

// SortResults orders results by N, then QPS, then agent.
func SortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].N != rs[j].N {
			return rs[i].N < rs[j].N
		}
		if rs[i].QPS != rs[j].QPS {
			return rs[i].QPS < rs[j].QPS
		}
		return rs[i].Agent < rs[j].Agent
	})
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
}

func orDash(v float64, format string) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func qpsLabel(q string) string {
	if q == "" {
		return "∞"
	}
	return q
}

// MarkdownTable renders the side-by-side table: one row per run, then the
// requests per pod by verb and resource.
func MarkdownTable(rs []Result) string {
	var b strings.Builder
	b.WriteString("| agent | N | QPS/burst | start pods/s | × ceiling | start p50 / p90 / p99 ms | delete pods/s | × ceiling | delete p50 / p99 ms | req/pod start | req/pod delete | idle req/s | agent CPU ms/pod | apiserver+etcd CPU ms/pod | peak RSS MiB |\n")
	b.WriteString("|---|---:|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		frac := func(f float64) string {
			if r.Agent == CeilingAgent || f == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f", f)
		}
		agent := r.Agent
		if r.Err != "" {
			agent += " (incomplete)"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f | %s | %s / %s / %s | %.1f | %s | %s / %s | %s | %s | %s | %s | %s | %s |\n",
			agent, r.N, qpsLabel(r.QPS),
			r.StartRate, frac(r.StartFrac), ms(r.StartP50), ms(r.StartP90), ms(r.StartP99),
			r.DeleteRate, frac(r.DeleteFrac), ms(r.DeleteP50), ms(r.DeleteP99),
			trimFloat(r.StartReqs.Total(true)), trimFloat(r.DeleteReqs.Total(true)),
			fmt.Sprintf("%.2f", r.IdleReqs.Total(true)),
			orDash(r.AgentCPUPerPod*1000, "%.1f"), fmt.Sprintf("%.1f", r.ServerCPUPerPod*1000),
			orDash(r.PeakRSSMiB, "%.0f"))
	}
	b.WriteString("\nRequests per pod by verb and resource (WATCH left out of the totals above):\n\n")
	b.WriteString("| agent | N | QPS/burst | per pod started | per pod deleted | idle, per second |\n|---|---:|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", r.Agent, r.N, qpsLabel(r.QPS),
			r.StartReqs, r.DeleteReqs, r.IdleReqs)
	}
	b.WriteString("\nCPU of the start phase alone, per pod, and processes apart (ms; peak RSS MiB):\n\n")
	b.WriteString("| agent | N | QPS/burst | agent start CPU | apiserver+etcd start CPU | processes: CPU ms/pod, peak RSS |\n|---|---:|---|---:|---:|---|\n")
	for _, r := range rs {
		var procs []string
		for _, p := range r.Procs {
			procs = append(procs, fmt.Sprintf("%s %.1f, %.0f", p.Name, p.CPUPerPod*1000, p.PeakRSSMiB))
		}
		agentCPU := "–"
		if r.Agent != CeilingAgent {
			agentCPU = fmt.Sprintf("%.1f", r.AgentStartCPUPerPod*1000)
		}
		procList := "–"
		if len(procs) > 0 {
			procList = strings.Join(procs, "; ")
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.1f | %s |\n", r.Agent, r.N, qpsLabel(r.QPS),
			agentCPU, r.ServerStartCPUPerPod*1000, procList)
	}
	var serial []string
	for _, r := range rs {
		if r.SerialN > 0 {
			serial = append(serial, fmt.Sprintf("| %s | %s | %d | %s | %s | %s |", r.Agent, qpsLabel(r.QPS), r.SerialN, ms(r.SerialP50), ms(r.SerialP99), ms(r.SerialMax)))
		}
	}
	if len(serial) > 0 {
		b.WriteString("\nPods started one at a time (each once the one before is Running and Ready; create → Running+Ready, ms):\n\n")
		b.WriteString("| agent | QPS/burst | pods | p50 | p99 | max |\n|---|---|---:|---:|---:|---:|\n")
		b.WriteString(strings.Join(serial, "\n") + "\n")
	}
	var errs []string
	for _, r := range rs {
		if r.Err != "" {
			errs = append(errs, fmt.Sprintf("- %s N=%d QPS %s: %s", r.Agent, r.N, qpsLabel(r.QPS), r.Err))
		}
	}
	if len(errs) > 0 {
		b.WriteString("\nIncomplete runs:\n\n" + strings.Join(errs, "\n") + "\n")
	}
	return b.String()
}

// series is one line of a plot: an agent at one QPS setting.
type series struct {
	name   string
	points map[int]float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

// SVG draws two panels against N (categorical axis): start and delete
// pods/s (solid and dashed), and agent CPU ms per pod.
func SVG(rs []Result) string {
	var ns []int
	seenN := map[int]bool{}
	var names []string
	start, del, cpu := map[string]*series{}, map[string]*series{}, map[string]*series{}
	for _, r := range rs {
		if !seenN[r.N] {
			seenN[r.N] = true
			ns = append(ns, r.N)
		}
		name := r.Agent
		if r.QPS != "" {
			name += " " + r.QPS
		}
		if _, ok := start[name]; !ok {
			names = append(names, name)
			start[name] = &series{name: name, points: map[int]float64{}}
			del[name] = &series{name: name, points: map[int]float64{}}
			cpu[name] = &series{name: name, points: map[int]float64{}}
		}
		start[name].points[r.N] = r.StartRate
		del[name].points[r.N] = r.DeleteRate
		if r.AgentCPUPerPod >= 0 {
			cpu[name].points[r.N] = r.AgentCPUPerPod * 1000
		}
	}
	sort.Ints(ns)
	const w, h, panelW, top, bottom, left = 1000, 420, 380, 40, 320, 60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	panel := func(x0 int, title, unit string, solid, dashed map[string]*series) {
		maxV := 0.0
		for _, m := range []map[string]*series{solid, dashed} {
			for _, s := range m {
				for _, v := range s.points {
					maxV = math.Max(maxV, v)
				}
			}
		}
		maxV = niceCeil(maxV)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", x0, top-16, html.EscapeString(title))
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0, bottom, x0+panelW, bottom)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0, top, x0, bottom)
		for i := 0; i <= 4; i++ {
			v := maxV * float64(i) / 4
			y := float64(bottom) - float64(bottom-top)*float64(i)/4
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+panelW, y)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, y+4, trimFloat(v))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">pods (N) — %s</text>`+"\n", x0+panelW/2, bottom+34, html.EscapeString(unit))
		xOf := func(i int) float64 {
			if len(ns) == 1 {
				return float64(x0) + panelW/2
			}
			return float64(x0) + 30 + float64(panelW-60)*float64(i)/float64(len(ns)-1)
		}
		for i, n := range ns {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", xOf(i), bottom+16, n)
		}
		yOf := func(v float64) float64 {
			if maxV == 0 {
				return float64(bottom)
			}
			return float64(bottom) - float64(bottom-top)*v/maxV
		}
		draw := func(m map[string]*series, dash string, hollow bool) {
			for si, name := range names {
				s := m[name]
				if s == nil {
					continue
				}
				var pts []string
				for i, n := range ns {
					if v, ok := s.points[n]; ok {
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(v)))
						color := palette[si%len(palette)]
						fill := color
						if hollow {
							fill = "white"
						}
						fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n", xOf(i), yOf(v), fill, color)
					}
				}
				if len(pts) > 1 {
					fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", palette[si%len(palette)], dash, strings.Join(pts, " "))
				}
			}
		}
		draw(solid, "", false)
		if dashed != nil {
			draw(dashed, ` stroke-dasharray="6,4"`, true)
		}
	}
	panel(left, "pods/s: started (solid), deleted (dashed, hollow)", "pods/s", start, del)
	panel(left+panelW+100, "agent CPU per pod, start + delete", "CPU ms per pod", cpu, nil)
	for i, name := range names {
		x := left + (i%4)*230
		y := bottom + 56 + (i/4)*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y-4, palette[i%len(palette)], x+20, y, html.EscapeString(name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v ≤ 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
