package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"

	"latchkey/httpapi"
	"latchkey/internal/testkit"
)

// TestOpenAPIDocumentValid parses the document as OpenAPI 3.1, resolves
// every reference and validates it against the OpenAPI 3.1 schema.
func TestOpenAPIDocumentValid(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "validates the OpenAPI document")
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi version %q, want 3.1.x", v)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("building the model: %v", err)
	}
	if model == nil || model.Model.Paths == nil || model.Model.Paths.PathItems.Len() == 0 {
		t.Fatal("the document has no paths")
	}
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	if ok, errs := spec.responses.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("%s", describe(e))
		}
	}
}

// specDoc is the part of the document the tests walk themselves.
type specDoc struct {
	Paths map[string]map[string]struct {
		OperationID string                     `json:"operationId"`
		Summary     string                     `json:"summary"`
		Description string                     `json:"description"`
		Security    *[]map[string][]string     `json:"security"`
		Responses   map[string]json.RawMessage `json:"responses"`
	} `json:"paths"`
}

func readSpecDoc(t *testing.T) specDoc {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d specDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// catchAll lists the router patterns that serve more than one
// documented path (httprouter cannot put a parameter and a fixed name in
// one path segment).
var catchAll = map[string][]string{
	"/api/v1/passkeys/*rest": {"/api/v1/passkeys/{credentialId}", "/api/v1/passkeys/by-external/{credentialId}"},
}

var routeParam = regexp.MustCompile(`:([A-Za-z]+)`)

// TestOpenAPIRoutes checks that the document describes exactly the routes
// the server registers: every API route has its path and method in the
// document, and every documented operation is routed. The dashboard and
// the demo page are not API (specSkipped).
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "compares the route table with the document")
	ts := newTestServer(t)
	srv := httpapi.New(ts.Svc, httpapi.Config{Webhooks: ts.Hooks})
	routed := map[string]bool{}
	for _, r := range srv.Routes() {
		method, path := r[0], r[1]
		if specSkipped(path) {
			continue
		}
		paths, ok := catchAll[path]
		if !ok {
			if strings.Contains(path, "*") {
				t.Errorf("%s %s: a catch-all route; add it to catchAll with the paths it serves", method, path)
				continue
			}
			paths = []string{routeParam.ReplaceAllString(path, "{$1}")}
		}
		for _, p := range paths {
			routed[strings.ToLower(method)+" "+p] = true
		}
	}
	documented := map[string]bool{}
	for path, ops := range readSpecDoc(t).Paths {
		for method := range ops {
			documented[method+" "+path] = true
		}
	}
	for _, k := range sortedKeys(routed) {
		if !documented[k] {
			t.Errorf("routed but not in openapi.json: %s", k)
		}
	}
	for _, k := range sortedKeys(documented) {
		if !routed[k] {
			t.Errorf("in openapi.json but not routed: %s", k)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIOperationsComplete checks what every operation must carry:
// a unique operationId, a summary and a description, an explicit
// security requirement (empty for the calls without authentication),
// and a 500 answer.
func TestOpenAPIOperationsComplete(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the OpenAPI document")
	ids := map[string]string{}
	for path, ops := range readSpecDoc(t).Paths {
		for method, op := range ops {
			name := strings.ToUpper(method) + " " + path
			if op.OperationID == "" || op.Summary == "" || op.Description == "" {
				t.Errorf("%s: operationId, summary and description are required", name)
			}
			if prev, dup := ids[op.OperationID]; dup {
				t.Errorf("%s: operationId %q is also %s's", name, op.OperationID, prev)
			}
			ids[op.OperationID] = name
			if op.Security == nil {
				t.Errorf("%s: no security requirement (use [] for none)", name)
			}
			if _, ok := op.Responses["500"]; !ok {
				t.Errorf("%s: no 500 response", name)
			}
		}
	}
}

// errorCode matches a wire code declared in auth's error taxonomy
// (newErr's code argument, with or without a status before it).
var errorCode = regexp.MustCompile(`newErr\((?:http\.Status\w+, )?"([A-Z_]+)"`)

// TestOpenAPIErrorCodes holds the error codes of the document against
// the server's error taxonomy (auth/errors.go) and the handlers: every
// code the document lists exists in the source (no typos), and every
// declared code is mentioned by the document.
func TestOpenAPIErrorCodes(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "compares the OpenAPI document with the sources")
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var source bytes.Buffer
	for _, pattern := range []string{"../auth/*.go", "*.go"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			source.Write(b)
		}
	}
	// Codes in the document: every enum of an error body's code.
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var codes []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if c, ok := v["code"].(map[string]any); ok {
				if enum, ok := c["enum"].([]any); ok {
					for _, e := range enum {
						codes = append(codes, e.(string))
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if len(codes) == 0 {
		t.Fatal("no error codes found in the document")
	}
	for _, c := range slices.Compact(slices.Sorted(slices.Values(codes))) {
		if !bytes.Contains(source.Bytes(), []byte(`"`+c+`"`)) {
			t.Errorf("openapi.json lists code %s, which the server never declares", c)
		}
	}
	// Codes the server declares: each must be documented somewhere.
	taxonomy, err := os.ReadFile("../auth/errors.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := errorCode.FindAllSubmatch(taxonomy, -1)
	if len(declared) == 0 {
		t.Fatal("no newErr declarations found in auth/errors.go: update errorCode")
	}
	for _, m := range declared {
		if c := string(m[1]); !bytes.Contains(raw, []byte(c)) {
			t.Errorf("the server declares code %s; openapi.json never mentions it", c)
		}
	}
}

// TestOpenAPIServed fetches the document from the server: no
// authentication, the embedded file as JSON, an ETag that answers 304.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "serves the embedded OpenAPI document")
	ts := newTestServer(t)
	r := ts.do("GET", "/api/v1/openapi.json", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status=%d, want 200 (body %.200s)", r.Status, r.Raw)
	}
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Raw, want) {
		t.Fatal("served document differs from openapi.json")
	}
	if got := r.Body["openapi"]; got != "3.1.0" {
		t.Fatalf("openapi=%v, want 3.1.0", got)
	}
	etag := r.Header.Get("ETag")
	if etag == "" || !strings.Contains(r.Header.Get("Cache-Control"), "max-age") {
		t.Fatalf("ETag=%q Cache-Control=%q, want both", etag, r.Header.Get("Cache-Control"))
	}
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("Access-Control-Allow-Origin=%q, want *", got)
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/openapi.json", nil)
		req.Header.Set("If-None-Match", inm)
		if r := ts.send(req); r.Status != http.StatusNotModified || len(r.Raw) != 0 {
			t.Fatalf("If-None-Match %s: status=%d len=%d, want 304 and no body", inm, r.Status, len(r.Raw))
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/openapi.json", nil)
	req.Header.Set("If-None-Match", `"stale"`)
	if r := ts.send(req); r.Status != http.StatusOK {
		t.Fatalf("stale If-None-Match: status=%d, want 200", r.Status)
	}
}

// TestOpenAPIErrorPaths calls every documented operation the ways a
// careless client would: without its token, with a malformed body, and
// with a body over 64 KiB. The test server validates each answer
// against the document, so every operation's refusals are checked, not
// only those other tests happen to reach. Path parameters name nothing
// that exists (404s must be documented too).
func TestOpenAPIErrorPaths(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks every operation's refusals against the document")
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 1000000}))
	session := str(t, ts.login("sweep@example.com").Body, "token")
	tokens := map[string]string{"apiKey": ts.Key, "userSession": session, "adminToken": testAdminToken}
	param := regexp.MustCompile(`\{[^}]+\}`)
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Security    []map[string][]string `json:"security"`
			RequestBody *struct {
				Content map[string]any `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	big := `{"x":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`
	calls := 0
	for _, path := range slices.Sorted(maps.Keys(doc.Paths)) {
		for _, method := range slices.Sorted(maps.Keys(doc.Paths[path])) {
			op := doc.Paths[path][method]
			url := param.ReplaceAllString(path, "nope")
			if strings.HasPrefix(path, "/api/v1/passkeys/by-external") {
				url += "?externalUserId=nope"
			}
			token := ""
			if len(op.Security) > 0 {
				for scheme := range op.Security[0] {
					token = tokens[scheme]
				}
			}
			call := func(what, tok string, body any, want func(int) bool) {
				t.Helper()
				// Past every per-minute limit (API key, session, admin
				// failures) before each call.
				ts.Clock.Advance(61 * time.Second)
				r := ts.do(strings.ToUpper(method), url, tok, body)
				calls++
				if !want(r.Status) {
					t.Errorf("%s %s %s: status=%d (body %.200s)", strings.ToUpper(method), url, what, r.Status, r.Raw)
				}
			}
			if token != "" {
				call("without a token", "", nil, func(s int) bool { return s == http.StatusUnauthorized })
			}
			if op.RequestBody != nil {
				call("with a malformed body", token, "{", func(s int) bool { return s >= 400 && s < 500 })
				call("with a body over 64 KiB", token, big, func(s int) bool { return s >= 400 && s < 500 })
			}
		}
	}
	t.Logf("%d calls", calls)
}

// TestOpenAPICompressed: the document built in (openapi.json.gz) is
// openapi.json. With LATCHKEY_UPDATE_OPENAPI=1 (go generate) it writes
// openapi.json.gz from openapi.json instead.
func TestOpenAPICompressed(t *testing.T) {
	testkit.EngineFree(t, "compares a file with its gzipped copy")
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("LATCHKEY_UPDATE_OPENAPI") == "1" {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(raw)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("openapi.json.gz", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gz, err := os.ReadFile("openapi.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("openapi.json.gz: %v", err)
	}
	built, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("openapi.json.gz: %v", err)
	}
	if !bytes.Equal(built, raw) {
		t.Fatal("openapi.json.gz is not openapi.json: run go generate ./httpapi/")
	}
}
