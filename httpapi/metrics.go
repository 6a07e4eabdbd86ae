package httpapi

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"latchkey/auth"
	"latchkey/store"
)

// Metrics are latchkey's Prometheus metrics (docs/operations.md, "Metrics"). Make
// one with NewMetrics and hand it to every part that feeds it: the
// store (ObserveCommit in store.Options), the auth service
// (auth.Config.Observer), the webhook worker (WebhookOutcome) and the
// Server (Config.Metrics), which also reads the store's queue sizes when
// the metrics are scraped. Handler serves them. Safe for concurrent use.
//
// The request path pays for a few atomic adds and one small allocation:
// each route's series are resolved once, not looked up by label per
// request, and nothing on it reads the store.
type Metrics struct {
	reg  *prometheus.Registry
	now  func() time.Time
	once sync.Once // the store collector is registered once

	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	authEvents *prometheus.CounterVec
	logins     *prometheus.CounterVec
	commits    prometheus.Histogram
	webhooks   *prometheus.CounterVec

	handler http.Handler
}

// MetricsOptions configure NewMetrics.
type MetricsOptions struct {
	// Version is the binary's version, shown by latchkey_build_info.
	Version string
	// Now is the clock for the age of the oldest queued mail; nil is
	// time.Now.
	Now func() time.Time
}

// Buckets of the latency histograms, in seconds.
var (
	requestBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	commitBuckets  = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}
)

// NewMetrics returns the metrics with the Go runtime's and the
// process's own (go_*, process_*) beside latchkey's.
func NewMetrics(o MetricsOptions) *Metrics {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		now: o.Now,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "latchkey_http_request_duration_seconds",
			Help:    "Time from routing a request to its handler's return, by route pattern and method.",
			Buckets: requestBuckets,
		}, []string{"route", "method"}),
		authEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_auth_events_total",
			Help: `Authentication events recorded, by method, action and result ("success" or the failure category).`,
		}, []string{"method", "action", "result"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_logins_total",
			Help: "Sessions created, by sign-in method.",
		}, []string{"method"}),
		commits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "latchkey_store_commit_duration_seconds",
			Help:    "Time to commit a write transaction to the data file (pages and fsync).",
			Buckets: commitBuckets,
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "latchkey_webhook_attempts_total",
			Help: `Webhook delivery attempts recorded, by outcome: "succeeded", "retrying" (failed, tried again later) or "failed" (given up).`,
		}, []string{"outcome"}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "latchkey_build_info",
		Help:        "Always 1; the labels name the version and the Go version.",
		ConstLabels: prometheus.Labels{"version": o.Version, "goversion": runtime.Version()},
	})
	build.Set(1)
	m.reg.MustRegister(m.requests, m.duration, m.authEvents, m.logins, m.commits, m.webhooks, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

var _ auth.Observer = (*Metrics)(nil)

// Handler serves the metrics in the Prometheus text format (or another
// format the scraper asks for), with no authentication of its own.
func (m *Metrics) Handler() http.Handler { return m.handler }

// AuthEvent counts an authentication event (auth.Observer).
func (m *Metrics) AuthEvent(method, action, failure string) {
	if failure == "" {
		failure = "success"
	}
	m.authEvents.WithLabelValues(method, action, failure).Inc()
}

// Login counts a session created by method (auth.Observer).
func (m *Metrics) Login(method string) { m.logins.WithLabelValues(method).Inc() }

// ObserveCommit records a write transaction's commit time (for
// store.Options.ObserveCommit).
func (m *Metrics) ObserveCommit(d time.Duration) { m.commits.Observe(d.Seconds()) }

// WebhookOutcome counts a recorded delivery attempt by its status
// ("succeeded", "pending", "failed"), for webhook.Worker.Outcome.
func (m *Metrics) WebhookOutcome(status string) {
	if status == "pending" {
		status = "retrying"
	}
	m.webhooks.WithLabelValues(status).Inc()
}

// watchStore registers the gauges read through stats when scraped.
func (m *Metrics) watchStore(stats func(context.Context) (store.Stats, error)) {
	m.once.Do(func() { m.reg.MustRegister(&storeCollector{stats: stats, now: m.now}) })
}

// instrument wraps a route's handle: it counts and times each request
// under the route's pattern (not the raw path, so label values stay
// bounded) and method.
func (m *Metrics) instrument(method, route string, h httprouter.Handle) httprouter.Handle {
	rm := &routeMetrics{m: m, route: route, method: method}
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		returned := false
		defer func() { rm.done(sw.status, returned, start) }()
		h(sw, r, p)
		returned = true
	}
}

