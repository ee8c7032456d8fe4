package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const sample = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 150
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 7
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 3
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
apiserver_request_duration_seconds_count{resource="pods",verb="POST"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 1.5e+01
`

func TestParseRequestTotals(t *testing.T) {
	got, err := ParseRequestTotals(sample, "apiserver_request_total")
	if err != nil {
		t.Fatal(err)
	}
	want := Requests{
		"POST pods":         100,
		"PATCH pods/status": 152,
		"PUT leases":        7,
		"WATCH pods":        1,
		"POST events":       15,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseRequestTotals (-want +got):\n%s", diff)
	}
}

func TestParseSampleEscapes(t *testing.T) {
	name, labels, v, err := parseSample(`m{a="x\"y",b="c\\d",e="f\ng"} 2 1700000000`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": `x"y`, "b": `c\d`, "e": "f\ng"}, labels); diff != "" || name != "m" || v != 2 {
		t.Errorf("parseSample: name %q value %v labels (-want +got):\n%s", name, v, diff)
	}
	if _, _, _, err := parseSample(`m{a="x} 1`); err == nil {
		t.Error("unterminated label value: want an error")
	}
	if _, err := ParseRequestTotals("apiserver_request_total{verb=\"GET\"} notanumber\n", "apiserver_request_total"); err == nil {
		t.Error("bad value: want an error")
	}
}

func TestRequestsDiff(t *testing.T) {
	before := Requests{"POST pods": 10, "PUT leases": 3, "GET nodes": 4}
	after := Requests{"POST pods": 110, "PUT leases": 5, "GET nodes": 4, "PATCH pods/status": 200, "WATCH pods": 1}
	d := after.Sub(before)
	if diff := cmp.Diff(Requests{"POST pods": 100, "PUT leases": 2, "PATCH pods/status": 200, "WATCH pods": 1}, d); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}
	agent := d.Minus(Requests{"POST pods": 100, "LIST pods": 0})
	if diff := cmp.Diff(Requests{"PUT leases": 2, "PATCH pods/status": 200, "WATCH pods": 1}, agent); diff != "" {
		t.Errorf("Minus (-want +got):\n%s", diff)
	}
	per := agent.PerPod(100)
	if diff := cmp.Diff(Requests{"PUT leases": 0.02, "PATCH pods/status": 2, "WATCH pods": 0.01}, per); diff != "" {
		t.Errorf("PerPod (-want +got):\n%s", diff)
	}
	if got := per.Total(true); got != 2.02 {
		t.Errorf("Total without WATCH = %v, want 2.02", got)
	}
	per["WATCH nodes"] = 0.004 // rounds to 0: left out
	if got := per.String(); got != "PATCH pods/status 2, PUT leases 0.02, WATCH pods 0.01" {
		t.Errorf("String = %q", got)
	}
	if got := (Requests{"GET pods": 0.001}).String(); got != "none" {
		t.Errorf("String of only tiny counts = %q, want none", got)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := []time.Duration{Percentile(ds, 50), Percentile(ds, 90), Percentile(ds, 99), Percentile(ds, 100)}
	want := []time.Duration{50 * time.Millisecond, 90 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Percentile (-want +got):\n%s", diff)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("Percentile sorted its argument")
	}
	if Percentile(nil, 99) != 0 {
		t.Error("Percentile of nothing should be 0")
	}
	if got := Percentile([]time.Duration{3, 1, 2}, 99); got != 3 {
		t.Errorf("p99 of 3 values = %v, want the largest", got)
	}
	if got := Rate(500, 2*time.Second); got != 250 {
		t.Errorf("Rate = %v, want 250", got)
	}
}

