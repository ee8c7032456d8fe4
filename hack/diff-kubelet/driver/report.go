package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// table renders the summary: scenario, same / N differences, the first.
func table(outcomes []*Outcome, wall time.Duration) string {
	var b strings.Builder
	same := 0
	fmt.Fprintf(&b, "| scenario | result | first difference |\n|---|---|---|\n")
	for _, o := range outcomes {
		res, first := "same", ""
		switch {
		case o.Skipped != "":
			res, first = "skipped", o.Skipped
		case o.Error != "":
			res, first = "ERROR", o.Error
		case len(o.Differences) > 0:
			res = fmt.Sprintf("%d differences (%s)", len(o.Differences), kinds(o.Differences))
			first = o.Differences[0].String()
		default:
			same++
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", o.Scenario.Name, res, cell(first))
	}
	fmt.Fprintf(&b, "\n%d of %d same; wall time %s\n", same, len(outcomes), wall.Round(time.Second))
	return b.String()
}

// kinds counts differences by what they are about: pod states (and how
// many of them transient), events, files/logs/exec results.
func kinds(ds []Difference) string {
	var st, tr, ev, res int
	for _, d := range ds {
		switch {
		case strings.HasPrefix(d.Where, "pod "):
			st++
			if strings.Contains(d.What, "(transient:") {
				tr++
			}
		case strings.HasPrefix(d.Where, "events of "):
			ev++
		default:
			res++
		}
	}
	if tr > 0 {
		return fmt.Sprintf("%d states (%d transient), %d events, %d files/logs/exec", st, tr, ev, res)
	}
	return fmt.Sprintf("%d states, %d events, %d files/logs/exec", st, ev, res)
}

// cell makes text fit a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// writeOutputs writes table.md (and prints it), report.html and
// recordings.json into dir.
func writeOutputs(dir string, outcomes []*Outcome, wall time.Duration) error {
	sort.SliceStable(outcomes, func(i, j int) bool {
		if (outcomes[i].Scenario.Name == "node") != (outcomes[j].Scenario.Name == "node") {
			return outcomes[j].Scenario.Name == "node"
		}
		return outcomes[i].Scenario.Name < outcomes[j].Scenario.Name
	})
	t := table(outcomes, wall)
	fmt.Print("\n" + t)
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(t), 0o644); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	b, err := json.MarshalIndent(outcomes, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "recordings.json"), b, 0o644); err != nil {
		return fmt.Errorf("write recordings: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer f.Close()
	return reportTemplate.Execute(f, reportData(outcomes, wall))
}

// htmlScenario is one scenario's section of the report.
type htmlScenario struct {
	Name, Summary, Error string
	Differences          []Difference
	Rows                 []htmlRow
	Events               []htmlRow
	Results              []htmlResult
}

// htmlRow is a line of the side-by-side timeline: a time and what each
// node showed then (empty when it showed nothing new); Diff marks a state
// only one side showed.
type htmlRow struct {
	At                float64
	Where             string
	Kubelet, Lockstep string
	Diff              bool
}

type htmlResult struct {
	Label, Kubelet, Lockstep string
	Diff                     bool
}

func reportData(outcomes []*Outcome, wall time.Duration) map[string]any {
	var ss []htmlScenario
	for _, o := range outcomes {
		h := htmlScenario{Name: o.Scenario.Name, Summary: o.Scenario.Summary, Error: o.Error, Differences: o.Differences}
		onlyAt := map[string]bool{}
		for _, d := range o.Differences {
			onlyAt[fmt.Sprintf("%s@%d", d.Where, d.At)] = true
		}
		for _, pod := range unionKeys(o.Kubelet.Pods, o.Lockstep.Pods) {
			for _, side := range []struct {
				seq []Observed[PodState]
				k   bool
			}{{o.Kubelet.Pods[pod], true}, {o.Lockstep.Pods[pod], false}} {
				for _, st := range side.seq {
					b, _ := json.MarshalIndent(st.State, "", " ")
					r := htmlRow{At: st.At.Seconds(), Where: pod, Diff: onlyAt[fmt.Sprintf("pod %s@%d", pod, st.At)]}
					if side.k {
						r.Kubelet = string(b)
					} else {
						r.Lockstep = string(b)
					}
					h.Rows = append(h.Rows, r)
				}
			}
		}
		sort.SliceStable(h.Rows, func(i, j int) bool { return h.Rows[i].At < h.Rows[j].At })
		for _, e := range o.Kubelet.Events {
			h.Events = append(h.Events, htmlRow{At: e.First.Seconds(), Where: e.Object, Kubelet: describeEvent(e)})
		}
		for _, e := range o.Lockstep.Events {
			h.Events = append(h.Events, htmlRow{At: e.First.Seconds(), Where: e.Object, Lockstep: describeEvent(e)})
		}
		sort.SliceStable(h.Events, func(i, j int) bool { return h.Events[i].At < h.Events[j].At })
		km, lm := map[string]string{}, map[string]string{}
		for _, r := range o.Kubelet.Results {
			km[r.Label] = r.Text
		}
		for _, r := range o.Lockstep.Results {
			lm[r.Label] = r.Text
		}
		for _, label := range unionKeys(km, lm) {
			h.Results = append(h.Results, htmlResult{Label: label, Kubelet: km[label], Lockstep: lm[label], Diff: km[label] != lm[label]})
		}
		ss = append(ss, h)
	}
	return map[string]any{"Scenarios": ss, "Table": table(outcomes, wall), "Generated": time.Now().UTC().Format(time.RFC3339)}
}

var reportTemplate = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>diff-kubelet: upstream kubelet v1.37.2 vs lockstep</title>
<style>
body{font-family:sans-serif;margin:1em 2em}
table{border-collapse:collapse;width:100%;table-layout:fixed}
td,th{border:1px solid #ccc;vertical-align:top;padding:2px 4px;font-size:12px}
pre{margin:0;white-space:pre-wrap;word-break:break-all;font-size:11px}
.diff{background:#fdd}
.t{width:4em}.w{width:12em}
h2{margin-top:2em;border-top:2px solid #333}
</style></head><body>
<h1>upstream kubelet v1.37.2 vs lockstep (same scenarios, fake runtime each)</h1>
<p>generated {{.Generated}}</p>
<pre>{{.Table}}</pre>
{{range .Scenarios}}
<h2 id="{{.Name}}">{{.Name}}</h2><p>{{.Summary}}</p>
{{if .Error}}<p class="diff">error: {{.Error}}</p>{{end}}
{{if .Differences}}<h3>{{len .Differences}} differences</h3>
<table><tr><th class="t">at (s)</th><th class="w">where</th><th>what</th><th>kubelet</th><th>lockstep</th></tr>
{{range .Differences}}<tr class="diff"><td>{{printf "%.1f" .At.Seconds}}</td><td>{{.Where}}</td><td>{{.What}}</td><td><pre>{{.Kubelet}}</pre></td><td><pre>{{.Lockstep}}</pre></td></tr>{{end}}
</table>{{else}}<p>same</p>{{end}}
<h3>pod states (side by side)</h3>
<table><tr><th class="t">at (s)</th><th class="w">pod</th><th>kubelet</th><th>lockstep</th></tr>
{{range .Rows}}<tr{{if .Diff}} class="diff"{{end}}><td>{{printf "%.1f" .At}}</td><td>{{.Where}}</td><td><pre>{{.Kubelet}}</pre></td><td><pre>{{.Lockstep}}</pre></td></tr>{{end}}
</table>
<h3>events</h3>
<table><tr><th class="t">first (s)</th><th class="w">object</th><th>kubelet</th><th>lockstep</th></tr>
{{range .Events}}<tr><td>{{printf "%.1f" .At}}</td><td>{{.Where}}</td><td><pre>{{.Kubelet}}</pre></td><td><pre>{{.Lockstep}}</pre></td></tr>{{end}}
</table>
<h3>files, logs, exec</h3>
<table><tr><th class="w">what</th><th>kubelet</th><th>lockstep</th></tr>
{{range .Results}}<tr{{if .Diff}} class="diff"{{end}}><td>{{.Label}}</td><td><pre>{{.Kubelet}}</pre></td><td><pre>{{.Lockstep}}</pre></td></tr>{{end}}
</table>
{{end}}
</body></html>
`))
