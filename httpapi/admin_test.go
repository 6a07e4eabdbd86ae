package httpapi_test

import (
	"bytes"
	"latchkey/internal/testkit"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latchkey/store"
	"latchkey/store/storetest"
)

func TestAdminUnauthorized(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, tok := range []string{"", "adm_wrongwrongwrongwrongwrong", ts.Key, "garbage"} {
		wantError(t, ts.do("GET", "/api/v1/admin/projects", tok, nil), 401, "UNAUTHORIZED")
	}
	wantError(t, ts.do("POST", "/api/v1/admin/projects", "", map[string]any{"name": "x"}), 401, "UNAUTHORIZED")
	// Nothing was created.
	r := ts.admin("GET", "/api/v1/admin/projects", nil)
	if n := len(r.Body["projects"].([]any)); n != 1 {
		t.Fatalf("projects=%d, want 1", n)
	}
}

func TestAdminProjects(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{
		"name": "Shop", "allowedOrigins": []string{"https://Shop.Example.com:443", "http://localhost:5173"},
		"sessionTtlSeconds": 3600, "denyCidrs": []string{"203.0.113.0/24", "198.51.100.7"},
	})
	wantOK(t, r)
	p := obj(t, r.Body, "project")
	id := str(t, p, "id")
	for _, f := range []string{"id", "name", "companyId", "allowedOrigins", "rpId", "sessionTtlSeconds", "rateLimitPerMinute", "denyCidrs", "createdAt"} {
		if _, ok := p[f]; !ok {
			t.Fatalf("project lacks %q: %s", f, r.Raw)
		}
	}
	if got := p["allowedOrigins"].([]any)[0]; got != "https://shop.example.com" {
		t.Fatalf("origin=%v, want canonical https://shop.example.com", got)
	}
	if got := p["rpId"]; got != "shop.example.com" {
		t.Fatalf("rpId=%v, want shop.example.com", got)
	}
	if got := p["rateLimitPerMinute"]; got != float64(100) {
		t.Fatalf("rateLimitPerMinute=%v, want 100", got)
	}
	if got := p["denyCidrs"].([]any)[1]; got != "198.51.100.7/32" {
		t.Fatalf("denyCidrs[1]=%v", got)
	}

	r = ts.admin("PATCH", "/api/v1/admin/projects/"+id, map[string]any{"name": "Shop 2", "companyId": "acme"})
	wantOK(t, r)
	if p := obj(t, r.Body, "project"); p["name"] != "Shop 2" || p["companyId"] != "acme" || p["sessionTtlSeconds"] != float64(3600) {
		t.Fatalf("after patch: %s", r.Raw)
	}
	wantOK(t, ts.admin("GET", "/api/v1/admin/projects/"+id, nil))
	r = ts.admin("GET", "/api/v1/admin/projects", nil)
	if n := len(r.Body["projects"].([]any)); n != 2 {
		t.Fatalf("projects=%d, want 2", n)
	}
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+id, nil))
	wantError(t, ts.admin("GET", "/api/v1/admin/projects/"+id, nil), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("DELETE", "/api/v1/admin/projects/"+id, nil), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("PATCH", "/api/v1/admin/projects/nope", map[string]any{"name": "x"}), 404, "PROJECT_NOT_FOUND")
}

func TestAdminProjectBadInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cases := []struct {
		name string
		body any
	}{
		{"no body", nil},
		{"garbage", "{not json"},
		{"array", "[1,2]"},
		{"two objects", `{"name":"a"}{"name":"b"}`},
		{"name wrong type", map[string]any{"name": 5}},
		{"empty name", map[string]any{"name": " "}},
		{"origin with path", map[string]any{"name": "a", "allowedOrigins": []string{"https://a.example/path"}}},
		{"origin with userinfo", map[string]any{"name": "a", "allowedOrigins": []string{"https://u@a.example"}}},
		{"origin scheme", map[string]any{"name": "a", "allowedOrigins": []string{"ftp://a.example"}}},
		{"origins wrong type", map[string]any{"name": "a", "allowedOrigins": "https://a.example"}},
		{"ttl too small", map[string]any{"name": "a", "sessionTtlSeconds": 10}},
		{"ttl too large", map[string]any{"name": "a", "sessionTtlSeconds": 7776001}},
		{"rate zero", map[string]any{"name": "a", "rateLimitPerMinute": 0}},
		{"bad cidr", map[string]any{"name": "a", "denyCidrs": []string{"10.0.0.0/33"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, ts.admin("POST", "/api/v1/admin/projects", c.body), 400, "VALIDATION_ERROR")
		})
	}
	r := ts.admin("GET", "/api/v1/admin/projects", nil)
	if n := len(r.Body["projects"].([]any)); n != 1 {
		t.Fatalf("projects=%d after bad input, want 1", n)
	}
}

func TestAdminKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("POST", "/api/v1/admin/keys", map[string]any{"projectId": ts.Project.ID, "mode": "live", "expiresAt": "2030-01-01T00:00:00Z"})
	wantOK(t, r)
	key := str(t, r.Body, "key")
	if len(key) != 49 || !strings.HasPrefix(key, "sk_live_") || key[16] != '_' {
		t.Fatalf("key %q is not sk_live_ + 8 + _ + 32", key)
	}
	ak := obj(t, r.Body, "apiKey")
	if ak["prefix"] != key[:16] || ak["projectId"] != ts.Project.ID || ak["mode"] != "live" || ak["revoked"] != false || ak["expiresAt"] != "2030-01-01T00:00:00.000Z" {
		t.Fatalf("apiKey=%v", ak)
	}
	wantOK(t, ts.do("GET", "/api/v1/me", key, nil))

	r = ts.admin("GET", "/api/v1/admin/keys?projectId="+ts.Project.ID, nil)
	wantOK(t, r)
	if n := len(r.Body["apiKeys"].([]any)); n != 2 {
		t.Fatalf("keys=%d, want 2", n)
	}
	if bytes.Contains(r.Raw, []byte(key)) || bytes.Contains(r.Raw, []byte(key[17:])) {
		t.Fatal("key list shows the key")
	}
	wantError(t, ts.admin("POST", "/api/v1/admin/keys/sk_test_NOPENOPE/revoke", nil), 404, "API_KEY_NOT_FOUND")
	for name, body := range map[string]any{
		"bad mode":        map[string]any{"projectId": ts.Project.ID, "mode": "prod"},
		"no mode":         map[string]any{"projectId": ts.Project.ID},
		"bad expiry":      map[string]any{"projectId": ts.Project.ID, "mode": "test", "expiresAt": "tomorrow"},
		"project type":    map[string]any{"projectId": 7, "mode": "test"},
		"malformed json":  `{"mode":`,
		"non-object body": `"test"`,
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.admin("POST", "/api/v1/admin/keys", body), 400, "VALIDATION_ERROR")
		})
	}
	wantError(t, ts.admin("POST", "/api/v1/admin/keys", map[string]any{"projectId": "unknown", "mode": "test"}), 404, "PROJECT_NOT_FOUND")
	r = ts.admin("GET", "/api/v1/admin/keys", nil)
	if n := len(r.Body["apiKeys"].([]any)); n != 2 {
		t.Fatalf("keys=%d after bad input, want 2", n)
	}
}

func TestDeletedProjectKeyIsProjectless(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+ts.Project.ID, nil))
	wantError(t, ts.do("GET", "/api/v1/me", ts.Key, nil), 401, "INVALID_API_KEY")
}

