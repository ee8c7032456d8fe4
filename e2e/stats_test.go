//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// statsPod is a busybox pod that keeps some CPU busy (a shell loop that
// rests a tenth of a second every 2000 rounds), writes 1 MiB into an
// emptyDir and a line a second to its log.
func (e *env) statsPod(name string) *corev1.Pod {
	p := e.pod(name, false, `dd if=/dev/zero of=/scratch/blob bs=1024 count=1024 2>/dev/null; `+
		`(while true; do echo tick; sleep 1; done) & `+
		`i=0; while true; do i=$((i+1)); if [ $((i % 2000)) = 0 ]; then sleep 0.1; fi; done`)
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	return p
}

// TestStatsSummaryOnContainerd reads /stats/summary through the
// apiserver's node proxy (kubectl get --raw, see raw), decoded with the
// upstream statsv1alpha1 types, against containerd 1.6: a running pod's container
// has CPU (cumulative and a rate from two samples) and memory above zero,
// its log files and its emptyDir are measured, the pod has eth0's
// counters, and the node reports CPU and memory.
func TestStatsSummaryOnContainerd(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.create(t, e.statsPod("stats"))
	e.waitRunning(t, p)
	var ps statsv1alpha1.PodStats
	var sum statsv1alpha1.Summary
	poll(t, 60*time.Second, "the pod's stats with a CPU rate, logs and its emptyDir", func() (bool, error) {
		out, err := e.raw(t, k, "/stats/summary")
		if err != nil {
			return false, err
		}
		sum = statsv1alpha1.Summary{}
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			return false, fmt.Errorf("decode Summary: %v", err)
		}
		for _, cur := range sum.Pods {
			if cur.PodRef.Name == p.Name && cur.PodRef.Namespace == p.Namespace {
				ps = cur
				return complete(ps), fmt.Errorf("incomplete: %s", js(ps))
			}
		}
		return false, fmt.Errorf("pod %s not in the summary", p.Name)
	})
	c := ps.Containers[0]
	t.Logf("container %s: %.0f millicores, %d core-ns, working set %d B, rootfs %d B, logs %d B; emptyDir %d B; pod ephemeral %d B",
		c.Name, float64(*c.CPU.UsageNanoCores)/1e6, *c.CPU.UsageCoreNanoSeconds, *c.Memory.WorkingSetBytes,
		val(c.Rootfs), val(c.Logs), val(&ps.VolumeStats[0].FsStats), val(ps.EphemeralStorage))
	// The loop rests 0.1 s every 2000 rounds: it keeps a good part of a
	// core busy, far above 10 millicores even on a loaded machine.
	if mc := float64(*c.CPU.UsageNanoCores) / 1e6; mc < 10 {
		t.Errorf("container CPU rate %.1f millicores for a busy loop, want at least 10", mc)
	}
	if ps.Network == nil || ps.Network.Name != "eth0" || ps.Network.RxBytes == nil {
		t.Errorf("pod network %s, want eth0's counters (sandbox stats or the sandbox's network namespace)", js(ps.Network))
	} else {
		t.Logf("pod network: eth0 rx %d B, tx %d B", *ps.Network.RxBytes, val2(ps.Network.TxBytes))
	}
	if v := ps.VolumeStats[0]; v.Name != "scratch" || *v.UsedBytes < 1<<20 {
		t.Errorf("emptyDir stats %s, want scratch with at least 1 MiB", js(v))
	}
	n := sum.Node
	if n.NodeName != e.node || n.CPU == nil || n.CPU.UsageCoreNanoSeconds == nil || *n.CPU.UsageCoreNanoSeconds == 0 ||
		n.Memory == nil || n.Memory.WorkingSetBytes == nil || *n.Memory.WorkingSetBytes == 0 {
		t.Errorf("node stats without CPU or memory: %s", js(n))
	}
}

// complete reports whether a pod's stats have everything the test checks.
func complete(ps statsv1alpha1.PodStats) bool {
	if len(ps.Containers) != 1 || len(ps.VolumeStats) == 0 || ps.CPU == nil || ps.Memory == nil {
		return false
	}
	c := ps.Containers[0]
	return c.CPU != nil && c.CPU.UsageNanoCores != nil && *c.CPU.UsageNanoCores > 0 &&
		c.CPU.UsageCoreNanoSeconds != nil && *c.CPU.UsageCoreNanoSeconds > 0 &&
		c.Memory != nil && c.Memory.WorkingSetBytes != nil && *c.Memory.WorkingSetBytes > 0 &&
		c.Logs != nil && c.Logs.UsedBytes != nil && *c.Logs.UsedBytes > 0
}

func val(fs *statsv1alpha1.FsStats) uint64 {
	if fs == nil || fs.UsedBytes == nil {
		return 0
	}
	return *fs.UsedBytes
}