// instrumentHandler is instrument for the requests no route takes (404,
// 405) and for CORS preflights, counted under route; their method label
// is the request's when it is a standard one, else "OTHER".
func (m *Metrics) instrumentHandler(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		method := r.Method
		switch method {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodOptions:
		default:
			method = "OTHER"
		}
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
		m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	})
}

// routeMetrics are one route's series. They are created at the route's
// first request (so unused routes export nothing) and then read without
// locks: a status code the route has not answered before takes the
// mutex once.
type routeMetrics struct {
	m             *Metrics
	route, method string
	mu            sync.Mutex
	series        atomic.Pointer[routeSeries]
}

type routeSeries struct {
	duration prometheus.Observer
	codes    []codeCounter
}

type codeCounter struct {
	code    int
	counter prometheus.Counter
}

// done records a request that answered status (0: nothing written, which
// net/http answers 200 unless the handler panicked, answered 500).
func (rm *routeMetrics) done(status int, returned bool, start time.Time) {
	elapsed := time.Since(start)
	if status == 0 {
		status = http.StatusOK
		if !returned {
			status = http.StatusInternalServerError
		}
	}
	s := rm.series.Load()
	c := s.counter(status)
	if c == nil {
		s, c = rm.add(status)
	}
	c.Inc()
	s.duration.Observe(elapsed.Seconds())
}

func (s *routeSeries) counter(code int) prometheus.Counter {
	if s == nil {
		return nil
	}
	for _, c := range s.codes {
		if c.code == code {
			return c.counter
		}
	}
	return nil
}

// add resolves the series for code, copying the list so readers never
// see it change.
func (rm *routeMetrics) add(code int) (*routeSeries, prometheus.Counter) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	old := rm.series.Load()
	if c := old.counter(code); c != nil {
		return old, c
	}
	s := &routeSeries{}
	if old != nil {
		s.duration = old.duration
		s.codes = append(s.codes, old.codes...)
	} else {
		s.duration = rm.m.duration.WithLabelValues(rm.route, rm.method)
	}
	c := rm.m.requests.WithLabelValues(rm.route, rm.method, strconv.Itoa(code))
	s.codes = append(s.codes, codeCounter{code, c})
	rm.series.Store(s)
	return s, c
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first status and passes it on.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and passes the bytes on.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer (http.ResponseController uses it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// storeCollector reads the queue and file sizes from the store at scrape
// time, in one read transaction.
type storeCollector struct {
	stats func(context.Context) (store.Stats, error)
	now   func() time.Time
}

var (
	descMailDepth = prometheus.NewDesc("latchkey_mail_queue_depth",
		"Messages in the mail queue (waiting to be sent or retried).", nil, nil)
	descMailOldest = prometheus.NewDesc("latchkey_mail_queue_oldest_age_seconds",
		"Age of the oldest message in the mail queue; 0 when it is empty.", nil, nil)
	descHookBacklog = prometheus.NewDesc("latchkey_webhook_backlog_deliveries",
		"Webhook deliveries queued: first attempts and retries waiting.", nil, nil)
	descHookOutbox = prometheus.NewDesc("latchkey_webhook_outbox_events",
		"Events not yet fanned out to the webhooks.", nil, nil)
	descFileSize = prometheus.NewDesc("latchkey_store_file_size_bytes",
		"Size of the data file on disk.", nil, nil)
	descDataSize = prometheus.NewDesc("latchkey_store_data_size_bytes",
		"Bytes of the data file in use by pages (what a backup copies).", nil, nil)
	descFreeSize = prometheus.NewDesc("latchkey_store_free_bytes",
		"Bytes of the data file's pages that hold no data: reused by later writes, given back only by latchkey compact.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMailDepth, descMailOldest, descHookBacklog, descHookOutbox, descFileSize, descDataSize, descFreeSize} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.stats(context.Background()) // a Collector gets no context
	if err != nil {
		for _, d := range []*prometheus.Desc{descMailDepth, descMailOldest, descHookBacklog, descHookOutbox, descFileSize, descDataSize, descFreeSize} {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	oldest := 0.0
	if !st.OldestMail.IsZero() {
		oldest = max(c.now().Sub(st.OldestMail).Seconds(), 0)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(descMailDepth, float64(st.MailQueued))
	gauge(descMailOldest, oldest)
	gauge(descHookBacklog, float64(st.DeliveriesQueued))
	gauge(descHookOutbox, float64(st.OutboxEvents))
	gauge(descFileSize, float64(st.FileSize))
	gauge(descDataSize, float64(st.DataSize))
	gauge(descFreeSize, float64(st.FreeSize))
}