func TestAdminExternalMethods(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/external-methods", map[string]any{"method": "bank_id", "pattern": "direct"})
	wantOK(t, r)
	reg := obj(t, r.Body, "registration")
	if reg["status"] != "active" || reg["pattern"] != "direct" || reg["method"] != "bank_id" || len(str(t, reg, "secret")) != 64 {
		t.Fatalf("registration=%v", reg)
	}
	id := str(t, reg, "id")
	wantError(t, ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/external-methods", map[string]any{"method": "bank_id", "pattern": "direct"}), 409, "EXTERNAL_METHOD_EXISTS")
	r = ts.admin("PATCH", "/api/v1/admin/external-methods/"+id, map[string]any{"status": "inactive"})
	wantOK(t, r)
	reg = obj(t, r.Body, "registration")
	if reg["status"] != "inactive" {
		t.Fatalf("status=%v", reg["status"])
	}
	if _, has := reg["secret"]; has {
		t.Fatal("PATCH shows the secret")
	}
	wantError(t, ts.admin("PATCH", "/api/v1/admin/external-methods/"+id, map[string]any{"status": "paused"}), 400, "VALIDATION_ERROR")
	wantError(t, ts.admin("PATCH", "/api/v1/admin/external-methods/nope", map[string]any{"status": "active"}), 404, "EXTERNAL_METHOD_NOT_FOUND")
	wantError(t, ts.admin("POST", "/api/v1/admin/projects/nope/external-methods", map[string]any{"method": "x", "pattern": "direct"}), 404, "PROJECT_NOT_FOUND")
	for _, body := range []map[string]any{{"method": "Bad Name", "pattern": "direct"}, {"method": "ok", "pattern": "carrier-pigeon"}, {"pattern": "direct"}} {
		wantError(t, ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/external-methods", body), 400, "VALIDATION_ERROR")
	}
}

func TestAdminUsersAndEvents(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantError(t, ts.admin("GET", "/api/v1/admin/users", nil), 400, "VALIDATION_ERROR")
	wantError(t, ts.admin("GET", "/api/v1/admin/users?projectId=nope", nil), 404, "PROJECT_NOT_FOUND")
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	wantOK(t, r)
	if n := len(r.Body["users"].([]any)); n != 0 {
		t.Fatalf("users=%d, want 0", n)
	}
	wantError(t, ts.admin("POST", "/api/v1/admin/users/nope/disable", nil), 404, "USER_NOT_FOUND")
	wantError(t, ts.admin("POST", "/api/v1/admin/users/nope/enable", nil), 404, "USER_NOT_FOUND")
	wantError(t, ts.admin("PATCH", "/api/v1/admin/users/nope", map[string]any{"companyId": "x"}), 404, "USER_NOT_FOUND")
	r = ts.admin("GET", "/api/v1/admin/events", nil)
	wantOK(t, r)
	if n := len(r.Body["events"].([]any)); n != 0 {
		t.Fatalf("events=%d, want 0", n)
	}
	wantError(t, ts.admin("GET", "/api/v1/admin/events?limit=-3", nil), 400, "VALIDATION_ERROR")
}

// TestAdminBackup: the backup is a data file that opens and checks
// (bbolt only: on PostgreSQL the endpoint answers 501, pg_dump backs it
// up).
func TestAdminBackup(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Bolt {
		t.Skip("a backup is a bbolt data file")
	}
	ts := newTestServer(t)
	r := ts.admin("GET", "/api/v1/admin/backup", nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("status=%d type=%q", r.Status, r.Header.Get("Content-Type"))
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, r.Raw, 0o600); err != nil {
		t.Fatal(err)
	}
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.(store.File).Check(); err != nil {
		t.Fatal(err)
	}
	var n int
	db.View(ctx, func(tx store.Tx) error {
		ps, _ := tx.Projects()
		n = len(ps)
		return nil
	})
	if n != 1 {
		t.Fatalf("backup has %d projects, want 1", n)
	}
}

// TestAdminBackupHoldsEveryRecord: a backup of a data file holding the
// fixture (every kind of record a copy carries, mail templates included,
// every field set) holds every one of them: its records are the live
// file's and the fixture's, kind by kind and count by count.
func TestAdminBackupHoldsEveryRecord(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Bolt {
		t.Skip("a backup is a bbolt data file (TestAdminBackupNotSupported runs on the postgres pass)")
	}
	path := storetest.New(t)
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := storetest.Normalize(t, storetest.WriteFixture(t, db))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, Clock: newClock(), dsn: path}
	ts.start()

	r := ts.admin("GET", "/api/v1/admin/backup", nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("status=%d type=%q", r.Status, r.Header.Get("Content-Type"))
	}
	copyPath := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(copyPath, r.Raw, 0o600); err != nil {
		t.Fatal(err)
	}
	backup, _, err := store.Open(ctx, copyPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer backup.Close()
	if err := backup.(store.File).Check(); err != nil {
		t.Fatal(err)
	}
	got := storetest.Records(t, backup)
	storetest.SameRecords(t, "the backup", got, storetest.Records(t, ts.DB))
	storetest.SameRecords(t, "the backup", got, want)
	if n := len(got["Template"]); n != 4 {
		t.Errorf("the backup holds %d templates, want the fixture's 4 (three mail templates, one locale's page texts)", n)
	}
}

// TestAdminBackupNotSupported: on PostgreSQL the backup is pg_dump's
// job: 501 NOT_SUPPORTED, saying so.
func TestAdminBackupNotSupported(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("bbolt answers a backup (TestAdminBackup); this test runs on the postgres pass")
	}
	ts := newTestServer(t)
	r := ts.admin("GET", "/api/v1/admin/backup", nil)
	wantError(t, r, 501, "NOT_SUPPORTED")
	if msg, _ := r.Body["error"].(string); !strings.Contains(msg, "pg_dump") {
		t.Fatalf("error %q does not name pg_dump", msg)
	}
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks the router and the body limit")
	ts := newTestServer(t)
	for _, path := range []string{"/api/v1/nope", "/nope", "/", "/api/v1", "/api/v1/health/", "/api/v2/health", "/api/v1/admin/nope"} {
		r := ts.do("GET", path, "", nil)
		wantError(t, r, 404, "NOT_FOUND")
		if r.Body["error"] != "Not found" || len(r.Body) != 3 {
			t.Fatalf("GET %s: body %s, want exactly {success:false, error:\"Not found\", code:\"NOT_FOUND\"}", path, r.Raw)
		}
	}
	// Allow lists the served methods: OPTIONS only where browsers call
	// (CORS preflights), not on API-key or admin routes.
	r := ts.do("PUT", "/api/v1/user", "", nil)
	wantError(t, r, 405, "METHOD_NOT_ALLOWED")
	if allow := r.Header.Get("Allow"); allow != "DELETE, GET, OPTIONS, PATCH" {
		t.Fatalf("Allow=%q, want DELETE, GET, OPTIONS, PATCH", allow)
	}
	r = ts.do("PUT", "/api/v1/otp/send", "", nil)
	wantError(t, r, 405, "METHOD_NOT_ALLOWED")
	if allow := r.Header.Get("Allow"); allow != "POST" {
		t.Fatalf("Allow=%q, want POST", allow)
	}
	wantError(t, ts.do("DELETE", "/api/v1/health", "", nil), 405, "METHOD_NOT_ALLOWED")
	wantError(t, ts.do("POST", "/api/v1/admin/keys/x/revoke/", testAdminToken, nil), 404, "NOT_FOUND")
	big := `{"name":"` + strings.Repeat("a", 70<<10) + `"}`
	wantError(t, ts.admin("POST", "/api/v1/admin/projects", big), 413, "PAYLOAD_TOO_LARGE")
	r = ts.do("GET", "/api/v1/health", "", nil)
	wantOK(t, r)
	if r.Body["status"] != "ok" {
		t.Fatalf("health=%s", r.Raw)
	}
	_ = http.MethodGet
}

// TestBodies: a request body must be one JSON object of at most 64 KiB;
// unknown fields are ignored by the public API and refused by the admin
// API (TestAdminBodiesStrict covers every admin route). Checked on an
// API-key and an admin route.
func TestBodies(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, body := range []string{`{"email":`, `null`, `[]`, `"a@example.com"`, `5`, `true`, `{"email":"a@example.com"} {}`, "\xff"} {
		wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, body), 400, "VALIDATION_ERROR")
		wantError(t, ts.admin("POST", "/api/v1/admin/projects", body), 400, "VALIDATION_ERROR")
	}
	big := `{"email":"a@example.com","pad":"` + strings.Repeat("a", 64<<10) + `"}`
	wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, big), 413, "PAYLOAD_TOO_LARGE")
	if ts.mailCount() != 0 {
		t.Fatal("a refused body sent mail")
	}
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, `{"email":"a@example.com","unknown":{"x":[1,2]}}`))
	wantError(t, ts.admin("POST", "/api/v1/admin/projects", `{"name":"extra","colour":"blue"}`), 400, "VALIDATION_ERROR")
}

