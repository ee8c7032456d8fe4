package statsmetrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/node/stats"
)

// scrapeTimeout bounds the sample a scrape may have to take.
const scrapeTimeout = 10 * time.Second

// sampleCollector is a collector of the latest stats sample: at each
// scrape it sends what build makes of the sample, or, when there is none,
// logs why and sends what failed makes (nil: nothing).
type sampleCollector struct {
	src Source
	log *slog.Logger
	// endpoint names the collector in the log ("/metrics/resource").
	endpoint string
	descs    []*prometheus.Desc
	build    func(s stats.Sample) []prometheus.Metric
	failed   func() []prometheus.Metric
}

// newSampleCollector returns a collector over src (nil log: discard).
func newSampleCollector(src Source, log *slog.Logger, endpoint string, descs []*prometheus.Desc,
	build func(stats.Sample) []prometheus.Metric, failed func() []prometheus.Metric) *sampleCollector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &sampleCollector{src: src, log: log, endpoint: endpoint, descs: descs, build: build, failed: failed}
}

// Describe sends every description.
func (c *sampleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the latest sample's metrics.
func (c *sampleCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	var out []prometheus.Metric
	if s, err := c.src.Stats(ctx); err != nil {
		c.log.Error("no stats for "+c.endpoint, "error", err.Error())
		if c.failed != nil {
			out = c.failed()
		}
	} else {
		out = c.build(s)
	}
	for _, m := range out {
		ch <- m
	}
}

// metrics accumulates constant metrics.
type metrics []prometheus.Metric

// add appends one sample of desc, timestamped t unless t is zero.
func (ms *metrics) add(desc *prometheus.Desc, t time.Time, typ prometheus.ValueType, v float64, labels ...string) {
	m := prometheus.MustNewConstMetric(desc, typ, v, labels...)
	if !t.IsZero() {
		m = prometheus.NewMetricWithTimestamp(t, m)
	}
	*ms = append(*ms, m)
}

// unixNano is a CRI timestamp as a time; zero stays the zero time.
func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
