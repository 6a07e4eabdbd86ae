package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/julienschmidt/httprouter"
)

// nopWriter is the cheapest ResponseWriter: the benchmark measures the
// instrumentation, not the writer.
type nopWriter struct{ h http.Header }

func (w nopWriter) Header() http.Header         { return w.h }
func (w nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w nopWriter) WriteHeader(int)             {}

// BenchmarkInstrument is what the metrics add to one request: the same
// trivial handle bare and instrumented (time, status recorder, counter
// and histogram), serially and from every CPU at once (the counters are
// shared).
func BenchmarkInstrument(b *testing.B) {
	m := NewMetrics(MetricsOptions{})
	h := func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) { w.WriteHeader(http.StatusOK) }
	inst := m.instrument(http.MethodGet, "/api/v1/session", h)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/session", nil)
	w := nopWriter{http.Header{}}
	for _, c := range []struct {
		name string
		h    httprouter.Handle
	}{{"bare", h}, {"instrumented", inst}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.h(w, req, nil)
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := nopWriter{http.Header{}}
				for pb.Next() {
					c.h(w, req, nil)
				}
			})
		})
	}
}