func TestProcParsers(t *testing.T) {
	stat := "1234 (lock step) (x)) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 75 0 0 20 0 12 0 100 0 0"
	cpu, err := parseStatCPU(stat)
	if err != nil || cpu != 3.25 {
		t.Errorf("parseStatCPU = %v, %v; want 3.25 s", cpu, err)
	}
	rss, err := parseVmHWM("Name:\tlockstep\nVmPeak:\t  900 kB\nVmHWM:\t  122880 kB\nVmRSS:\t 1024 kB\n")
	if err != nil || rss != 120 {
		t.Errorf("parseVmHWM = %v, %v; want 120 MiB", rss, err)
	}
	if _, err := parseVmHWM("Name: x\n"); err == nil {
		t.Error("parseVmHWM without the line: want an error")
	}
}

func testResults() []Result {
	return []Result{
		{Agent: "lockstep", N: 100, QPS: "1000/2000", StartRate: 200, DeleteRate: 100,
			StartP50: 150 * time.Millisecond, StartP90: 300 * time.Millisecond, StartP99: 420 * time.Millisecond,
			DeleteP50: 80 * time.Millisecond, DeleteP99: 200 * time.Millisecond,
			StartReqs: Requests{"PATCH pods/status": 2, "POST events": 2}, DeleteReqs: Requests{"DELETE pods": 1, "PATCH pods/status": 1},
			IdleReqs: Requests{"PUT leases": 0.1}, AgentCPUPerPod: 0.002, ServerCPUPerPod: 0.004, PeakRSSMiB: 60,
			AgentStartCPUPerPod: 0.0012, ServerStartCPUPerPod: 0.0025,
			Procs:   []ProcFigures{{Name: "fakecri", CPUPerPod: 0.0005, PeakRSSMiB: 20}, {Name: "lockstep", CPUPerPod: 0.0015, PeakRSSMiB: 40}},
			SerialN: 20, SerialP50: 45 * time.Millisecond, SerialP99: 80 * time.Millisecond, SerialMax: 81 * time.Millisecond},
		{Agent: CeilingAgent, N: 100, StartRate: 400, DeleteRate: 400, AgentCPUPerPod: -1, PeakRSSMiB: -1,
			StartReqs: Requests{"PATCH pods/status": 1}, DeleteReqs: Requests{"DELETE pods": 1}},
		{Agent: "kubemark", N: 100, QPS: "1000/2000", StartRate: 40, DeleteRate: 20, AgentCPUPerPod: 0.03, PeakRSSMiB: 200, Err: "pods gone: 99 of 100"},
		{Agent: "lockstep", N: 1000, QPS: "1000/2000", StartRate: 300, DeleteRate: 150, AgentCPUPerPod: 0.0015, PeakRSSMiB: 90},
	}
}

func TestFillCeilingFractionsAndSort(t *testing.T) {
	rs := testResults()
	SortResults(rs)
	FillCeilingFractions(rs)
	type row struct {
		Agent       string
		N           int
		Start, Dele float64
	}
	var got []row
	for _, r := range rs {
		got = append(got, row{r.Agent, r.N, r.StartFrac, r.DeleteFrac})
	}
	want := []row{
		{CeilingAgent, 100, 1, 1},
		{"kubemark", 100, 0.1, 0.05},
		{"lockstep", 100, 0.5, 0.25},
		{"lockstep", 1000, 0, 0}, // no ceiling at 1000
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fractions (-want +got):\n%s", diff)
	}
}

