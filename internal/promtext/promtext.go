// Package promtext keeps metrics and writes them in the Prometheus text
// exposition format (version 0.0.4): counters and histograms with labels,
// values read at scrape time, and the Go runtime's and the process's own
// (go_*, process_*), in the families, names, help texts and layout the
// Prometheus Go client writes. It replaces that client in latchkey's
// binary, where the client and the protocol buffers it links cost 3 MB
// (docs/choices.md, "Operations").
package promtext

import (
	"bytes"
	"compress/gzip"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Metric types, as the # TYPE line names them.
const (
	TypeCounter   = "counter"
	TypeGauge     = "gauge"
	TypeHistogram = "histogram"
	TypeSummary   = "summary"
)

// ContentType is what Handler answers: the text format, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// Family is one metric family as a scrape shows it.
type Family struct {
	Name, Help string
	Type       string // TypeCounter, TypeGauge, TypeHistogram or TypeSummary
	Metrics    []Metric
}

// Metric is one series of a family: Value for a counter or a gauge;
// Buckets, Sum and Count for a histogram; Quantiles, Sum and Count for a
// summary.
type Metric struct {
	Labels    []Label // in any order: written sorted by name
	Value     float64
	Buckets   []Bucket // cumulative counts by upper bound; +Inf is Count
	Quantiles []Quantile
	Sum       float64
	Count     uint64
}

// Label is a label's name and value.
type Label struct{ Name, Value string }

// Bucket is a histogram's cumulative count of observations <= Upper.
type Bucket struct {
	Upper float64
	Count uint64
}

// Quantile is a summary's value at quantile Q.
type Quantile struct{ Q, Value float64 }

// Collector gives its families when the metrics are scraped.
type Collector interface {
	Collect() []Family
}

// CollectorFunc is a function as a Collector.
type CollectorFunc func() []Family

// Collect calls f.
func (f CollectorFunc) Collect() []Family { return f() }

// Registry is a set of collectors. Safe for concurrent use.
type Registry struct {
	mu         sync.Mutex
	collectors []Collector
}

// Register adds collectors.
func (r *Registry) Register(cs ...Collector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, cs...)
}

// Gather collects every family, leaves out those without a series, and
// orders families by name and each family's series by their label values
// (labels taken in name order), as the Prometheus client does.
func (r *Registry) Gather() []Family {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	var fams []Family
	for _, c := range cs {
		for _, f := range c.Collect() {
			if len(f.Metrics) == 0 {
				continue
			}
			for i := range f.Metrics {
				f.Metrics[i].Labels = sortedLabels(f.Metrics[i].Labels)
			}
			slices.SortStableFunc(f.Metrics, func(a, b Metric) int { return compareLabels(a.Labels, b.Labels) })
			fams = append(fams, f)
		}
	}
	slices.SortStableFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return fams
}

func sortedLabels(ls []Label) []Label {
	if slices.IsSortedFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) }) {
		return ls
	}
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

func compareLabels(a, b []Label) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := strings.Compare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// WriteText appends the families in the text format to b.
func WriteText(b *bytes.Buffer, fams []Family) {
	for _, f := range fams {
		b.WriteString("# HELP ")
		b.WriteString(f.Name)
		b.WriteByte(' ')
		helpEscaper.WriteString(b, f.Help)
		b.WriteString("\n# TYPE ")
		b.WriteString(f.Name)
		b.WriteByte(' ')
		b.WriteString(f.Type)
		b.WriteByte('\n')
		for _, m := range f.Metrics {
			switch f.Type {
			case TypeHistogram:
				for _, bk := range m.Buckets {
					sample(b, f.Name, "_bucket", m.Labels, "le", bk.Upper, float64(bk.Count))
				}
				sample(b, f.Name, "_bucket", m.Labels, "le", math.Inf(1), float64(m.Count))
				sample(b, f.Name, "_sum", m.Labels, "", 0, m.Sum)
				sample(b, f.Name, "_count", m.Labels, "", 0, float64(m.Count))
			case TypeSummary:
				for _, q := range m.Quantiles {
					sample(b, f.Name, "", m.Labels, "quantile", q.Q, q.Value)
				}
				sample(b, f.Name, "_sum", m.Labels, "", 0, m.Sum)
				sample(b, f.Name, "_count", m.Labels, "", 0, float64(m.Count))
			default:
				sample(b, f.Name, "", m.Labels, "", 0, m.Value)
			}
		}
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// sample writes one line: name+suffix, the labels (then extra=extraValue
// when extra is not empty), the value.
func sample(b *bytes.Buffer, name, suffix string, labels []Label, extra string, extraValue, v float64) {
	b.WriteString(name)
	b.WriteString(suffix)
	if len(labels) > 0 || extra != "" {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l.Name)
			b.WriteString(`="`)
			valueEscaper.WriteString(b, l.Value)
			b.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(extra)
			b.WriteString(`="`)
			b.Write(appendFloat(b.AvailableBuffer(), extraValue))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.Write(appendFloat(b.AvailableBuffer(), v))
	b.WriteByte('\n')
}

// appendFloat writes a value as the Prometheus client does.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(dst, '1')
	case f == 0:
		return append(dst, '0')
	case f == -1:
		return append(dst, "-1"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// Handler serves the registry's families in the text format, gzipped
// when the scraper accepts it, to any method.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b bytes.Buffer
		WriteText(&b, r.Gather())
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Add("Vary", "Accept-Encoding")
		if !AcceptsGzip(req.Header.Get("Accept-Encoding")) {
			w.Write(b.Bytes())
			return
		}
		h.Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		gz.Write(b.Bytes())
		gz.Close()
	})
}

