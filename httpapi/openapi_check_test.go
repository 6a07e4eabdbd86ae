package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"latchkey/store/storetest"
	"mime"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/cache"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/content"
	"github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
)

// The test servers of the bolt pass validate every request and response
// that passes through them against the OpenAPI document
// (httpapi/openapi.json), so
// each handler test also checks that the document describes what the
// server really answers. A mismatch fails the test that made the call.
//
// The rules, for each request outside the HTML dashboard and the demo
// page (specSkipped), and other than a CORS preflight (checkPreflight):
//   - a method and path the document lacks must be answered 404
//     NOT_FOUND or 405 METHOD_NOT_ALLOWED, as the router does for what it
//     does not serve;
//   - a request the document calls invalid (a missing required field, a
//     wrong type, no Authorization header where one is required) must
//     not succeed: its answer must be 4xx or 5xx;
//   - every answer must be documented for its operation: its status, its
//     content type, its required headers, and its body against the
//     schema, strictly: a field the schema does not declare is a
//     mismatch, so a field the server adds must be added to the
//     document too (the document itself lets clients ignore unknown
//     fields; the tests do not).

// specValidators are the OpenAPI document's validators, built once per
// test binary.
type specValidators struct {
	// responses checks answers strictly: undeclared fields are errors.
	responses validator.Validator
	// requests checks requests as the server reads them: unknown body
	// fields are allowed (the server ignores them).
	requests validator.Validator
}

// loadSpec returns the document's validators, built once per test
// binary.
var loadSpec = sync.OnceValues(newSpecValidators)

// specPool holds one set of validators per CPU: a set validates one
// exchange at a time (its schema caches are shared by every test
// server's handler goroutines), and one set alone made every exchange of
// the parallel tests wait for it (half of the package's time under the
// race detector).
var specPool = sync.OnceValues(func() (chan *specValidators, error) {
	first, err := loadSpec()
	if err != nil {
		return nil, err
	}
	n := runtime.GOMAXPROCS(0)
	pool := make(chan *specValidators, n)
	pool <- first
	errs := make(chan error, n)
	for range n - 1 {
		go func() {
			v, err := newSpecValidators()
			if err == nil {
				pool <- v
			}
			errs <- err
		}()
	}
	for range n - 1 {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	return pool, nil
})

// specSchemas holds the document's schemas, compiled once for every
// validator: a compiled schema depends on the schema and the compiler's
// options (format assertions, the same for all), not on the strictness
// or the body decoders a validator adds, and it is read-only once
// compiled, so validators checking exchanges at once share it.
var specSchemas = cache.NewDefaultCache()

// newSpecValidators reads the document and builds its validators.
func newSpecValidators() (*specValidators, error) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		return nil, err
	}
	build := func(opts ...config.Option) (validator.Validator, error) {
		doc, err := libopenapi.NewDocument(raw)
		if err != nil {
			return nil, err
		}
		v, errs := validator.NewValidator(doc, append(opts, config.WithFormatAssertions(), config.WithSchemaCache(specSchemas))...)
		if len(errs) > 0 {
			return nil, fmt.Errorf("openapi.json: %v", errs)
		}
		return v, nil
	}
	// CORS answer headers are described once, in info.description, not
	// on every response of every browser endpoint.
	// The WebAuthn options and a user's metadata are objects whose
	// members the document does not describe (opaqueMembers): the
	// answers are checked with those members left out.
	// A JSON-lines answer (the user export) is checked line by line: the
	// document describes it as the array of its lines.
	// The first compiles every schema (seconds under the race
	// detector) into specSchemas; the second finds them there.
	res, err := build(config.WithStrictMode(),
		config.WithStrictIgnoredHeadersExtra("Access-Control-Allow-Origin", "Access-Control-Expose-Headers"),
		config.WithBodyDecoder("application/json", content.DecoderFunc(decodeJSONOpaque)),
		config.WithBodyDecoder("application/x-ndjson", content.DecoderFunc(decodeJSONLines)))
	if err != nil {
		return nil, err
	}
	req, err := build()
	if err != nil {
		return nil, err
	}
	return &specValidators{responses: res, requests: req}, nil
}

// decodeJSONLines decodes a JSON-lines body into the array of its
// lines. A last line without its newline is a stream cut short (the
// export says so) and is left out; any other line that is not one JSON
// value is an error.
func decodeJSONLines(in *content.DecodeInput) (any, error) {
	raw, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	lines := []any{}
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			break
		}
		var v any
		if err := json.Unmarshal(raw[:i], &v); err != nil {
			return nil, fmt.Errorf("line %d: %w", len(lines)+1, err)
		}
		lines, raw = append(lines, opaqueMembers(v, false)), raw[i+1:]
	}
	return lines, nil
}

// decodeJSONOpaque decodes a JSON answer as the validator's own decoder
// does, then leaves out the members the document does not describe
// (opaqueMembers).
func decodeJSONOpaque(in *content.DecodeInput) (any, error) {
	v, err := content.JSONDecoder().Decode(in)
	if err != nil {
		return nil, err
	}
	return opaqueMembers(v, true), nil
}