func TestMarkdownTable(t *testing.T) {
	rs := testResults()[:3]
	SortResults(rs)
	FillCeilingFractions(rs)
	lines := strings.Split(MarkdownTable(rs), "\n")
	want := []string{
		"| agent | N | QPS/burst | start pods/s | × ceiling | start p50 / p90 / p99 ms | delete pods/s | × ceiling | delete p50 / p99 ms | req/pod start | req/pod delete | idle req/s | agent CPU ms/pod | apiserver+etcd CPU ms/pod | peak RSS MiB |",
		"|---|---:|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
		"| ceiling | 100 | ∞ | 400.0 | – | 0 / 0 / 0 | 400.0 | – | 0 / 0 | 1 | 1 | 0.00 | – | 0.0 | – |",
		"| kubemark (incomplete) | 100 | 1000/2000 | 40.0 | 0.10 | 0 / 0 / 0 | 20.0 | 0.05 | 0 / 0 | 0 | 0 | 0.00 | 30.0 | 0.0 | 200 |",
		"| lockstep | 100 | 1000/2000 | 200.0 | 0.50 | 150 / 300 / 420 | 100.0 | 0.25 | 80 / 200 | 4 | 2 | 0.10 | 2.0 | 4.0 | 60 |",
	}
	if diff := cmp.Diff(want, lines[:5]); diff != "" {
		t.Errorf("table head (-want +got):\n%s", diff)
	}
	text := strings.Join(lines, "\n")
	for _, s := range []string{
		"| lockstep | 100 | 1000/2000 | PATCH pods/status 2, POST events 2 | DELETE pods 1, PATCH pods/status 1 | PUT leases 0.1 |",
		"- kubemark N=100 QPS 1000/2000: pods gone: 99 of 100",
		"| lockstep | 100 | 1000/2000 | 1.2 | 2.5 | fakecri 0.5, 20; lockstep 1.5, 40 |",
		"| ceiling | 100 | ∞ | – | 0.0 | – |",
		"| lockstep | 1000/2000 | 20 | 45 | 80 | 81 |",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("table lacks %q:\n%s", s, text)
		}
	}
}

func TestSVG(t *testing.T) {
	rs := testResults()
	SortResults(rs)
	svg := SVG(rs)
	if !strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg"`) || !strings.HasSuffix(svg, "</svg>\n") {
		t.Fatalf("not an SVG document:\n%s", svg)
	}
	// lockstep has points at two N: one solid and one dashed line for
	// pods/s and one CPU line; kubemark and the ceiling one point each.
	if got := strings.Count(svg, "<polyline"); got != 3 {
		t.Errorf("%d polylines, want 3:\n%s", got, svg)
	}
	// Start, delete and CPU points: lockstep 2+2+2, ceiling 1+1 (no CPU),
	// kubemark 1+1+1.
	if got := strings.Count(svg, "<circle"); got != 11 {
		t.Errorf("%d points, want 11", got)
	}
	for _, s := range []string{">lockstep 1000/2000<", ">kubemark 1000/2000<", ">ceiling<", ">100<", ">1000<"} {
		if !strings.Contains(svg, s) {
			t.Errorf("SVG lacks %q", s)
		}
	}
	if niceCeil(420) != 500 || niceCeil(0.7) != 1 || niceCeil(2000) != 2000 {
		t.Errorf("niceCeil: %v %v %v", niceCeil(420), niceCeil(0.7), niceCeil(2000))
	}
}

func TestCeilingPatch(t *testing.T) {
	got := string(ceilingPatch(time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)))
	for _, s := range []string{`"phase":"Running"`, `{"type":"Ready","status":"True","lastTransitionTime":"2026-12-01T16:00:00Z"}`} {
		if !strings.Contains(got, s) {
			t.Errorf("patch lacks %s: %s", s, got)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("BENCH_COMPARE_N", "100 2000")
	t.Setenv("BENCH_COMPARE_QPS", "1000/2000 50/100")
	t.Setenv("BENCH_COMPARE_AGENTS", "kubemark lockstep")
	t.Setenv("BENCH_COMPARE_RELIST_N", "")
	t.Setenv("BENCH_COMPARE_IDLE", "30")
	c, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	got := []string{fmt.Sprint(c.ns), fmt.Sprint(c.qps), fmt.Sprint(c.agents), fmt.Sprint(c.relistN), c.idle.String()}
	want := []string{"[100 2000]", "[1000/2000 50/100]", "[kubemark lockstep]", "map[100:true]", "30s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loadConfig (-want +got):\n%s", diff)
	}
	for name, bad := range map[string]string{"BENCH_COMPARE_QPS": "50", "BENCH_COMPARE_N": "ten", "BENCH_COMPARE_AGENTS": "kubelet"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: error %v, want one naming the variable", name, bad, err)
			}
		})
	}
}
