// Package statsmetrics exposes the node's latest stats sample (node/stats)
// as Prometheus metrics, the way the kubelet does on two endpoints:
//
//   - /metrics/resource (Resource): the kubelet's resource metrics, the
//     series metrics-server and `kubectl top` read: node, pod and
//     container CPU (cumulative core-seconds) and memory working set, the
//     containers' start times and resource_scrape_error, with the
//     kubelet's names, labels, help texts and sample timestamps;
//   - /metrics/cadvisor (Cadvisor): the container_* series of cAdvisor
//     that dashboards use, built from the CRI runtime's stats instead of
//     cgroups, labelled container, pod, namespace, image, name and id as
//     cAdvisor labels a CRI container.
//
// The collectors read the latest sample at scrape time; they never sample
// themselves unless no sample exists yet. This is real-world code
// (node/real): Prometheus collectors talk over channels.
package statsmetrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/stats"
)

// Source is what the collectors read.
type Source interface {
	// Stats returns the latest stats sample, taking one when there is
	// none yet.
	Stats(ctx context.Context) (stats.Sample, error)
	// Pods returns the managed pods.
	Pods() []*corev1.Pod
	// NodeName is the node's name.
	NodeName() string
}

// The resource metrics' names, as the kubelet exposes them.
const (
	NodeCPUUsage           = "node_cpu_usage_seconds_total"
	NodeMemoryWorkingSet   = "node_memory_working_set_bytes"
	NodeSwapUsage          = "node_swap_usage_bytes"
	ContainerCPUUsage      = "container_cpu_usage_seconds_total"
	ContainerMemoryWorkSet = "container_memory_working_set_bytes"
	ContainerSwapUsage     = "container_swap_usage_bytes"
	ContainerSwapLimit     = "container_swap_limit_bytes"
	ContainerStartTime     = "container_start_time_seconds"
	PodCPUUsage            = "pod_cpu_usage_seconds_total"
	PodMemoryWorkingSet    = "pod_memory_working_set_bytes"
	PodSwapUsage           = "pod_swap_usage_bytes"
	ResourceScrapeError    = "resource_scrape_error"
)

// resourceDescs are the resource metrics' descriptions; help texts carry
// the stability prefix component-base adds.
type resourceDescs struct {
	nodeCPU, nodeMemory, nodeSwap                                    *prometheus.Desc
	containerCPU, containerMemory, containerSwap, containerSwapLimit *prometheus.Desc
	containerStart                                                   *prometheus.Desc
	podCPU, podMemory, podSwap                                       *prometheus.Desc
	scrapeError                                                      *prometheus.Desc
}

