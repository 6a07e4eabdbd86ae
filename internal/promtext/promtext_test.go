package promtext

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWriteText: the exposition of counters, a histogram and a summary,
// byte for byte as the Prometheus client writes it: families by name,
// series by label values, labels by name (le and quantile last), help
// and label values escaped, values in the client's float format; a
// family without a series is left out.
func TestWriteText(t *testing.T) {
	var r Registry
	reqs := NewCounterVec("t_requests_total", "Requests \\ by\nroute.", "route", "code")
	reqs.WithLabelValues("/b", "200").Inc()
	reqs.WithLabelValues("/a", "404").Inc()
	reqs.WithLabelValues("/a", "200").Inc()
	reqs.WithLabelValues("/a", "200").Inc()
	reqs.WithLabelValues(`q"\`+"\n", "500").Inc()
	lat := NewHistogramVec("t_latency_seconds", "Latency.", []float64{0.5, 1, 2.5})
	h := lat.WithLabelValues()
	for _, v := range []float64{0.25, 0.5, 1, 3} {
		h.Observe(v)
	}
	empty := NewCounterVec("t_empty_total", "Never counted.", "x")
	r.Register(reqs, lat, empty, CollectorFunc(func() []Family {
		return []Family{{Name: "t_pause_seconds", Help: "Pauses.", Type: TypeSummary, Metrics: []Metric{{
			Labels: []Label{{"z", "1"}, {"a", "2"}}, Quantiles: []Quantile{{0, 0}, {0.5, 0.001}, {1, 1}}, Sum: 1.001, Count: 3}}}}
	}))
	var b bytes.Buffer
	WriteText(&b, r.Gather())
	want := `# HELP t_latency_seconds Latency.
# TYPE t_latency_seconds histogram
t_latency_seconds_bucket{le="0.5"} 2
t_latency_seconds_bucket{le="1"} 3
t_latency_seconds_bucket{le="2.5"} 3
t_latency_seconds_bucket{le="+Inf"} 4
t_latency_seconds_sum 4.75
t_latency_seconds_count 4
# HELP t_pause_seconds Pauses.
# TYPE t_pause_seconds summary
t_pause_seconds{a="2",z="1",quantile="0"} 0
t_pause_seconds{a="2",z="1",quantile="0.5"} 0.001
t_pause_seconds{a="2",z="1",quantile="1"} 1
t_pause_seconds_sum{a="2",z="1"} 1.001
t_pause_seconds_count{a="2",z="1"} 3
# HELP t_requests_total Requests \\ by\nroute.
# TYPE t_requests_total counter
t_requests_total{code="200",route="/a"} 2
t_requests_total{code="200",route="/b"} 1
t_requests_total{code="404",route="/a"} 1
t_requests_total{code="500",route="q\"\\\n"} 1
`
	if b.String() != want {
		t.Fatalf("exposition:\n%s\nwant:\n%s", b.String(), want)
	}
	// The same families through the Prometheus client's registry and
	// text writer give the same bytes.
	reg := prometheus.NewPedanticRegistry()
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_requests_total", Help: "Requests \\ by\nroute."}, []string{"route", "code"})
	cv.WithLabelValues("/b", "200").Inc()
	cv.WithLabelValues("/a", "404").Inc()
	cv.WithLabelValues("/a", "200").Add(2)
	cv.WithLabelValues(`q"\`+"\n", "500").Inc()
	hv := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t_latency_seconds", Help: "Latency.", Buckets: []float64{0.5, 1, 2.5}})
	for _, v := range []float64{0.25, 0.5, 1, 3} {
		hv.Observe(v)
	}
	reg.MustRegister(cv, hv)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var theirs bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&theirs, f); err != nil {
			t.Fatal(err)
		}
	}
	ours := strings.Replace(want, want[strings.Index(want, "# HELP t_pause"):strings.Index(want, "# HELP t_requests")], "", 1)
	if theirs.String() != ours {
		t.Fatalf("the Prometheus client writes:\n%s\nwe write:\n%s", theirs.String(), ours)
	}
}

// TestHandler: the text format's content type, the body parsed by the
// Prometheus text parser, gzipped when the scraper accepts gzip (and not
// when it refuses it with q=0).
func TestHandler(t *testing.T) {
	var r Registry
	c := NewCounterVec("t_total", "Total.", "k")
	c.WithLabelValues("v").Inc()
	r.Register(c, GoCollector(), ProcessCollector())
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	for _, c := range []struct {
		accept string
		gzip   bool
	}{{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"identity", false}} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("Accept-Encoding", c.accept)
		if c.accept == "" {
			req.Header.Set("Accept-Encoding", "identity")
		}
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body := res.Body
		if got := res.Header.Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", c.accept, res.Header.Get("Content-Encoding"))
		}
		if c.gzip {
			if body, err = gzip.NewReader(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		raw, _ := io.ReadAll(body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != ContentType {
			t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, raw)
		}
		if f := fams["t_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 1 {
			t.Fatalf("t_total: %v", f)
		}
		if f := fams["go_goroutines"]; f == nil || f.GetMetric()[0].GetGauge().GetValue() < 2 {
			t.Fatalf("go_goroutines: %v", f)
		}
	}
}

// TestRuntimeFamiliesMatchClient: the go_* and process_* families are
// those of the Prometheus client's default Go and process collectors:
// the same names, types and help texts (on Linux); values of the same order where
// they cannot move between the two reads.
func TestRuntimeFamiliesMatchClient(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process families are read from /proc, on Linux only")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	theirs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var r Registry
	r.Register(GoCollector(), ProcessCollector())
	ours := r.Gather()
	type fam struct{ name, typ, help string }
	var a, b []fam
	for _, f := range theirs {
		a = append(a, fam{f.GetName(), strings.ToLower(f.GetType().String()), f.GetHelp()})
	}
	for _, f := range ours {
		b = append(b, fam{f.Name, f.Type, f.Help})
	}
	if !slices.Equal(a, b) {
		t.Fatalf("families differ from the Prometheus client's:\nclient: %v\nours:   %v", a, b)
	}
	value := func(name string) (theirV, ourV float64) {
		for _, f := range theirs {
			if f.GetName() == name {
				m := f.GetMetric()[0]
				if f.GetType() == dto.MetricType_COUNTER {
					theirV = m.GetCounter().GetValue()
				} else {
					theirV = m.GetGauge().GetValue()
				}
			}
		}
		for _, f := range ours {
			if f.Name == name {
				ourV = f.Metrics[0].Value
			}
		}
		return theirV, ourV
	}
	for _, name := range []string{"go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "go_sched_gomaxprocs_threads",
		"process_max_fds", "process_virtual_memory_max_bytes", "process_start_time_seconds"} {
		if x, y := value(name); x != y && !(name == "process_start_time_seconds" && x-y < 0.02 && y-x < 0.02) {
			t.Errorf("%s: client %v, ours %v", name, x, y)
		}
	}
	for _, name := range []string{"go_memstats_sys_bytes", "process_resident_memory_bytes"} {
		if x, y := value(name); y < x/2 || y > x*2 {
			t.Errorf("%s: client %v, ours %v", name, x, y)
		}
	}
}
