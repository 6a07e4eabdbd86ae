package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"latchkey/store"
)

// User import and export (decisions.md §18), over real HTTP on the test
// backend.

func (ts *testServer) importUsers(projectID, contentType, body string) *response {
	ts.t.Helper()
	req, err := http.NewRequest("POST", ts.URL+"/api/v1/admin/projects/"+projectID+"/users/import", strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	req.Header.Set("Content-Type", contentType)
	return ts.send(req)
}

func (ts *testServer) exportUsers(projectID string) ([]map[string]any, *response) {
	ts.t.Helper()
	r := ts.admin("GET", "/api/v1/admin/projects/"+projectID+"/users/export", nil)
	if r.Status != 200 {
		return nil, r
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		ts.t.Fatalf("Content-Type=%q", ct)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(r.Raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			ts.t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out, r
}

func reportOf(t *testing.T, r *response) (created, updated int, rejected []map[string]any) {
	t.Helper()
	wantOK(t, r)
	for _, x := range r.Body["rejected"].([]any) {
		rejected = append(rejected, x.(map[string]any))
	}
	return int(r.Body["created"].(float64)), int(r.Body["updated"].(float64)), rejected
}

func (ts *testServer) outboxTypes() map[string]int {
	out := map[string]int{}
	ts.DB.View(ctx, func(tx store.Tx) error {
		evs, err := tx.EventsAfter(0, 1<<20)
		for _, e := range evs {
			out[e.Type]++
		}
		return err
	})
	return out
}

// TestImportUsers: created and updated counts, one bad line rejects only
// itself (with its line number), idempotent on email, no
// user.registered.
func TestImportUsers(t *testing.T) {
	ts := newTestServer(t)
	pid := ts.Project.ID
	body := strings.Join([]string{
		`{"email":"Ada@Example.com","externalUserId":"ext-1","firstName":"Ada","companyId":"c1","emailVerified":true,"createdAt":"2020-01-02T03:04:05Z"}`,
		`{"email":"bob@example.com"}`,
		`not json`,
		`{"email":"not an address"}`,
		``,
		`{"email":"carol@example.com","externalUserId":"ext-1"}`,
		`{"email":"dan@example.com","createdAt":"yesterday"}`,
		`{"email":"erin@example.com","emailVerified":"yes"}`,
		`{"firstName":"nobody"}`,
		`{"email":"bob@example.com","firstName":"Bob"}`,
		`{"email":"fay@example.com","firstName":"` + strings.Repeat("x", 101) + `"}`,
		`{"email":"gus@example.com","id":"ignored","factors":["totp"],"disabled":true}`,
	}, "\n") + "\n"
	before := ts.outboxTypes()["user.registered"]
	created, updated, rejected := reportOf(t, ts.importUsers(pid, "application/x-ndjson", body))
	if created != 3 || updated != 1 {
		t.Fatalf("created=%d updated=%d, want 3 and 1", created, updated)
	}
	var lines []string
	for _, r := range rejected {
		lines = append(lines, fmt.Sprintf("%v:%v", r["line"], r["error"]))
	}
	want := []string{
		"3:not a JSON object",
		"4:email is not a valid address",
		"6:externalUserId belongs to another user of the project",
		"7:createdAt must be an RFC 3339 time",
		"8:emailVerified has the wrong type",
		"9:email is required",
		"11:firstName must be 1 to 100 characters",
	}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("rejected=\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got := ts.outboxTypes()["user.registered"]; got != before {
		t.Fatalf("user.registered events %d → %d: imports emit none", before, got)
	}

	users, _ := ts.exportUsers(pid)
	byEmail := map[string]map[string]any{}
	for _, u := range users {
		byEmail[u["email"].(string)] = u
	}
	ada := byEmail["ada@example.com"]
	if ada == nil || ada["externalUserId"] != "ext-1" || ada["firstName"] != "Ada" || ada["companyId"] != "c1" ||
		ada["emailVerified"] != true || ada["createdAt"] != "2020-01-02T03:04:05.000Z" || ada["disabled"] != false {
		t.Fatalf("ada=%v", ada)
	}
	if bob := byEmail["bob@example.com"]; bob == nil || bob["firstName"] != "Bob" || bob["emailVerified"] != false || bob["externalUserId"] != nil {
		t.Fatalf("bob=%v", bob)
	}
	if gus := byEmail["gus@example.com"]; gus == nil || gus["disabled"] != false || gus["id"] == "ignored" {
		t.Fatalf("gus=%v: an import does not take id or disabled", gus)
	}

	// The same file again creates nothing; the good lines update.
	created, updated, rejected2 := reportOf(t, ts.importUsers(pid, "application/x-ndjson", body))
	if created != 0 || updated != 4 || len(rejected2) != len(rejected) {
		t.Fatalf("second import: created=%d updated=%d rejected=%d, want 0, 4, %d", created, updated, len(rejected2), len(rejected))
	}
	if users2, _ := ts.exportUsers(pid); len(users2) != len(users) {
		t.Fatalf("users after the second import=%d, want %d", len(users2), len(users))
	}

	// A last line without a newline, CRLF line ends, and an empty body.
	_, _, _ = reportOf(t, ts.importUsers(pid, "application/x-ndjson; charset=utf-8", "{\"email\":\"hal@example.com\"}\r\n{\"email\":\"ivy@example.com\"}"))
	if created, _, _ := reportOf(t, ts.importUsers(pid, "application/x-ndjson", "")); created != 0 {
		t.Fatalf("empty import created %d", created)
	}
	users3, _ := ts.exportUsers(pid)
	if len(users3) != len(users)+2 {
		t.Fatalf("users=%d, want %d", len(users3), len(users)+2)
	}

	wantError(t, ts.importUsers(pid, "application/json", body), 400, "VALIDATION_ERROR")
	wantError(t, ts.importUsers("nope", "application/x-ndjson", body), 404, "PROJECT_NOT_FOUND")
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/admin/projects/"+pid+"/users/import", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	wantError(t, ts.send(req), 401, "UNAUTHORIZED")
}

// TestImportChunks: an import of more lines than a transaction holds
// keeps counts and line numbers across chunks, a line over 64 KiB is
// rejected alone, and rejections found in a chunk's transaction come in
// line order among the others.
func TestImportChunks(t *testing.T) {
	ts := newTestServer(t)
	var b strings.Builder
	const n = 2500
	for i := 1; i <= n; i++ {
		switch i {
		case 10, 1999:
			b.WriteString("{bad\n")
		case 1500:
			// The externalUserId of line 1: refused in the transaction.
			fmt.Fprintf(&b, `{"email":"u%d@example.com","externalUserId":"x1"}`+"\n", i)
		case 1600:
			fmt.Fprintf(&b, `{"email":"u%d@example.com","firstName":"%s"}`+"\n", i, strings.Repeat("y", 70<<10))
		default:
			fmt.Fprintf(&b, `{"email":"u%d@example.com","externalUserId":"x%d"}`+"\n", i, i)
		}
	}
	created, updated, rejected := reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", b.String()))
	if created != n-4 || updated != 0 {
		t.Fatalf("created=%d updated=%d, want %d and 0", created, updated, n-4)
	}
	var lines []string
	for _, r := range rejected {
		lines = append(lines, fmt.Sprint(r["line"]))
	}
	if got := strings.Join(lines, ","); got != "10,1500,1600,1999" {
		t.Fatalf("rejected lines=%s, want 10,1500,1600,1999 (%v)", got, rejected)
	}
	users, _ := ts.exportUsers(ts.Project.ID)
	if len(users) != n-4 {
		t.Fatalf("exported %d users, want %d", len(users), n-4)
	}
	for i := 1; i < len(users); i++ {
		if users[i-1]["email"].(string) >= users[i]["email"].(string) {
			t.Fatalf("export not in address order at %d", i)
		}
	}
}

// TestExportUsers: every user, no secret, factors by name; the export of
// a project imports into another as it is.
func TestExportUsers(t *testing.T) {
	ts := newTestServer(t)
	pid := ts.Project.ID
	if users, r := ts.exportUsers(pid); r.Status != 200 || len(users) != 0 {
		t.Fatalf("empty project: status=%d users=%v", r.Status, users)
	}
	ts.login("ada@example.com")
	ts.login("bob@example.com")
	var ada *store.User
	ts.DB.Update(ctx, func(tx store.Tx) error {
		u, err := tx.UserByEmail(pid, "ada@example.com")
		if err != nil {
			return err
		}
		ada = u
		if err := tx.PutFactor(&store.Factor{UserID: u.ID, ProjectID: pid, Kind: "totp", Status: "enrolled", Secret: []byte("sealed")}); err != nil {
			return err
		}
		return tx.PutBackupCodes(&store.BackupCodes{UserID: u.ID})
	})
	users, _ := ts.exportUsers(pid)
	if len(users) != 2 {
		t.Fatalf("users=%v", users)
	}
	a := users[0]
	keys := []string{"companyId", "createdAt", "disabled", "email", "emailVerified", "externalUserId", "factors", "firstName", "id"}
	if len(a) != len(keys) {
		t.Fatalf("fields=%v, want exactly %v", a, keys)
	}
	if a["id"] != ada.ID || a["email"] != "ada@example.com" || a["emailVerified"] != true || fmt.Sprint(a["factors"]) != "[totp backup_codes]" {
		t.Fatalf("ada=%v", a)
	}
	if fmt.Sprint(users[1]["factors"]) != "[]" {
		t.Fatalf("bob factors=%v, want []", users[1]["factors"])
	}
	r := ts.admin("GET", "/api/v1/admin/projects/"+pid+"/users/export", nil)
	if strings.Contains(string(r.Raw), "sealed") || strings.Contains(string(r.Raw), "c2VhbGVk") {
		t.Fatalf("export shows a secret: %s", r.Raw)
	}

	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"})
	wantOK(t, other)
	oid := str(t, obj(t, other.Body, "project"), "id")
	created, _, rejected := reportOf(t, ts.importUsers(oid, "application/x-ndjson", string(r.Raw)))
	if created != 2 || len(rejected) != 0 {
		t.Fatalf("re-import: created=%d rejected=%v", created, rejected)
	}
	back, _ := ts.exportUsers(oid)
	if len(back) != 2 || back[0]["email"] != "ada@example.com" || back[0]["emailVerified"] != true || back[0]["createdAt"] != a["createdAt"] {
		t.Fatalf("re-imported=%v", back)
	}

	_, nf := ts.exportUsers("nope")
	wantError(t, nf, 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.do("GET", "/api/v1/admin/projects/"+pid+"/users/export", "", nil), 401, "UNAUTHORIZED")
}
