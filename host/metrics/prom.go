package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ibsm/ibsm/transport"
)

// promSet holds the event metrics (counters and histograms fed as things
// happen). Gauges are read from a Status at scrape time (gauges.go).
type promSet struct {
	phase       *prometheus.HistogramVec
	light       prometheus.Histogram
	sweeps      *prometheus.CounterVec
	mads        *prometheus.CounterVec
	pluginCalls *prometheus.HistogramVec
	pluginFails *prometheus.CounterVec
	traps       *prometheus.CounterVec
	sa          *prometheus.CounterVec
}

// sweepBuckets span a light sweep of a small fabric (ms) to a heavy sweep
// of a full LID space (minutes).
var sweepBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

func newPromSet() *promSet {
	return &promSet{
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ibsm_sweep_phase_seconds", Help: "Duration of each phase of heavy and incremental sweeps.", Buckets: sweepBuckets,
		}, []string{"kind", "phase"}),
		light: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ibsm_light_sweep_seconds", Help: "Duration of light sweeps (switch polls and CA checks).", Buckets: sweepBuckets,
		}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ibsm_sweeps_total", Help: "Sweeps by kind (heavy, incremental, light) and outcome (ok, failed, rerouted).",
		}, []string{"kind", "outcome"}),
		mads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ibsm_mads_total", Help: "MAD requests the SM sent (event=sent, once per request), re-sent (retried) and gave up on (timed_out), by class and attribute.",
		}, []string{"class", "attribute", "event"}),
		pluginCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ibsm_plugin_call_seconds", Help: "Latency of plugin calls by plugin and method (cached stages make no call).", Buckets: sweepBuckets,
		}, []string{"plugin", "method"}),
		pluginFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ibsm_plugin_call_failures_total", Help: "Plugin calls that returned an error, by plugin and method.",
		}, []string{"plugin", "method"}),
		traps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ibsm_traps_total", Help: "Traps received by trap number (0: vendor traps).",
		}, []string{"number"}),
		sa: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ibsm_sa_queries_total", Help: "SA requests answered, by record (attribute) and status.",
		}, []string{"record", "status"}),
	}
}

func (p *promSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.phase, p.light, p.sweeps, p.mads, p.pluginCalls, p.pluginFails, p.traps, p.sa}
}

func (p *promSet) sweep(s *Sweep) {
	outcome := "ok"
	switch {
	case s.Error != "":
		outcome = "failed"
	case s.Report != nil && s.Report.Rerouted:
		outcome = "rerouted"
	}
	p.sweeps.WithLabelValues(s.Kind, outcome).Inc()
	if r := s.Report; r != nil {
		p.phase.WithLabelValues(s.Kind, "discovery").Observe(r.Discovery.Time.Seconds())
		p.phase.WithLabelValues(s.Kind, "routing").Observe(r.Routing.Time.Seconds())
		p.phase.WithLabelValues(s.Kind, "distribution").Observe(r.Distribution.Time.Seconds())
		p.phase.WithLabelValues(s.Kind, "total").Observe(r.Total.Seconds())
	}
}

func (p *promSet) lightSweep(took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	p.sweeps.WithLabelValues("light", outcome).Inc()
	p.light.Observe(took.Seconds())
}

func (p *promSet) trap(n uint16) { p.traps.WithLabelValues(strconv.Itoa(int(n))).Inc() }

var madEvents = [...]string{transport.MADRequest: "sent", transport.MADRetry: "retried", transport.MADTimeout: "timed_out"}

func (p *promSet) mad(ev transport.MADEvent, class uint8, attr uint16) {
	if int(ev) < len(madEvents) {
		p.mads.WithLabelValues(className(class), attrName(class, attr), madEvents[ev]).Inc()
	}
}

func (p *promSet) pluginCall(plugin, method string, took time.Duration, err error) {
	p.pluginCalls.WithLabelValues(plugin, method).Observe(took.Seconds())
	if err != nil {
		p.pluginFails.WithLabelValues(plugin, method).Inc()
	}
}

func (p *promSet) saQuery(attr uint16, status uint16) {
	p.sa.WithLabelValues(attrName(0x03, attr), saStatus(status)).Inc()
}

// Registry builds the registry the metrics endpoint serves: the event
// metrics fed from now on, the gauges read from status() at every scrape,
// and the Go runtime and process collectors.
func (r *Recorder) Registry(status func() *Status) *prometheus.Registry {
	p := newPromSet()
	reg := prometheus.NewRegistry()
	reg.MustRegister(p.collectors()...)
	reg.MustRegister(&gauges{status: status})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.mu.Lock()
	r.prom = p
	r.mu.Unlock()
	return reg
}

// Handler serves reg in the exposition format.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, ErrorHandling: promhttp.ContinueOnError})
}
