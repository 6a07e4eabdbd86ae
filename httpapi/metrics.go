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

	"latchkey/auth"
	"latchkey/internal/promtext"
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
	reg  promtext.Registry
	now  func() time.Time
	once sync.Once // the store collector is registered once

	requests   *promtext.CounterVec
	duration   *promtext.HistogramVec
	authEvents *promtext.CounterVec
	logins     *promtext.CounterVec
	commits    *promtext.Histogram
	webhooks   *promtext.CounterVec

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
	commits := promtext.NewHistogramVec("latchkey_store_commit_duration_seconds",
		"Time to commit a write transaction to the data file (pages and fsync).", commitBuckets)
	m := &Metrics{
		now: o.Now,
		requests: promtext.NewCounterVec("latchkey_http_requests_total",
			"HTTP requests answered, by route pattern, method and status code.", "route", "method", "code"),
		duration: promtext.NewHistogramVec("latchkey_http_request_duration_seconds",
			"Time from routing a request to its handler's return, by route pattern and method.", requestBuckets, "route", "method"),
		authEvents: promtext.NewCounterVec("latchkey_auth_events_total",
			`Authentication events recorded, by method, action and result ("success" or the failure category).`, "method", "action", "result"),
		logins: promtext.NewCounterVec("latchkey_logins_total",
			"Sessions created, by sign-in method.", "method"),
		commits: commits.WithLabelValues(), // exported from the start, as a histogram without labels
		webhooks: promtext.NewCounterVec("latchkey_webhook_attempts_total",
			`Webhook delivery attempts recorded, by outcome: "succeeded", "retrying" (failed, tried again later) or "failed" (given up).`, "outcome"),
	}
	build := []promtext.Family{{Name: "latchkey_build_info", Type: promtext.TypeGauge,
		Help:    "Always 1; the labels name the version and the Go version.",
		Metrics: []promtext.Metric{{Labels: []promtext.Label{{Name: "version", Value: o.Version}, {Name: "goversion", Value: runtime.Version()}}, Value: 1}}}}
	m.reg.Register(m.requests, m.duration, m.authEvents, m.logins, commits, m.webhooks,
		promtext.CollectorFunc(func() []promtext.Family { return build }),
		promtext.GoCollector(), promtext.ProcessCollector())
	m.handler = m.reg.Handler()
	return m
}

var _ auth.Observer = (*Metrics)(nil)

// Handler serves the metrics in the Prometheus text format (gzipped when
// the scraper accepts it), with no authentication of its own.
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
	m.once.Do(func() { m.reg.Register(&storeCollector{stats: stats, now: m.now}) })
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
	duration *promtext.Histogram
	codes    []codeCounter
}

type codeCounter struct {
	code    int
	counter *promtext.Counter
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

func (s *routeSeries) counter(code int) *promtext.Counter {
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
func (rm *routeMetrics) add(code int) (*routeSeries, *promtext.Counter) {
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

// Collect implements promtext.Collector: the gauges, or none when the
// store cannot be read.
func (c *storeCollector) Collect() []promtext.Family {
	st, err := c.stats(context.Background()) // a scrape gets no context
	if err != nil {
		return nil
	}
	oldest := 0.0
	if !st.OldestMail.IsZero() {
		oldest = max(c.now().Sub(st.OldestMail).Seconds(), 0)
	}
	return []promtext.Family{
		gauge("latchkey_mail_queue_depth", "Messages in the mail queue (waiting to be sent or retried).", float64(st.MailQueued)),
		gauge("latchkey_mail_queue_oldest_age_seconds", "Age of the oldest message in the mail queue; 0 when it is empty.", oldest),
		gauge("latchkey_webhook_backlog_deliveries", "Webhook deliveries queued: first attempts and retries waiting.", float64(st.DeliveriesQueued)),
		gauge("latchkey_webhook_outbox_events", "Events not yet fanned out to the webhooks.", float64(st.OutboxEvents)),
		gauge("latchkey_store_file_size_bytes", "Size of the data file on disk.", float64(st.FileSize)),
		gauge("latchkey_store_data_size_bytes", "Bytes of the data file in use by pages (what a backup copies).", float64(st.DataSize)),
		gauge("latchkey_store_free_bytes", "Bytes of the data file's pages that hold no data: reused by later writes, given back only by latchkey compact.", float64(st.FreeSize)),
	}
}

// gauge is a family of one gauge without labels.
func gauge(name, help string, v float64) promtext.Family {
	return promtext.Family{Name: name, Help: help, Type: promtext.TypeGauge, Metrics: []promtext.Metric{{Value: v}}}
}