// fields fails unless m has every name in want.
func fields(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	for _, f := range want {
		if _, ok := m[f]; !ok {
			t.Fatalf("%s lacks %q: %v", what, f, m)
		}
	}
}

func TestAdminUsersListPatchDisable(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ada := str(t, ts.login("ada@example.com").Body, "userId")
	ts.login("adam@example.com")
	ts.login("bob@example.com")
	list := func(query string) []any {
		t.Helper()
		r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID+query, nil)
		wantOK(t, r)
		return r.Body["users"].([]any)
	}
	users := list("")
	if len(users) != 3 {
		t.Fatalf("users=%d, want 3", len(users))
	}
	u := users[0].(map[string]any)
	fields(t, "user", u, "id", "email", "externalUserId", "disabled", "createdAt")
	if u["externalUserId"] != nil || u["disabled"] != false {
		t.Fatalf("user=%v", u)
	}
	for query, want := range map[string]int{"&email=ADA@example.com": 1, "&email=ad": 2, "&email=ada@": 1, "&email=ada@example": 1, "&email=nobody@example.com": 0, "&limit=1": 1} {
		if got := len(list(query)); got != want {
			t.Errorf("users%s=%d, want %d", query, got, want)
		}
	}
	wantError(t, ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID+"&limit=x", nil), 400, "VALIDATION_ERROR")

	path := "/api/v1/admin/users/" + ada
	r := ts.admin("PATCH", path, map[string]any{"companyId": "acme"})
	wantOK(t, r)
	if got := obj(t, r.Body, "user"); got["companyId"] != "acme" || got["id"] != ada {
		t.Fatalf("user=%v", got)
	}
	for name, body := range map[string]any{
		"no body": nil, "empty object": map[string]any{}, "number": map[string]any{"companyId": 7},
		"empty string": map[string]any{"companyId": ""}, "garbage": "{", "array": "[]",
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.admin("PATCH", path, body), 400, "VALIDATION_ERROR")
		})
	}
	// The refused bodies changed nothing; a login now reports the company.
	if got := str(t, ts.login("ada@example.com").Body, "companyId"); got != "acme" {
		t.Fatalf("companyId=%q after bad PATCHes, want acme", got)
	}
	r = ts.admin("PATCH", path, map[string]any{"companyId": nil})
	wantOK(t, r)
	if got := obj(t, r.Body, "user")["companyId"]; got != nil {
		t.Fatalf("companyId=%v after null, want null", got)
	}

	wantOK(t, ts.admin("POST", path+"/disable", nil))
	if got := list("&email=ada@example.com")[0].(map[string]any)["disabled"]; got != true {
		t.Fatalf("disabled=%v after disable", got)
	}
	wantOK(t, ts.admin("POST", path+"/disable", nil)) // idempotent
	wantOK(t, ts.admin("POST", path+"/enable", nil))
	if got := list("&email=ada@example.com")[0].(map[string]any)["disabled"]; got != false {
		t.Fatalf("disabled=%v after enable", got)
	}
	wantError(t, ts.admin("PUT", path, map[string]any{"companyId": "x"}), 405, "METHOD_NOT_ALLOWED")
	wantError(t, ts.do("POST", path+"/disable", "", nil), 401, "UNAUTHORIZED")
}