// opaqueMembers empties, in a decoded answer, the objects whose members
// the document leaves undescribed, so that the strict check (every
// member declared) passes over them and still checks everything else,
// their own type included (an object): the WebAuthn options (the
// answer's "options", top is true for an answer's top level), which
// go-webauthn writes and the browser library reads as they are, and a
// user's "metadata", the operator's object, at any depth. It replaces
// ignore patterns of the validator ("$.body**.metadata.**"), which it
// matched against the path of every member of every answer (seconds of
// the package's tests under the race detector).
func opaqueMembers(v any, top bool) any {
	switch v := v.(type) {
	case map[string]any:
		for k, m := range v {
			if o, ok := m.(map[string]any); ok && len(o) > 0 && (k == "metadata" || top && k == "options") {
				v[k] = map[string]any{}
				continue
			}
			v[k] = opaqueMembers(m, false)
		}
	case []any:
		for i, m := range v {
			v[i] = opaqueMembers(m, false)
		}
	}
	return v
}

// specSkipped reports the paths that are not API: the dashboard's HTML
// pages and the passkey demo page with its forwarding calls, and the
// projects' OpenID providers under /oidc/ (and their RFC 8414 metadata
// under /.well-known/), whose wire the OpenID Connect and OAuth
// specifications fix and whose discovery document describes them (their
// tests check them with relying-party libraries).
func specSkipped(path string) bool {
	return path == "/admin" || strings.HasPrefix(path, "/admin/") || strings.HasPrefix(path, "/demo/") ||
		strings.HasPrefix(path, "/oidc/") || strings.HasPrefix(path, "/.well-known/oauth-authorization-server/oidc/")
}

// specChecked wraps an API handler so that every exchange through it is
// validated against the document; mismatches fail t.
func specChecked(t testing.TB, next http.Handler) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return next // benchmarks measure the server, not the check
	}
	if storetest.Backend(t) == storetest.Postgres {
		// The handlers write the wire, not the store engine: the bolt
		// pass checks every exchange, and the store's conformance suites
		// hold both engines to the same records (empty and absent apart).
		// Checking again cost the PostgreSQL pass a third of its time.
		return next
	}
	pool, err := specPool()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if specSkipped(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		var body []byte
		var streamed *prefixReader
		served := r
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/x-ndjson" {
			// A user import is streamed to the handler as it arrives
			// (it may be larger than the test should hold); the
			// document gives it no schema, so its first MiB is checked.
			// The handler gets a copy of the request: the server's own
			// keeps its body, whose unread size decides, once the
			// handler returns, whether the rest of a refused body is
			// waited for or the connection closed.
			streamed = &prefixReader{r: r.Body, max: 1 << 20}
			served = r.Clone(r.Context())
			served.Body = struct {
				io.Reader
				io.Closer
			}{streamed, r.Body}
		} else {
			var err error
			body, err = io.ReadAll(r.Body)
			if err != nil {
				t.Errorf("OpenAPI check: reading the request body: %v", err)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		req := r.Clone(r.Context())
		rec := &specRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, served)
		if !rec.wrote {
			rec.status = http.StatusOK
		}
		if streamed != nil {
			body = streamed.buf.Bytes()
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > 0 && req.Header.Get("Content-Type") == "" {
			// The server reads a body without a Content-Type as JSON.
			req.Header.Set("Content-Type", "application/json")
		}
		resBody := rec.body.Bytes()
		if w.Header().Get("Content-Encoding") == "gzip" {
			// The document itself, gzipped: checked as the client reads it.
			zr, err := gzip.NewReader(bytes.NewReader(resBody))
			if err == nil {
				resBody, err = io.ReadAll(zr)
			}
			if err != nil {
				t.Errorf("OpenAPI check: a gzipped answer that does not decompress: %v", err)
			}
		}
		res := &http.Response{StatusCode: rec.status, Header: w.Header().Clone(), Request: req,
			Body: io.NopCloser(bytes.NewReader(resBody))}
		res.Header.Del("Content-Encoding")
		key := exchangeKey(req, body, res, resBody)
		if _, seen := specPassed.Load(key); seen {
			return
		}
		spec := <-pool
		problems := spec.check(req, body, res, resBody)
		pool <- spec
		if len(problems) == 0 {
			specPassed.Store(key, struct{}{})
		}
		if len(problems) > 0 {
			t.Errorf("OpenAPI mismatch: %s %s -> %d\n  %s\n  request body: %s\n  response body: %s",
				r.Method, r.URL.RequestURI(), rec.status, strings.Join(problems, "\n  "), clipBody(body), clipBody(resBody))
		}
	})
}

