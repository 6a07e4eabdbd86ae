package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/httpapi"
	"latchkey/internal/testkit"
	"latchkey/store"
)

// User import and export, over real HTTP on the test
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

// reportOf returns an import's report; under the cap of listed
// rejections, rejectedCount must count exactly the lines listed.
func reportOf(t *testing.T, r *response) (created, updated int, rejected []map[string]any) {
	t.Helper()
	wantOK(t, r)
	for _, x := range r.Body["rejected"].([]any) {
		rejected = append(rejected, x.(map[string]any))
	}
	if len(rejected) < auth.MaxImportRejected && (r.Body["rejectedCount"] != float64(len(rejected)) || r.Body["rejectedTruncated"] != false) {
		t.Fatalf("%d rejected lines listed, rejectedCount=%v rejectedTruncated=%v", len(rejected), r.Body["rejectedCount"], r.Body["rejectedTruncated"])
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	keys := []string{"companyId", "createdAt", "disabled", "email", "emailVerified", "externalUserId", "factors", "firstName", "groups", "id", "metadata"}
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

// TestImportConcurrent: four imports of the same 2,500 users into one
// project at once, two of them in reverse order, so their chunks write
// the same rows in opposite orders. Each answers 200 with every line
// created or updated (none rejected: an address always comes with the
// same externalUserId), and the project ends with each user once. On
// PostgreSQL the chunks once deadlocked (40P01) until the retry limit
// and answered 500.
func TestImportConcurrent(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const n = 2500
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"email":"c%04d@example.com","externalUserId":"ext-%04d","firstName":"C%d"}`, i, i, i)
	}
	forward := strings.Join(lines, "\n") + "\n"
	slices.Reverse(lines)
	backward := strings.Join(lines, "\n") + "\n"
	var wg sync.WaitGroup
	reports := make([]*response, 4)
	for i := range reports {
		body := forward
		if i%2 == 1 {
			body = backward
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i] = ts.importUsers(ts.Project.ID, "application/x-ndjson", body)
		}()
	}
	wg.Wait()
	total := 0
	for i, r := range reports {
		created, updated, rejected := reportOf(t, r)
		if created+updated != n || len(rejected) != 0 {
			t.Fatalf("import %d: created %d, updated %d, rejected %v; want %d lines written", i, created, updated, rejected, n)
		}
		total += created
	}
	if total != n {
		t.Fatalf("%d users created by the four imports, want %d", total, n)
	}
	users, _ := ts.exportUsers(ts.Project.ID)
	if len(users) != n {
		t.Fatalf("exported %d users, want %d", len(users), n)
	}
	for i, u := range users {
		if u["email"] != fmt.Sprintf("c%04d@example.com", i) || u["externalUserId"] != fmt.Sprintf("ext-%04d", i) {
			t.Fatalf("user %d = %v", i, u)
		}
	}
}

// TestImportRejectedCap: the report lists the first 1,000 rejected
// lines, in line order, and counts them all. Lines refused in a chunk's
// transaction (an externalUserId another user has) come before lines
// refused at reading that are listed already: the list keeps the first
// ones by line number, not the first found.
func TestImportRejectedCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var b strings.Builder
	const n = 3000
	b.WriteString(`{"email":"owner@example.com","externalUserId":"taken"}` + "\n")
	for i := 2; i <= n; i++ {
		if i%3 == 0 {
			// Valid, refused in the transaction: "taken" is line 1's.
			fmt.Fprintf(&b, `{"email":"u%d@example.com","externalUserId":"taken"}`+"\n", i)
		} else {
			b.WriteString("{bad\n")
		}
	}
	r := ts.importUsers(ts.Project.ID, "application/x-ndjson", b.String())
	created, updated, rejected := reportOf(t, r)
	if created != 1 || updated != 0 {
		t.Fatalf("created=%d updated=%d, want 1 and 0", created, updated)
	}
	if got, want := r.Body["rejectedCount"], float64(n-1); got != want {
		t.Fatalf("rejectedCount=%v, want %v", got, want)
	}
	if r.Body["rejectedTruncated"] != true {
		t.Fatalf("rejectedTruncated=%v, want true", r.Body["rejectedTruncated"])
	}
	if len(rejected) != auth.MaxImportRejected {
		t.Fatalf("%d rejected lines listed, want %d", len(rejected), auth.MaxImportRejected)
	}
	for i, x := range rejected {
		line := i + 2 // every line from 2 on is rejected
		want := "not a JSON object"
		if line%3 == 0 {
			want = "externalUserId belongs to another user of the project"
		}
		if x["line"] != float64(line) || x["error"] != want {
			t.Fatalf("rejected[%d]=%v, want line %d: %s", i, x, line, want)
		}
	}
}

// lineSource is an io.Reader of n import lines of exactly size bytes
// each (newline included), generated as they are read: a body larger
// than a test should hold in memory. Line i is a valid user
// big<i>@example.com padded with a field the import ignores.
type lineSource struct {
	n, size, i int
	line       []byte
	rest       []byte
}

func (s *lineSource) Read(p []byte) (int, error) {
	if len(s.rest) == 0 {
		if s.i == s.n {
			return 0, io.EOF
		}
		s.i++
		head := fmt.Sprintf(`{"email":"big%07d@example.com","pad":"`, s.i)
		if s.line == nil {
			s.line = bytes.Repeat([]byte("x"), s.size)
			copy(s.line[s.size-3:], "\"}\n")
		}
		copy(s.line, head)
		s.rest = s.line
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

// TestImportOverLimit streams an import body of more than 64 MiB
// without a length (chunked, as a pipe into the CLI sends it): the
// server reads it as it arrives, and at the limit answers 413
// PAYLOAD_TOO_LARGE with the error envelope and no report. What was
// committed before stays: every full chunk of ImportChunk accepted
// lines; the accepted lines read since the last commit are not
// written. A Content-Length over the limit is refused before the body
// is read.
func TestImportOverLimit(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "streams past the body limit (each engine's chunk commits: TestImportChunks)")
	if testing.Short() {
		t.Skip("streams 64 MiB")
	}
	ts := newTestServer(t)
	const size = 64000
	whole := httpapi.MaxImportBytes / size // lines that end within the limit
	src := &lineSource{n: whole + 2, size: size}
	if total := src.n * size; total <= httpapi.MaxImportBytes {
		t.Fatalf("the body is %d bytes: not over the limit", total)
	}
	req, err := http.NewRequest("POST", ts.URL+"/api/v1/admin/projects/"+ts.Project.ID+"/users/import", src)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	req.Header.Set("Content-Type", "application/x-ndjson")
	r := ts.send(req)
	wantError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	if r.Body["error"] != "Import body is larger than 64 MiB: split the file." || r.Body["created"] != nil {
		t.Fatalf("body=%s, want the envelope alone", r.Raw)
	}
	if src.i <= whole {
		t.Fatalf("the client sent %d lines, want more than the %d within the limit", src.i, whole)
	}

	users, _ := ts.exportUsers(ts.Project.ID)
	committed := whole / auth.ImportChunk * auth.ImportChunk
	if whole <= committed {
		t.Fatalf("%d lines within the limit: the test wants accepted lines after the last full chunk", whole)
	}
	if len(users) != committed {
		t.Fatalf("%d users after the refused import, want the %d of the committed chunks (of %d valid lines read)", len(users), committed, whole)
	}
	for i, u := range users {
		if want := fmt.Sprintf("big%07d@example.com", i+1); u["email"] != want {
			t.Fatalf("user %d is %v, want %s", i, u["email"], want)
		}
	}

	// A declared length over the limit: refused on the headers alone.
	status, env, raw := rawImport(t, ts, httpapi.MaxImportBytes+1, "")
	if status != http.StatusRequestEntityTooLarge || env["code"] != "PAYLOAD_TOO_LARGE" || env["success"] != false {
		t.Fatalf("Content-Length over the limit: %d %s", status, raw)
	}
	if users, _ := ts.exportUsers(ts.Project.ID); len(users) != committed {
		t.Fatalf("%d users, want %d", len(users), committed)
	}
}

// TestImportCutShort: a client that announces a length and stops
// sending before it (here: half-closes the connection) gets 400
// VALIDATION_ERROR with the envelope and no report, not a 500. What was
// committed before stays: the full chunk of ImportChunk lines, not the
// lines read after it.
func TestImportCutShort(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var body strings.Builder
	sent := auth.ImportChunk + auth.ImportChunk/5
	for i := range sent {
		fmt.Fprintf(&body, `{"email":"cut%05d@example.com"}`+"\n", i+1)
	}
	status, env, raw := rawImport(t, ts, body.Len()+1000, body.String())
	if msg, _ := env["error"].(string); status != http.StatusBadRequest || env["code"] != "VALIDATION_ERROR" ||
		env["success"] != false || env["created"] != nil || !strings.HasPrefix(msg, "Import body ended before its end") {
		t.Fatalf("import cut short: %d %s", status, raw)
	}
	users, _ := ts.exportUsers(ts.Project.ID)
	if len(users) != auth.ImportChunk {
		t.Fatalf("%d users after the cut import, want the %d of the committed chunk (of %d lines sent)", len(users), auth.ImportChunk, sent)
	}
}

// rawImport sends an import request by hand on its own connection,
// announcing length bytes of body but sending only body, then closes its
// side for writing; it returns the answer's status and JSON envelope.
func rawImport(t *testing.T, ts *testServer, length int, body string) (int, map[string]any, []byte) {
	t.Helper()
	host := strings.TrimPrefix(ts.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/admin/projects/%s/users/import HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s", ts.Project.ID, host, testAdminToken, length, body)
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("answer %d is not JSON: %s", res.StatusCode, raw)
	}
	return res.StatusCode, env, raw
}
