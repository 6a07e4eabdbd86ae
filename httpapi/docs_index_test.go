package httpapi_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"latchkey/httpapi"
	"latchkey/internal/testkit"
)

// The README's endpoint index and docs/api.md are the reference an
// operator reads; these tests hold them to the routes the server
// registers, as TestOpenAPIRoutes holds openapi.json.

// anyParam matches a path parameter in router (:id, *rest) or OpenAPI
// ({id}) syntax.
var anyParam = regexp.MustCompile(`:[A-Za-z]+|\{[A-Za-z]+\}|\*[A-Za-z]+`)

// routeKey is "METHOD path" with every parameter written {}, so that
// /users/:id and /users/{userId} are the same route.
func routeKey(method, path string) string {
	return strings.ToUpper(method) + " " + anyParam.ReplaceAllString(path, "{}")
}

// apiRoutes returns the API routes the server registers (the dashboard
// and the demo page are not API), a catch-all expanded into the paths it
// serves.
func apiRoutes(t *testing.T) map[string]bool {
	t.Helper()
	ts := newTestServer(t)
	srv := httpapi.New(ts.Svc, httpapi.Config{Webhooks: ts.Hooks})
	out := map[string]bool{}
	for _, r := range srv.Routes() {
		method, path := r[0], r[1]
		if specSkipped(path) {
			continue
		}
		paths, ok := catchAll[path]
		if !ok {
			paths = []string{path}
		}
		for _, p := range paths {
			out[routeKey(method, p)] = true
		}
	}
	if len(out) == 0 {
		t.Fatal("the server registers no API route")
	}
	return out
}

// indexRow is a row of the README's endpoint index:
// | GET | [`/me`](docs/api.md#get-apiv1me) | key or session | … |
var indexRow = regexp.MustCompile("^\\|\\s*([A-Z]+)\\s*\\|\\s*\\[`([^`]+)`\\]\\(([^)]*)\\)([^|]*)\\|")

// TestReadmeEndpointIndex: the README's endpoint index lists exactly the
// routes the server registers, once each, and each links into
// docs/api.md.
func TestReadmeEndpointIndex(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "compares the README with the routes")
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## Endpoint index")
	if start < 0 {
		t.Fatal(`README.md has no "## Endpoint index" section`)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		m := indexRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		method, path, link, after := m[1], m[2], m[3], m[4]
		// Paths are under /api/v1 unless the row says it shows the whole path.
		if !strings.Contains(after, "whole path") {
			path = "/api/v1" + path
		}
		k := routeKey(method, path)
		if listed[k] {
			t.Errorf("README endpoint index lists %s twice", k)
		}
		listed[k] = true
		if !strings.HasPrefix(link, "docs/api.md#") {
			t.Errorf("README endpoint index: %s links to %q, want a heading of docs/api.md", k, link)
		}
	}
	routed := apiRoutes(t)
	for _, k := range sortedKeys(routed) {
		if !listed[k] {
			t.Errorf("routed but not in the README's endpoint index: %s", k)
		}
	}
	for _, k := range sortedKeys(listed) {
		if !routed[k] {
			t.Errorf("in the README's endpoint index but not routed: %s", k)
		}
	}
}

// apiHeading is a heading of docs/api.md that names one or more methods
// and a path: "### GET /api/v1/me", "#### GET, PATCH, DELETE /api/v1/admin/projects/:id".
var apiHeading = regexp.MustCompile(`^#{2,5}\s+((?:[A-Z]+,\s*)*[A-Z]+)\s+(/\S+)\s*$`)

// TestAPIReferenceHeadings: docs/api.md has a heading for every route the
// server registers (the README's index links to them), and no heading
// for a route that does not exist.
func TestAPIReferenceHeadings(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the API reference")
	raw, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		m := apiHeading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		for _, method := range strings.Split(m[1], ",") {
			documented[routeKey(strings.TrimSpace(method), m[2])] = true
		}
	}
	routed := apiRoutes(t)
	for _, k := range sortedKeys(routed) {
		if !documented[k] {
			t.Errorf("routed but docs/api.md has no heading for it: %s", k)
		}
	}
	for _, k := range sortedKeys(documented) {
		if !routed[k] {
			t.Errorf("docs/api.md has a heading for %s, which is not routed", k)
		}
	}
}
