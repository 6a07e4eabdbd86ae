package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// TestOpenAPICheckOpaqueMembers holds the OpenAPI check (specChecked)
// to what it leaves out: the members of a user's metadata and of the
// WebAuthn options pass, whatever they are; anything else the document
// does not declare is still a mismatch, beside them, around them and in
// every line of the user export, and so is a metadata or options that
// is not an object. The document must describe neither object's
// members, or leaving them out would skip their checks.
func TestOpenAPICheckOpaqueMembers(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks the OpenAPI check on answers the bolt pass's server gives")
	checkOpaqueUndescribed(t)
	spec, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t)
	login := ts.login("opaque@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+uid, `{"metadata":{"plan":{"tier":"pro","seats":[1,{"x":null}]},"options":{"a":1},"metadata":{"b":2}}}`))
	user := ts.do("GET", "/api/v1/user", tok, nil)
	wantOK(t, user)
	ceremony := ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "ceremony@example.com"})
	wantOK(t, ceremony)
	export := ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/users/export", nil)
	if export.Status != http.StatusOK || !bytes.Contains(export.Raw, []byte(`"tier":"pro"`)) {
		t.Fatalf("export: %d %s", export.Status, export.Raw)
	}

	// edit returns a JSON answer changed by change.
	edit := func(raw []byte, change func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// lines applies edit to the export's line i.
	lines := func(i int, change func(m map[string]any)) []byte {
		ls := bytes.SplitAfter(export.Raw, []byte("\n"))
		ls[i] = append(edit(bytes.TrimSuffix(ls[i], []byte("\n")), change), '\n')
		return bytes.Join(ls, nil)
	}
	userOf := func(m map[string]any) map[string]any { return m["user"].(map[string]any) }
	last := bytes.Count(export.Raw, []byte("\n")) - 1

	for _, c := range []struct {
		name       string
		method     string
		path, auth string
		reqBody    string
		res        *response
		body       []byte
		want       string // in a problem; "" for none
	}{
		{"user as served", "GET", "/api/v1/user", tok, "", user, user.Raw, ""},
		{"metadata members deeper", "GET", "/api/v1/user", tok, "", user, edit(user.Raw, func(m map[string]any) {
			userOf(m)["metadata"].(map[string]any)["new"] = map[string]any{"deep": []any{1, "two"}}
		}), ""},
		{"a field beside metadata", "GET", "/api/v1/user", tok, "", user, edit(user.Raw, func(m map[string]any) { userOf(m)["extra"] = 1 }), "extra"},
		{"a field at the top", "GET", "/api/v1/user", tok, "", user, edit(user.Raw, func(m map[string]any) { m["metadata"] = map[string]any{} }), "metadata"},
		{"metadata not an object", "GET", "/api/v1/user", tok, "", user, edit(user.Raw, func(m map[string]any) { userOf(m)["metadata"] = "plan" }), "metadata"},
		{"ceremony as served", "POST", "/api/v1/passkey/register/start", ts.Key, `{"email":"ceremony@example.com"}`, ceremony, ceremony.Raw, ""},
		{"options members", "POST", "/api/v1/passkey/register/start", ts.Key, `{"email":"ceremony@example.com"}`, ceremony, edit(ceremony.Raw, func(m map[string]any) {
			m["options"].(map[string]any)["anything"] = true
		}), ""},
		{"a field beside options", "POST", "/api/v1/passkey/register/start", ts.Key, `{"email":"ceremony@example.com"}`, ceremony, edit(ceremony.Raw, func(m map[string]any) { m["extra"] = "x" }), "extra"},
		{"options not an object", "POST", "/api/v1/passkey/register/start", ts.Key, `{"email":"ceremony@example.com"}`, ceremony, edit(ceremony.Raw, func(m map[string]any) { m["options"] = []any{} }), "options"},
		{"export as served", "GET", "/api/v1/admin/projects/" + ts.Project.ID + "/users/export", testAdminToken, "", export, export.Raw, ""},
		{"a field beside metadata in the export", "GET", "/api/v1/admin/projects/" + ts.Project.ID + "/users/export", testAdminToken, "", export,
			lines(last, func(m map[string]any) { m["extra"] = 1 }), "extra"},
		{"options in an export line", "GET", "/api/v1/admin/projects/" + ts.Project.ID + "/users/export", testAdminToken, "", export,
			lines(last, func(m map[string]any) { m["options"] = map[string]any{"a": 1} }), "options"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.reqBody))
			req.Header.Set("Authorization", "Bearer "+c.auth)
			if c.reqBody != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			res := &http.Response{StatusCode: c.res.Status, Header: c.res.Header.Clone(), Request: req, Body: io.NopCloser(bytes.NewReader(c.body))}
			res.Header.Del("Content-Length")
			problems := strings.Join(spec.check(req, []byte(c.reqBody), res, c.body), "\n")
			t.Logf("mismatches: %s", problems)
			switch {
			case c.want == "" && problems != "":
				t.Fatalf("mismatches where none are:\n%s", problems)
			case c.want != "" && !strings.Contains(problems, c.want):
				t.Fatalf("no mismatch naming %q; got %q for %s", c.want, problems, c.body)
			}
		})
	}
}

// checkOpaqueUndescribed fails t when the document describes the
// members of a property named metadata or options (opaqueMembers
// leaves them out of the check).
func checkOpaqueUndescribed(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	found := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for _, name := range []string{"metadata", "options"} {
					p, ok := props[name].(map[string]any)
					if !ok {
						continue
					}
					found++
					if ref, ok := p["$ref"].(string); ok {
						p = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
					}
					for _, k := range []string{"properties", "required", "patternProperties", "propertyNames", "allOf", "anyOf", "oneOf", "$ref", "maxProperties", "minProperties"} {
						if _, ok := p[k]; ok {
							t.Errorf("a property %s has %s: the OpenAPI check leaves its members out (opaqueMembers)", name, k)
						}
					}
					if a, ok := p["additionalProperties"]; ok && a != true {
						t.Errorf("a property %s has additionalProperties %v: the OpenAPI check leaves its members out (opaqueMembers)", name, a)
					}
				}
			}
			for _, m := range v {
				walk(m)
			}
		case []any:
			for _, m := range v {
				walk(m)
			}
		}
	}
	walk(doc)
	if found < 5 {
		t.Fatalf("%d properties named metadata or options, want the users' and the ceremony's", found)
	}
}
