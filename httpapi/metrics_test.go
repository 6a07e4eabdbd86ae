package httpapi_test

import (
	"bytes"
	"latchkey/internal/testkit"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches GET /metrics with the admin token and parses it with
// the Prometheus text-format parser.
func (ts *testServer) scrape() map[string]*dto.MetricFamily {
	ts.t.Helper()
	r := ts.admin("GET", "/metrics", nil)
	if r.Status != 200 {
		ts.t.Fatalf("GET /metrics: status %d, body %s", r.Status, r.Raw)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(ct, "version=0.0.4") {
		ts.t.Fatalf("Content-Type=%q, want the text exposition format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.Raw))
	if err != nil {
		ts.t.Fatalf("parse /metrics: %v\n%s", err, r.Raw)
	}
	return fams
}

// sample returns the metric of family name whose labels include want,
// failing when the family is missing or has another type.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
	if f.GetType() != typ {
		t.Fatalf("%s is a %v, want %v", name, f.GetType(), typ)
	}
	if f.GetHelp() == "" {
		t.Fatalf("%s has no help text", name)
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no series with labels %v", name, want)
	return nil
}

// value is a counter's or a gauge's value.
func value(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestMetrics: after traffic, /metrics (admin token) has every family
// with the counts the traffic made: requests by route pattern and code
// with latency, authentication events and logins, the mail queue, the
// webhook backlog and attempts, the store's size and commit latency.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t, 500) // the first delivery fails, the rest succeed
	ts.createWebhook(rcv.URL+"/hook", nil)
	sent := ts.Clock.Now()
	tok := str(t, ts.login("m@example.com").Body, "token") // advances 31 s
	for range 3 {
		wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
	}
	wantError(t, ts.do("GET", "/api/v1/session", "bad", nil), 401, "INVALID_SESSION")
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "m@example.com"}))
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "m@example.com", "code": "000000"}), 401, "INVALID_CODE")
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/AbCdEf", tok, nil), 404, "PASSKEY_NOT_FOUND")
	wantError(t, ts.do("GET", "/nope/12345", "", nil), 404, "NOT_FOUND")
	wantError(t, ts.do("BREW", "/api/v1/session", "", nil), 405, "METHOD_NOT_ALLOWED")
	ts.deliver() // user.registered fails (retried in 30 s), session.created succeeds

	fams := ts.scrape()
	counter, gauge, histogram := dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM
	for _, c := range []struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
		want   float64
	}{
		{"latchkey_http_requests_total", counter, map[string]string{"route": "/api/v1/session", "method": "GET", "code": "200"}, 3},
		{"latchkey_http_requests_total", counter, map[string]string{"route": "/api/v1/session", "method": "GET", "code": "401"}, 1},
		{"latchkey_http_requests_total", counter, map[string]string{"route": "/api/v1/otp/verify", "method": "POST", "code": "200"}, 1},
		{"latchkey_http_requests_total", counter, map[string]string{"route": "/api/v1/otp/verify", "method": "POST", "code": "401"}, 1},
		{"latchkey_http_requests_total", counter, map[string]string{"route": "/api/v1/passkeys/*rest", "method": "DELETE", "code": "404"}, 1},
		{"latchkey_http_requests_total", counter, map[string]string{"route": "unmatched", "method": "GET", "code": "404"}, 1},
		{"latchkey_http_requests_total", counter, map[string]string{"route": "unmatched", "method": "OTHER", "code": "405"}, 1},
		{"latchkey_auth_events_total", counter, map[string]string{"method": "email_otp", "action": "send", "result": "success"}, 2},
		{"latchkey_auth_events_total", counter, map[string]string{"method": "email_otp", "action": "verify", "result": "success"}, 1},
		{"latchkey_auth_events_total", counter, map[string]string{"method": "email_otp", "action": "verify", "result": "invalid_code"}, 1},
		{"latchkey_logins_total", counter, map[string]string{"method": "email_otp"}, 1},
		{"latchkey_webhook_attempts_total", counter, map[string]string{"outcome": "retrying"}, 1},
		{"latchkey_webhook_attempts_total", counter, map[string]string{"outcome": "succeeded"}, 1},
		{"latchkey_webhook_backlog_deliveries", gauge, nil, 1},
		{"latchkey_webhook_outbox_events", gauge, nil, 0},
		{"latchkey_mail_queue_depth", gauge, nil, 2}, // no mail worker runs here
		{"latchkey_mail_queue_oldest_age_seconds", gauge, nil, ts.Clock.Now().Sub(sent).Seconds()},
		{"latchkey_build_info", gauge, map[string]string{"version": "test"}, 1},
	} {
		if got := value(sample(t, fams, c.name, c.typ, c.labels)); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := sample(t, fams, "latchkey_http_request_duration_seconds", histogram, map[string]string{"route": "/api/v1/session", "method": "GET"}).GetHistogram()
	if h.GetSampleCount() != 4 || len(h.GetBucket()) == 0 {
		t.Errorf("request duration for GET /api/v1/session: %d samples, %d buckets; want 4 samples", h.GetSampleCount(), len(h.GetBucket()))
	}
	commits := sample(t, fams, "latchkey_store_commit_duration_seconds", histogram, nil).GetHistogram()
	if commits.GetSampleCount() < 5 || commits.GetSampleSum() <= 0 {
		t.Errorf("commit latency: %d samples, sum %v; want the traffic's commits", commits.GetSampleCount(), commits.GetSampleSum())
	}
	for _, name := range []string{"latchkey_store_file_size_bytes", "latchkey_store_data_size_bytes"} {
		if v := value(sample(t, fams, name, gauge, nil)); v <= 0 || v != math.Trunc(v) {
			t.Errorf("%s = %v, want a positive byte count", name, v)
		}
	}
	if v := value(sample(t, fams, "latchkey_store_free_bytes", gauge, nil)); v < 0 || v != math.Trunc(v) {
		t.Errorf("latchkey_store_free_bytes = %v, want a byte count", v)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	// Label values are route patterns, never raw paths.
	for _, m := range fams["latchkey_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.Contains(l.GetValue(), "AbCdEf") || strings.Contains(l.GetValue(), "12345") || l.GetValue() == "BREW" {
				t.Errorf("label %s=%q holds a raw path or method", l.GetName(), l.GetValue())
			}
		}
	}

	// The counts move: the retry succeeds, the queue drains.
	ts.Clock.Advance(31 * time.Second)
	ts.deliver()
	fams = ts.scrape()
	if got := value(sample(t, fams, "latchkey_webhook_attempts_total", counter, map[string]string{"outcome": "succeeded"})); got != 2 {
		t.Errorf("succeeded attempts = %v, want 2", got)
	}
	if got := value(sample(t, fams, "latchkey_webhook_backlog_deliveries", gauge, nil)); got != 0 {
		t.Errorf("backlog = %v, want 0", got)
	}
	if got := value(sample(t, fams, "latchkey_http_requests_total", counter, map[string]string{"route": "/metrics", "method": "GET", "code": "200"})); got != 1 {
		t.Errorf("GET /metrics counted %v times, want 1 (the first scrape)", got)
	}
}

// TestMetricsNeedAdminToken: on the main listener /metrics answers 401
// UNAUTHORIZED without the admin token.
func TestMetricsNeedAdminToken(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "refuses requests without the admin token")
	ts := newTestServer(t)
	for _, tok := range []string{"", ts.Key, "adm_wrongwrongwrongwrongwrong"} {
		r := ts.do("GET", "/metrics", tok, nil)
		wantError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		if strings.Contains(string(r.Raw), "latchkey_") {
			t.Fatal("metrics shown without the admin token")
		}
	}
}