// check returns the ways an exchange disagrees with the document.
func (s *specValidators) check(req *http.Request, reqBody []byte, res *http.Response, resBody []byte) []string {
	var problems []string
	if req.Method == http.MethodOptions {
		// CORS preflights are not operations of the document (its
		// description explains them): 204, or the refusal envelope.
		return checkPreflight(res, resBody)
	}
	if p := req.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		// No documented path ends in a slash; the validator would
		// match one that differs only by it, the router does not.
		if res.StatusCode != http.StatusNotFound {
			return []string{fmt.Sprintf("a path with a trailing slash answered %d, want 404", res.StatusCode)}
		}
		return checkUnrouted(res, resBody)
	}
	_, reqErrs := s.requests.ValidateHttpRequestSync(req)
	for _, e := range reqErrs {
		if e.ValidationType == helpers.PathValidation {
			// Not an operation of the document: the server must not
			// serve it either.
			if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusMethodNotAllowed {
				return []string{fmt.Sprintf("not in the document (%s), but the server answered %d", e.Message, res.StatusCode)}
			}
			return checkUnrouted(res, resBody)
		}
	}
	if res.StatusCode < 400 {
		for _, e := range reqErrs {
			problems = append(problems, "the server accepted a request the document calls invalid: "+describe(e))
		}
	}
	strict := s.responses
	if req.URL.Path == "/api/v1/openapi.json" {
		// The document describes its own top level only; its validity
		// is TestOpenAPIDocumentValid's.
		strict = s.requests
	}
	if _, resErrs := strict.ValidateHttpResponse(req, res); len(resErrs) > 0 {
		for _, e := range resErrs {
			problems = append(problems, "response: "+describe(e))
		}
	}
	return problems
}

// checkUnrouted checks the router's own answer to an unknown path or
// method: the error envelope with NOT_FOUND or METHOD_NOT_ALLOWED.
func checkUnrouted(res *http.Response, body []byte) []string {
	var env struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
		Code    string `json:"code"`
	}
	want := map[int]string{http.StatusNotFound: "NOT_FOUND", http.StatusMethodNotAllowed: "METHOD_NOT_ALLOWED"}[res.StatusCode]
	if err := json.Unmarshal(body, &env); err != nil || env.Success == nil || *env.Success || env.Error == "" || env.Code != want {
		return []string{fmt.Sprintf("an unrouted request's answer is not the %s envelope", want)}
	}
	return nil
}

// checkPreflight checks the answer to an OPTIONS request: 204 without a
// body, 403 ORIGIN_NOT_ALLOWED, or the router's 404/405.
func checkPreflight(res *http.Response, body []byte) []string {
	switch res.StatusCode {
	case http.StatusNoContent:
		if len(body) > 0 {
			return []string{"a preflight's 204 has a body"}
		}
		return nil
	case http.StatusForbidden:
		var env struct {
			Success *bool  `json:"success"`
			Code    string `json:"code"`
		}
		if json.Unmarshal(body, &env) != nil || env.Success == nil || *env.Success || env.Code != "ORIGIN_NOT_ALLOWED" {
			return []string{"a preflight's 403 is not the ORIGIN_NOT_ALLOWED envelope"}
		}
		return nil
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return checkUnrouted(res, body)
	}
	return []string{fmt.Sprintf("a preflight answered %d, want 204, 403, 404 or 405", res.StatusCode)}
}

// describe words one validation error with its schema failures.
func describe(e *errors.ValidationError) string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Reason != "" && e.Reason != e.Message {
		b.WriteString(": " + e.Reason)
	}
	for _, f := range e.SchemaValidationErrors {
		fmt.Fprintf(&b, "\n      - %s (at %s)", f.Reason, f.FieldPath)
	}
	return b.String()
}

func clipBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// prefixReader passes a body through while keeping its first max bytes.
type prefixReader struct {
	r   io.Reader
	max int
	buf bytes.Buffer
}

func (p *prefixReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if room := p.max - p.buf.Len(); room > 0 {
		p.buf.Write(b[:min(n, room)])
	}
	return n, err
}

// specRecorder passes a response through while keeping its status and
// (the first MiB of) its body.
type specRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *specRecorder) WriteHeader(code int) {
	if !r.wrote && code >= 200 {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *specRecorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	if r.body.Len() < 1<<20 {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

func (r *specRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *specRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// specPassed holds the exchanges the document was found to describe,
// by exchangeKey: the same exchange again (the same request and the
// same answer, byte for byte, but its date) is not checked again: tests
// repeat many exchanges exactly (refusals above all; about one in five),
// and checking one costs more than serving it.
var specPassed sync.Map

// exchangeKey sums up everything the check reads of an exchange: the
// request's method, URI, headers and body, and the answer's status,
// headers (but Date, which changes every second) and body.
func exchangeKey(req *http.Request, reqBody []byte, res *http.Response, resBody []byte) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	headers := func(hd http.Header) {
		names := make([]string, 0, len(hd))
		for k := range hd {
			if k != "Date" {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			field([]byte(k))
			for _, v := range hd[k] {
				field([]byte(v))
			}
		}
		field(nil)
	}
	field([]byte(req.Method))
	field([]byte(req.URL.RequestURI()))
	headers(req.Header)
	field(reqBody)
	field([]byte(strconv.Itoa(res.StatusCode)))
	headers(res.Header)
	field(resBody)
	var k [32]byte
	h.Sum(k[:0])
	return k
}