func val2(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestResourceMetricsOnContainerd reads /metrics/resource and
// /metrics/cadvisor through the apiserver's node proxy (see raw), parsed with Prometheus' expfmt:
// the kubelet's series for the running pod's container, its pod and the
// node are above zero and timestamped, resource_scrape_error is 0; the
// cAdvisor series carry the container's labels.
func TestResourceMetricsOnContainerd(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.create(t, e.statsPod("metrics"))
	e.waitRunning(t, p)
	want := map[string]string{
		"container_cpu_usage_seconds_total":  fmt.Sprintf(`container="c",namespace="default",pod=%q`, p.Name),
		"container_memory_working_set_bytes": fmt.Sprintf(`container="c",namespace="default",pod=%q`, p.Name),
		"container_start_time_seconds":       fmt.Sprintf(`container="c",namespace="default",pod=%q`, p.Name),
		"pod_cpu_usage_seconds_total":        fmt.Sprintf(`namespace="default",pod=%q`, p.Name),
		"pod_memory_working_set_bytes":       fmt.Sprintf(`namespace="default",pod=%q`, p.Name),
		"node_cpu_usage_seconds_total":       ``,
		"node_memory_working_set_bytes":      ``,
	}
	var series map[string]sample
	poll(t, 60*time.Second, "the pod's series in /metrics/resource", func() (bool, error) {
		out, err := e.raw(t, k, "/metrics/resource")
		if err != nil {
			return false, err
		}
		if series, err = parseSeries(out); err != nil {
			return false, err
		}
		for name, labels := range want {
			if s, ok := series[name+"{"+labels+"}"]; !ok || s.value <= 0 {
				return false, fmt.Errorf("no %s{%s} above 0 in:\n%s", name, labels, out)
			}
		}
		return true, nil
	})
	for name, labels := range want {
		s := series[name+"{"+labels+"}"]
		t.Logf("%s{%s} = %g @%v", name, labels, s.value, s.at)
		stamped := name != "container_start_time_seconds"
		if stamped && (s.at.IsZero() || time.Since(s.at) > time.Minute) {
			t.Errorf("%s{%s} timestamp %v, want a recent one", name, labels, s.at)
		}
	}
	node := series["node_memory_working_set_bytes{}"].value
	pod := series["pod_memory_working_set_bytes{"+want["pod_memory_working_set_bytes"]+"}"].value
	if node < pod {
		t.Errorf("node working set %g B below the pod's %g B", node, pod)
	}
	if s, ok := series["resource_scrape_error{}"]; !ok || s.value != 0 {
		t.Errorf("resource_scrape_error = %+v (present %v), want 0", s, ok)
	}

	out, err := e.raw(t, k, "/metrics/cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	if series, err = parseSeries(out); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^container_memory_working_set_bytes\{container="c",id="[0-9a-f]+",image="` + regexp.QuoteMeta(busybox) +
		`",name="[0-9a-f]+",namespace="default",pod="` + regexp.QuoteMeta(p.Name) + `"\}$`)
	found := false
	for key, s := range series {
		if re.MatchString(key) && s.value > 0 {
			found = true
			t.Logf("%s = %g", key, s.value)
		}
	}
	if !found {
		t.Errorf("no cAdvisor working set series matching %s in:\n%s", re, out)
	}
}

// sample is one parsed series' value and timestamp (zero: none).
type sample struct {
	value float64
	at    time.Time
}

// parseSeries parses a text exposition with expfmt into
// `name{l1="v1",…}` (labels sorted) → sample.
func parseSeries(text string) (map[string]sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse exposition: %v", err)
	}
	out := map[string]sample{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			s := sample{value: m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()}
			if m.TimestampMs != nil {
				s.at = time.UnixMilli(m.GetTimestampMs())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = s
		}
	}
	return out, nil
}

// TestKubectlTop runs the upstream metrics-server (v0.8.0, started by
// hack/e2e/start-metrics-server.sh behind the metrics.k8s.io APIService),
// which scrapes lockstep's /metrics/resource, so that `kubectl top node`
// and `kubectl top pod` print figures for the node and a running pod.
func TestKubectlTop(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.create(t, e.statsPod("top"))
	e.waitRunning(t, p)
	figures := regexp.MustCompile(`(\d+)m\s+(\d+)Mi`)
	var node, pod string
	poll(t, 120*time.Second, "kubectl top node to print the node's figures", func() (bool, error) {
		out, stderr, err := k.run(t, nil, "", "top", "node", e.node, "--no-headers")
		node = out
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		return strings.HasPrefix(out, e.node) && regexp.MustCompile(`\d+m\s+\d+%\s+\d+Mi\s+\d+%`).MatchString(out), fmt.Errorf("output %q", out)
	})
	poll(t, 120*time.Second, "kubectl top pod to print the pod's figures", func() (bool, error) {
		out, stderr, err := k.run(t, nil, "", "top", "pod", p.Name, "-n", p.Namespace, "--no-headers", "--containers")
		pod = out
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		return strings.HasPrefix(out, p.Name) && figures.MatchString(out), fmt.Errorf("output %q", out)
	})
	t.Logf("kubectl top node: %s", strings.TrimSpace(node))
	t.Logf("kubectl top pod --containers: %s", strings.TrimSpace(pod))
	m := figures.FindStringSubmatch(pod)
	if cpu, _ := strconv.Atoi(m[1]); cpu == 0 {
		t.Errorf("kubectl top pod: 0 millicores for a busy loop: %q", pod)
	}
	if mem, _ := strconv.Atoi(m[2]); mem == 0 {
		t.Logf("kubectl top pod: working set under 1 MiB: %q", pod)
	}
}
