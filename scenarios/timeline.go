package scenarios

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
)

// TimelineEvent is one mark on a lane of the HTML timeline.
type TimelineEvent struct {
	T     float64 `json:"t"`           // virtual seconds
	State string  `json:"s,omitempty"` // the lane's state from here on
	Mark  string  `json:"m,omitempty"` // a point event (kill, fault, action)
	Text  string  `json:"x"`
}

// TimelineLane is one row: a pod, a container, the plan, the faults.
type TimelineLane struct {
	Name   string          `json:"name"`
	Events []TimelineEvent `json:"events"`
}

// timelineData is what the page's script draws.
type timelineData struct {
	Title      string          `json:"title"`
	End        float64         `json:"end"`
	Lanes      []TimelineLane  `json:"lanes"`
	Violations []TimelineEvent `json:"violations"`
}

// Timeline renders a run's trace (JSON lines) as a self-contained HTML page:
// a lane per pod and container with its states over virtual time, kills
// with their grace, API writes, faults, agent crashes, the plan's actions,
// and the violated invariants marked where they were seen; zoomable. It
// fetches nothing.
func Timeline(traceJSONL []byte, res Result) ([]byte, error) {
	d := timelineData{Title: fmt.Sprintf("lockstep sim: %s seed %d (%s)", res.Plan.Scenario, res.Plan.Seed, verdict(res)),
		End: res.Elapsed.Seconds()}
	lanes := map[string]*TimelineLane{}
	var order []string
	lane := func(name string) *TimelineLane {
		if l, ok := lanes[name]; ok {
			return l
		}
		lanes[name] = &TimelineLane{Name: name}
		order = append(order, name)
		return lanes[name]
	}
	lane("plan")
	lane("faults")
	sc := bufio.NewScanner(bytes.NewReader(traceJSONL))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]string
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"kind":"cri"`)) && !bytes.Contains(line, []byte(`"kind":"api-write"`)) &&
			!bytes.Contains(line, []byte(`"kind":"action"`)) && !bytes.Contains(line, []byte(`"kind":"fault"`)) &&
			!bytes.Contains(line, []byte("apiserver fault")) {
			continue
		}
		// "t" is a number: decode it apart.
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(line, &raw); err != nil {
			return nil, fmt.Errorf("trace line %q: %w", line, err)
		}
		ev = map[string]string{}
		for k, v := range raw {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			ev[k] = s
		}
		t, _ := strconv.ParseFloat(ev["t"], 64)
		addTimelineEvent(lane, ev, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	for _, name := range order {
		d.Lanes = append(d.Lanes, *lanes[name])
	}
	d.End = timelineEnd(d, res)
	for _, v := range res.Violations {
		d.Violations = append(d.Violations, TimelineEvent{T: v.At.Seconds(), Mark: v.Invariant, Text: v.String()})
	}
	if res.Err != nil {
		d.Violations = append(d.Violations, TimelineEvent{T: res.Elapsed.Seconds(), Mark: "sim", Text: res.Err.Error()})
	}
	for _, v := range d.Violations {
		d.End = max(d.End, min(v.T+10, res.Elapsed.Seconds()))
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode timeline: %w", err)
	}
	var b bytes.Buffer
	err = timelinePage.Execute(&b, map[string]any{"Title": d.Title, "Data": template.JS(data),
		"Actions": res.Plan.Actions, "Replay": res.Plan.ReplayCommand(), "Report": reportText(res)})
	return b.Bytes(), err
}

func verdict(res Result) string {
	if res.Failed() {
		return "FAIL " + res.FailureName()
	}
	return "PASS"
}

func reportText(res Result) string {
	if !res.Failed() {
		return "every invariant held"
	}
	return res.Report()
}

// addTimelineEvent turns one trace event into lane marks.
func addTimelineEvent(lane func(string) *TimelineLane, ev map[string]string, t float64) {
	add := func(l string, e TimelineEvent) { e.T = t; lane(l).Events = append(lane(l).Events, e) }
	switch ev["kind"] {
	case "action":
		add("plan", TimelineEvent{Mark: "action", Text: ev["step"] + ": " + ev["action"]})
	case "fault":
		add("faults", TimelineEvent{Mark: "fault", Text: ev["fault"] + " " + ev["before"] + ev["downtime"]})
	case "log":
		add("faults", TimelineEvent{Mark: "fault", Text: ev["msg"]})
	case "api-write":
		switch {
		case ev["object"] != "Pod":
		case ev["verb"] == "delete":
			add("pod "+ev["name"], TimelineEvent{State: "gone", Mark: "write", Text: "deleted by " + ev["actor"]})
		case ev["phase"] != "":
			add("pod "+ev["name"], TimelineEvent{State: strings.ToLower(ev["phase"]), Mark: "write",
				Text: ev["verb"] + " by " + ev["actor"] + ": " + ev["phase"] + " " + ev["containers"]})
		}
	case "cri":
		target, err := ev["target"], ev["err"]
		if target == "" {
			return
		}
		if err != "" {
			add(target, TimelineEvent{Mark: "error", Text: ev["method"] + ": " + err})
			return
		}
		switch ev["method"] {
		case "CreateContainer":
			add(target, TimelineEvent{State: "created", Text: "created attempt " + ev["attempt"]})
		case "StartContainer":
			add(target, TimelineEvent{State: "running", Text: "started"})
		case "StopContainer":
			add(target, TimelineEvent{State: "exited", Mark: "kill", Text: "stopped (grace " + ev["grace"] + "s)"})
		case "RemoveContainer":
			add(target, TimelineEvent{State: "removed", Text: "removed"})
		case "ContainerStatus":
			if ev["state"] == "CONTAINER_EXITED" {
				add(target, TimelineEvent{State: "exited", Text: "exited " + ev["exit"] + " " + ev["reason"]})
			}
		case "RunPodSandbox":
			add(target, TimelineEvent{State: "sandbox", Text: "sandbox started"})
		case "StopPodSandbox":
			add(target, TimelineEvent{State: "exited", Text: "sandbox stopped"})
		}
	}
}

var timelinePage = template.Must(template.New("timeline").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:13px sans-serif;margin:12px;color:#222}
#tl{border:1px solid #ccc;overflow-x:auto;width:100%}
.lane text{font:11px monospace}
.legend span{display:inline-block;padding:1px 6px;margin-right:4px;border-radius:3px}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap}
</style></head><body>
<h2>{{.Title}}</h2>
<div class="legend"><span style="background:#9ecae1">created</span><span style="background:#74c476">running</span><span style="background:#bdbdbd">exited</span><span style="background:#fdd0a2">pending</span><span style="background:#c7e9c0">succeeded</span><span style="background:#fc9272">failed</span>
 · <b style="color:#d62728">|</b> kill (grace) · <b style="color:#ff7f0e">◆</b> fault · <b style="color:#9467bd">▲</b> action · <b style="color:red">red line</b> broken invariant. Scroll to zoom, drag the bar to pan.</div>
<div id="tl"></div>
<h3>Failure</h3><pre>{{.Report}}</pre>
<h3>Plan ({{len .Actions}} actions)</h3><ol start="0">{{range .Actions}}<li><code>{{.}}</code></li>{{end}}</ol>
<p>Replay: <code>{{.Replay}}</code></p>
<script id="data" type="application/json">{{.Data}}</script>
<script>
(function(){
var d=JSON.parse(document.getElementById('data').textContent);
var colors={created:'#9ecae1',running:'#74c476',exited:'#bdbdbd',removed:'#eeeeee',sandbox:'#deebf7',pending:'#fdd0a2',running_:'#74c476',succeeded:'#c7e9c0',failed:'#fc9272',gone:'#f0f0f0'};
var marks={kill:'#d62728',fault:'#ff7f0e',action:'#9467bd',error:'#e377c2',write:'#3182bd'};
var NS='http://www.w3.org/2000/svg',label=260,row=18,zoom=1,box=document.getElementById('tl');
function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);if(p)p.appendChild(e);return e;}
function draw(){
 box.innerHTML='';var W=Math.max(800,(box.clientWidth||1000)-20)*zoom,span=W-label-10,end=Math.max(d.end,1);
 var x=function(t){return label+span*t/end;};
 var svg=el('svg',{width:W,height:(d.lanes.length+2)*row,id:'timeline'},box);
 for(var s=0;s<=10;s++){var t=end*s/10;el('line',{x1:x(t),x2:x(t),y1:0,y2:(d.lanes.length+1)*row,stroke:'#eee'},svg);el('text',{x:x(t)+2,y:(d.lanes.length+1.7)*row,'font-size':10},svg).textContent=t.toFixed(1)+'s';}
 d.lanes.forEach(function(l,i){
  var g=el('g',{'class':'lane','data-lane':l.name},svg),y=i*row;
  el('text',{x:2,y:y+13},g).textContent=l.name.length>40?'…'+l.name.slice(-39):l.name;
  var st=null,from=0;
  function seg(to){if(st&&colors[st]){var r=el('rect',{x:x(from),y:y+2,width:Math.max(1,x(to)-x(from)),height:row-4,fill:colors[st]},g);el('title',{},r).textContent=st;}}
  l.events.forEach(function(e){
   if(e.s){seg(e.t);st=e.s;from=e.t;}
   if(e.m){var c=marks[e.m]||'#555',m;if(e.m==='kill'){m=el('rect',{x:x(e.t)-1,y:y,width:3,height:row,fill:c},g);}else{m=el('circle',{cx:x(e.t),cy:y+row/2,r:4,fill:c},g);}el('title',{},m).textContent=e.t.toFixed(3)+'s '+e.x;}
  });
  seg(end);
 });
 (d.violations||[]).forEach(function(v){var ln=el('line',{x1:x(v.t),x2:x(v.t),y1:0,y2:d.lanes.length*row,stroke:'red','stroke-width':2,'class':'violation'},svg);el('title',{},ln).textContent=v.x;el('text',{x:x(v.t)+3,y:10,fill:'red','font-size':11},svg).textContent=v.m;});
}
box.addEventListener('wheel',function(e){e.preventDefault();zoom=Math.min(64,Math.max(1,zoom*(e.deltaY<0?1.25:0.8)));draw();},{passive:false});
draw();
})();
</script></body></html>
`))

// timelineEnd is where the drawing ends: 20 s after the last change on any
// lane (the long quiet settling at the end of a run is cut), at most the
// run's end.
func timelineEnd(d timelineData, res Result) float64 {
	last := 0.0
	for _, l := range d.Lanes {
		for _, e := range l.Events {
			last = max(last, e.T)
		}
	}
	return min(last+20, max(res.Elapsed.Seconds(), 1))
}