func TestAdminEventsFilters(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.login("ada@example.com") // send + verify: two successes
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "ada@example.com"}))
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "ada@example.com", "code": "000000"}), 401, "INVALID_CODE")
	events := func(query string) []any {
		t.Helper()
		r := ts.admin("GET", "/api/v1/admin/events"+query, nil)
		wantOK(t, r)
		return r.Body["events"].([]any)
	}
	all := events("")
	if len(all) != 4 {
		t.Fatalf("events=%d, want 4", len(all))
	}
	newest := all[0].(map[string]any)
	fields(t, "event", newest, "id", "projectId", "userId", "email", "method", "action", "success", "failureCode", "ip", "userAgent", "createdAt")
	if newest["success"] != false || newest["failureCode"] != "invalid_code" {
		t.Fatalf("newest event=%v, want the failed verify", newest)
	}
	for query, want := range map[string]int{
		"?failureCode=invalid_code": 1, "?failureCode=expired": 0, "?limit=2": 2,
		"?projectId=" + ts.Project.ID: 4, "?projectId=other": 0,
	} {
		if got := len(events(query)); got != want {
			t.Errorf("events%s=%d, want %d", query, got, want)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?limit=1.5"} {
		wantError(t, ts.admin("GET", "/api/v1/admin/events"+q, nil), 400, "VALIDATION_ERROR")
	}
}

