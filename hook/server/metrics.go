package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the hook's Prometheus series.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	errors        *prometheus.CounterVec
	archiveWrites *prometheus.CounterVec
	cacheHits     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "teamspace_hook_requests_total",
			Help: "Hook requests by hook and HTTP status code.",
		}, []string{"hook", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "teamspace_hook_request_duration_seconds",
			Help:    "Time to answer a hook request, by hook.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"hook"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "teamspace_hook_errors_total",
			Help: "Hook requests answered with an error, by hook and reason.",
		}, []string{"hook", "reason"}),
		archiveWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "teamspace_archive_writes_total",
			Help: "Archive record writes by result (stored: durable, new or already there; failed).",
		}, []string{"result"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "teamspace_hook_answer_cache_hits_total",
			Help: "Hook requests answered from the answer cache (byte-identical to an earlier request), by hook.",
		}, []string{"hook"}),
	}
	reg.MustRegister(m.requests, m.duration, m.errors, m.archiveWrites, m.cacheHits)
	return m
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