// AcceptsGzip reports whether an Accept-Encoding header takes gzip
// (named in any case, without q=0).
func AcceptsGzip(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
		return err == nil && v > 0
	}
	return false
}

// Counter is one series of a CounterVec: a count that only grows.
type Counter struct{ n atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// series is one label-value combination of a vector.
type series[T any] struct {
	values []string
	v      T
}

// vec is a family whose series are created on first use, keyed by their
// label values.
type vec[T any] struct {
	name, help string
	labels     []string
	make       func() *T

	mu     sync.RWMutex
	byHash map[uint64][]*series[*T]
}

func (v *vec[T]) with(values []string) *T {
	if len(values) != len(v.labels) {
		panic("promtext: " + v.name + " wants " + strconv.Itoa(len(v.labels)) + " label values")
	}
	h := hashValues(values)
	v.mu.RLock()
	for _, s := range v.byHash[h] {
		if slices.Equal(s.values, values) {
			v.mu.RUnlock()
			return s.v
		}
	}
	v.mu.RUnlock()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range v.byHash[h] {
		if slices.Equal(s.values, values) {
			return s.v
		}
	}
	if v.byHash == nil {
		v.byHash = map[uint64][]*series[*T]{}
	}
	s := &series[*T]{values: slices.Clone(values), v: v.make()}
	v.byHash[h] = append(v.byHash[h], s)
	return s.v
}

// each calls f for every series with its labels.
func (v *vec[T]) each(f func(labels []Label, t *T)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, ss := range v.byHash {
		for _, s := range ss {
			ls := make([]Label, len(v.labels))
			for i, n := range v.labels {
				ls[i] = Label{n, s.values[i]}
			}
			f(ls, s.v)
		}
	}
}

// hashValues is FNV-1a over the values, each ended by a 0xff byte.
func hashValues(values []string) uint64 {
	h := uint64(14695981039346656037)
	for _, s := range values {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
		h ^= 0xff
		h *= 1099511628211
	}
	return h
}

// CounterVec is a counter family with labels.
type CounterVec struct{ v vec[Counter] }

// NewCounterVec returns a counter family named name with these labels.
func NewCounterVec(name, help string, labels ...string) *CounterVec {
	return &CounterVec{vec[Counter]{name: name, help: help, labels: labels, make: func() *Counter { return new(Counter) }}}
}

// WithLabelValues returns the series of these label values (in the
// order of the labels), creating it at its first use.
func (c *CounterVec) WithLabelValues(values ...string) *Counter { return c.v.with(values) }

// Collect implements Collector.
func (c *CounterVec) Collect() []Family {
	f := Family{Name: c.v.name, Help: c.v.help, Type: TypeCounter}
	c.v.each(func(ls []Label, t *Counter) {
		f.Metrics = append(f.Metrics, Metric{Labels: ls, Value: float64(t.n.Load())})
	})
	return []Family{f}
}

// Histogram is one series of a HistogramVec: observations counted into
// buckets by upper bound (+Inf last) and summed.
type Histogram struct {
	upper   []float64
	counts  []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumBits atomic.Uint64
}

func newHistogram(upper []float64) *Histogram {
	return &Histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.upper, v) // the first bound >= v
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// metric reads the histogram: cumulative buckets, the count their total.
func (h *Histogram) metric(ls []Label) Metric {
	m := Metric{Labels: ls, Buckets: make([]Bucket, len(h.upper)), Sum: math.Float64frombits(h.sumBits.Load())}
	for i := range h.counts {
		m.Count += h.counts[i].Load()
		if i < len(h.upper) {
			m.Buckets[i] = Bucket{h.upper[i], m.Count}
		}
	}
	return m
}

// HistogramVec is a histogram family with labels.
type HistogramVec struct{ v vec[Histogram] }

// NewHistogramVec returns a histogram family with these buckets (upper
// bounds, increasing) and labels.
func NewHistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	if !slices.IsSorted(buckets) {
		panic("promtext: " + name + ": buckets not in increasing order")
	}
	return &HistogramVec{vec[Histogram]{name: name, help: help, labels: labels, make: func() *Histogram { return newHistogram(buckets) }}}
}

// WithLabelValues returns the series of these label values, creating it
// at its first use.
func (h *HistogramVec) WithLabelValues(values ...string) *Histogram { return h.v.with(values) }

// Collect implements Collector.
func (h *HistogramVec) Collect() []Family {
	f := Family{Name: h.v.name, Help: h.v.help, Type: TypeHistogram}
	h.v.each(func(ls []Label, t *Histogram) { f.Metrics = append(f.Metrics, t.metric(ls)) })
	return []Family{f}
}