func TestAdminKeyShapesAndRevoke(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	// projectId omitted or null: a projectless key; expiresAt in the past
	// is allowed (the key is simply expired).
	for name, body := range map[string]map[string]any{
		"omitted": {"mode": "test"},
		"null":    {"mode": "live", "projectId": nil, "expiresAt": "2020-01-01T00:00:00+02:00"},
	} {
		t.Run(name, func(t *testing.T) {
			r := ts.admin("POST", "/api/v1/admin/keys", body)
			wantOK(t, r)
			ak := obj(t, r.Body, "apiKey")
			fields(t, "apiKey", ak, "prefix", "projectId", "mode", "expiresAt", "revoked", "createdAt")
			if ak["projectId"] != nil || ak["mode"] != body["mode"] || ak["revoked"] != false {
				t.Fatalf("apiKey=%v", ak)
			}
			if name == "null" && ak["expiresAt"] != "2019-12-31T22:00:00.000Z" {
				t.Fatalf("expiresAt=%v, want it in UTC", ak["expiresAt"])
			}
			if _, has := ak["hash"]; has {
				t.Fatal("apiKey shows the hash")
			}
		})
	}
	r := ts.admin("GET", "/api/v1/admin/keys", nil)
	wantOK(t, r)
	if n := len(r.Body["apiKeys"].([]any)); n != 3 {
		t.Fatalf("keys=%d, want 3", n)
	}
	if bytes.Contains(r.Raw, []byte(ts.Key)) || bytes.Contains(r.Raw, []byte(`"hash"`)) {
		t.Fatal("key list shows a key or its hash")
	}
	r = ts.admin("GET", "/api/v1/admin/keys?projectId="+ts.Project.ID, nil)
	if n := len(r.Body["apiKeys"].([]any)); n != 1 {
		t.Fatalf("project keys=%d, want 1", n)
	}

	wantOK(t, ts.admin("POST", "/api/v1/admin/keys/"+ts.Key[:16]+"/revoke", nil))
	wantOK(t, ts.admin("POST", "/api/v1/admin/keys/"+ts.Key[:16]+"/revoke", nil)) // idempotent
	wantError(t, ts.do("GET", "/api/v1/me", ts.Key, nil), 401, "API_KEY_REVOKED")
	r = ts.admin("GET", "/api/v1/admin/keys?projectId="+ts.Project.ID, nil)
	if got := r.Body["apiKeys"].([]any)[0].(map[string]any)["revoked"]; got != true {
		t.Fatalf("revoked=%v in the list", got)
	}
	wantError(t, ts.admin("GET", "/api/v1/admin/keys/"+ts.Key[:16]+"/revoke", nil), 405, "METHOD_NOT_ALLOWED")
	wantError(t, ts.do("POST", "/api/v1/admin/keys/"+ts.Key[:16]+"/revoke", ts.Key, nil), 401, "UNAUTHORIZED")
}