func newResourceDescs() resourceDescs {
	ctr := []string{"container", "pod", "namespace"}
	pod := []string{"pod", "namespace"}
	return resourceDescs{
		nodeCPU:            prometheus.NewDesc(NodeCPUUsage, "[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil),
		nodeMemory:         prometheus.NewDesc(NodeMemoryWorkingSet, "[STABLE] Current working set of the node in bytes", nil, nil),
		nodeSwap:           prometheus.NewDesc(NodeSwapUsage, "[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil),
		containerCPU:       prometheus.NewDesc(ContainerCPUUsage, "[STABLE] Cumulative cpu time consumed by the container in core-seconds", ctr, nil),
		containerMemory:    prometheus.NewDesc(ContainerMemoryWorkSet, "[STABLE] Current working set of the container in bytes", ctr, nil),
		containerSwap:      prometheus.NewDesc(ContainerSwapUsage, "[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems", ctr, nil),
		containerSwapLimit: prometheus.NewDesc(ContainerSwapLimit, "[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems", ctr, nil),
		containerStart:     prometheus.NewDesc(ContainerStartTime, "[STABLE] Start time of the container since unix epoch in seconds", ctr, nil),
		podCPU:             prometheus.NewDesc(PodCPUUsage, "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", pod, nil),
		podMemory:          prometheus.NewDesc(PodMemoryWorkingSet, "[STABLE] Current working set of the pod in bytes", pod, nil),
		podSwap:            prometheus.NewDesc(PodSwapUsage, "[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems", pod, nil),
		scrapeError:        prometheus.NewDesc(ResourceScrapeError, "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil),
	}
}

// all are every description.
func (d resourceDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.nodeCPU, d.nodeMemory, d.nodeSwap, d.containerStart, d.containerCPU, d.containerMemory,
		d.containerSwap, d.containerSwapLimit, d.podCPU, d.podMemory, d.podSwap, d.scrapeError}
}

// NewResource returns the /metrics/resource collector over src: the
// latest sample's metrics and resource_scrape_error 0, or
// resource_scrape_error 1 alone when there is no sample.
func NewResource(src Source, log *slog.Logger) prometheus.Collector {
	d := newResourceDescs()
	scrapeError := func(v float64) prometheus.Metric {
		return prometheus.MustNewConstMetric(d.scrapeError, prometheus.GaugeValue, v)
	}
	build := func(s stats.Sample) []prometheus.Metric {
		return append(resourceMetrics(d, s.Summary(src.NodeName(), src.Pods())), scrapeError(0))
	}
	return newSampleCollector(src, log, "/metrics/resource", d.all(), build,
		func() []prometheus.Metric { return []prometheus.Metric{scrapeError(1)} })
}

// resourceMetrics are the resource metrics of a Summary, in the kubelet's
// order: the node's, then per pod its containers' and its own.
func resourceMetrics(d resourceDescs, sum *statsv1alpha1.Summary) []prometheus.Metric {
	var out metrics
	add := out.add
	n := sum.Node
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		add(d.nodeCPU, n.CPU.Time.Time, prometheus.CounterValue, seconds(*n.CPU.UsageCoreNanoSeconds))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		add(d.nodeMemory, n.Memory.Time.Time, prometheus.GaugeValue, float64(*n.Memory.WorkingSetBytes))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		add(d.nodeSwap, n.Swap.Time.Time, prometheus.GaugeValue, float64(*n.Swap.SwapUsageBytes))
	}
	for _, p := range sum.Pods {
		name, ns := p.PodRef.Name, p.PodRef.Namespace
		for _, c := range p.Containers {
			if c.StartTime.Unix() > 0 {
				add(d.containerStart, time.Time{}, prometheus.GaugeValue, float64(c.StartTime.UnixNano())/float64(time.Second), c.Name, name, ns)
			}
			if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
				add(d.containerCPU, c.CPU.Time.Time, prometheus.CounterValue, seconds(*c.CPU.UsageCoreNanoSeconds), c.Name, name, ns)
			}
			if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				add(d.containerMemory, c.Memory.Time.Time, prometheus.GaugeValue, float64(*c.Memory.WorkingSetBytes), c.Name, name, ns)
			}
			if c.Swap != nil {
				var used float64
				if c.Swap.SwapUsageBytes != nil {
					used = float64(*c.Swap.SwapUsageBytes)
					add(d.containerSwap, c.Swap.Time.Time, prometheus.GaugeValue, used, c.Name, name, ns)
				}
				if c.Swap.SwapAvailableBytes != nil {
					add(d.containerSwapLimit, c.Swap.Time.Time, prometheus.GaugeValue, float64(*c.Swap.SwapAvailableBytes)+used, c.Name, name, ns)
				}
			}
		}
		if p.CPU != nil && p.CPU.UsageCoreNanoSeconds != nil {
			add(d.podCPU, p.CPU.Time.Time, prometheus.CounterValue, seconds(*p.CPU.UsageCoreNanoSeconds), name, ns)
		}
		if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
			add(d.podMemory, p.Memory.Time.Time, prometheus.GaugeValue, float64(*p.Memory.WorkingSetBytes), name, ns)
		}
		if p.Swap != nil && p.Swap.SwapUsageBytes != nil {
			add(d.podSwap, p.Swap.Time.Time, prometheus.GaugeValue, float64(*p.Swap.SwapUsageBytes), name, ns)
		}
	}
	return out
}

// seconds converts core-nanoseconds to core-seconds.
func seconds(ns uint64) float64 { return float64(ns) / float64(time.Second) }

// Handler serves the collectors on a registry of their own, in the
// Prometheus text format.
func Handler(collectors ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	for _, c := range collectors {
		reg.MustRegister(c)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
