package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A user's groups and metadata, over real HTTP on the test backend: the
// operator sets them (PATCH /admin/users/:id, an import), every view of
// the user shows them, the user's own session cannot set them.

// userFields returns groups and metadata of a user object, as JSON text
// (so that [] and {} are told apart from null and absent).
func userFields(t *testing.T, u map[string]any) (groups, metadata string) {
	t.Helper()
	g, okG := u["groups"]
	m, okM := u["metadata"]
	if !okG || !okM {
		t.Fatalf("user without groups or metadata: %v", u)
	}
	gb, _ := json.Marshal(g)
	mb, _ := json.Marshal(m)
	return string(gb), string(mb)
}

// numbered returns r's body decoded with its numbers as written
// (json.Number), which userFields then shows as they were sent.
func numbered(t testing.TB, r *response) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Raw))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("body %s: %v", r.Raw, err)
	}
	return body
}

// adminUser returns the user with email as GET /admin/users shows it.
func (ts *testServer) adminUser(email string) map[string]any {
	ts.t.Helper()
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID+"&email="+email, nil)
	wantOK(ts.t, r)
	users := numbered(ts.t, r)["users"].([]any)
	if len(users) != 1 {
		ts.t.Fatalf("users with %s: %v", email, users)
	}
	return users[0].(map[string]any)
}

// TestAdminUserGroupsMetadata: PATCH /admin/users/:id sets groups and
// metadata, each field it is given and none other (the absent ones
// stay); null, [] and {} clear them; repeats are folded and the groups
// sorted; metadata is stored compact with its members sorted by name
// (numbers as written, a repeated member's last value); the admin list,
// the export, login results, GET /user and GET /me show them, [] and {}
// when none.
func TestAdminUserGroupsMetadata(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("ann@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	if g, m := userFields(t, obj(t, login.Body, "user")); g != "[]" || m != "{}" {
		t.Fatalf("a new user's login result: groups %s, metadata %s; want [] and {}", g, m)
	}
	patch := func(body string) map[string]any {
		t.Helper()
		r := ts.admin("PATCH", "/api/v1/admin/users/"+uid, body)
		wantOK(t, r)
		return obj(t, numbered(t, r), "user")
	}
	steps := []struct {
		name, body            string
		groups, meta, company string // as every view shows them after the step
	}{
		{"both", `{"groups":["staff","admins","staff"],"metadata":{"role": "admin", "seats": 12.50, "a": {"z":1,"b":[true,null]}}}`,
			`["admins","staff"]`, `{"a":{"b":[true,null],"z":1},"role":"admin","seats":12.50}`, "<nil>"},
		{"company alone keeps them", `{"companyId":"acme"}`,
			`["admins","staff"]`, `{"a":{"b":[true,null],"z":1},"role":"admin","seats":12.50}`, "acme"},
		{"groups alone", `{"groups":["ops.eu-1","a_b","9"]}`,
			`["9","a_b","ops.eu-1"]`, `{"a":{"b":[true,null],"z":1},"role":"admin","seats":12.50}`, "acme"},
		{"metadata alone, a repeated member", `{"metadata":{"role":"user","role":"owner","note":"<é>"}}`,
			`["9","a_b","ops.eu-1"]`, `{"note":"\u003cé\u003e","role":"owner"}`, "acme"},
		{"empty groups clear", `{"groups":[]}`, `[]`, `{"note":"\u003cé\u003e","role":"owner"}`, "acme"},
		{"empty metadata clears", `{"metadata":{}}`, `[]`, `{}`, "acme"},
		{"set again", `{"groups":["x"],"metadata":{"k":"v"}}`, `["x"]`, `{"k":"v"}`, "acme"},
		{"null clears all three", `{"groups":null,"metadata":null,"companyId":null}`, `[]`, `{}`, "<nil>"},
		{"set for the views", `{"groups":["admins"],"metadata":{"role":"admin"}}`, `["admins"]`, `{"role":"admin"}`, "<nil>"},
	}
	for _, s := range steps {
		u := patch(s.body)
		if g, m := userFields(t, u); g != s.groups || m != s.meta || fmt.Sprint(u["companyId"]) != s.company {
			t.Fatalf("%s: groups %s, metadata %s, companyId %v; want %s, %s, %s", s.name, g, m, u["companyId"], s.groups, s.meta, s.company)
		}
		if g, m := userFields(t, ts.adminUser("ann@example.com")); g != s.groups || m != s.meta {
			t.Fatalf("%s: the list shows groups %s, metadata %s; want %s, %s", s.name, g, m, s.groups, s.meta)
		}
	}
	const groups, meta = `["admins"]`, `{"role":"admin"}`
	views := map[string]map[string]any{
		"GET /user": obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user"),
		"GET /me":   obj(t, ts.do("GET", "/api/v1/me", tok, nil).Body, "user"),
		"login":     obj(t, ts.login("ann@example.com").Body, "user"),
	}
	lines, _ := ts.exportUsers(ts.Project.ID)
	views["export"] = lines[0]
	for name, u := range views {
		if g, m := userFields(t, u); g != groups || m != meta {
			t.Fatalf("%s: groups %s, metadata %s; want %s, %s", name, g, m, groups, meta)
		}
	}
}

// TestAdminUserGroupsMetadataLimits: the bounds are inclusive: 100
// different groups (more given, repeats folded), a group name of 64
// characters, metadata of exactly 4096 bytes as stored (the spaces sent
// do not count).
func TestAdminUserGroupsMetadataLimits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	uid := str(t, ts.login("ann@example.com").Body, "userId")
	var many []string
	for i := range 99 {
		many = append(many, fmt.Sprintf("g%03d", i), fmt.Sprintf("g%03d", i))
	}
	many = append(many, strings.Repeat("x", 64)) // 100 different
	groups, _ := json.Marshal(many)
	filler := strings.Repeat("m", 4096-len(`{"k":""}`))
	r := ts.admin("PATCH", "/api/v1/admin/users/"+uid, `{"groups":`+string(groups)+`, "metadata": {  "k" :  "`+filler+`"  }}`)
	wantOK(t, r)
	u := obj(t, r.Body, "user")
	if n := len(u["groups"].([]any)); n != 100 {
		t.Fatalf("%d groups, want 100", n)
	}
	if _, m := userFields(t, u); len(m) != 4096 {
		t.Fatalf("metadata of %d bytes, want 4096", len(m))
	}
}

// TestAdminUserPatchRefused: every invalid body is 400 VALIDATION_ERROR
// naming the field (or the fields the call takes), and changes nothing,
// the valid fields of the same body included; an unknown user is 404
// USER_NOT_FOUND.
func TestAdminUserPatchRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	uid := str(t, ts.login("ann@example.com").Body, "userId")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+uid, `{"companyId":"acme","groups":["staff"],"metadata":{"role":"admin"}}`))
	before := ts.adminUser("ann@example.com")
	var distinct []string
	for i := range 101 {
		distinct = append(distinct, fmt.Sprint("g", i))
	}
	many, _ := json.Marshal(distinct)
	big := `{"k":"` + strings.Repeat("m", 4096-len(`{"k":""}`)+1) + `"}`
	for _, c := range []struct{ name, body, says string }{
		{"nothing", `{}`, "at least one of companyId, groups and metadata"},
		{"unknown field", `{"group":["staff"]}`, `Unknown field "group": this call takes companyId, groups, metadata`},
		{"groups a string", `{"groups":"staff"}`, "groups must be an array of group names"},
		{"groups an object", `{"groups":{"a":1}}`, "groups must be an array of group names"},
		{"a group a number", `{"groups":["ok",7]}`, "groups must be an array of group names"},
		{"a group null", `{"groups":[null]}`, `groups[0] "" is not a group name`},
		{"capitals", `{"groups":["staff","Admins"]}`, `groups[1] "Admins" is not a group name`},
		{"empty name", `{"groups":[""]}`, `groups[0] "" is not a group name`},
		{"leading dash", `{"groups":["-x"]}`, `groups[0] "-x" is not a group name`},
		{"space", `{"groups":["a b"]}`, `groups[0] "a b" is not a group name`},
		{"not ASCII", `{"groups":["é"]}`, `is not a group name`},
		{"65 characters", `{"groups":["` + strings.Repeat("x", 65) + `"]}`, "is not a group name: 1 to 64 characters"},
		{"101 groups", `{"groups":` + string(many) + `}`, "groups has 101 different groups: at most 100"},
		{"metadata an array", `{"metadata":[1]}`, "metadata must be a JSON object"},
		{"metadata a string", `{"metadata":"{}"}`, "metadata must be a JSON object"},
		{"metadata a number", `{"metadata":5}`, "metadata must be a JSON object"},
		{"metadata too big", `{"metadata":` + big + `}`, "metadata takes 4097 bytes as compact JSON: at most 4096"},
		{"valid company, bad groups", `{"companyId":"other","groups":["Bad"]}`, `groups[0] "Bad" is not a group name`},
		{"valid groups, bad metadata", `{"groups":["new"],"metadata":true}`, "metadata must be a JSON object"},
		{"bad company, valid rest", `{"companyId":"","groups":["new"],"metadata":{"x":1}}`, "companyId must be 1 to 128 characters"},
	} {
		r := ts.admin("PATCH", "/api/v1/admin/users/"+uid, c.body)
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if len(r.Body) != 3 || !strings.Contains(r.Body["error"].(string), c.says) {
			t.Fatalf("%s: body %s, want the envelope saying %q", c.name, r.Raw, c.says)
		}
		after := ts.adminUser("ann@example.com")
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s changed the user:\n%v\nwas\n%v", c.name, after, before)
		}
	}
	wantError(t, ts.admin("PATCH", "/api/v1/admin/users/nobody", `{"groups":["a"]}`), http.StatusNotFound, "USER_NOT_FOUND")
}

// TestUserCannotSetGroupsOrMetadata: PATCH /user with groups or metadata,
// even null or beside a valid firstName, is 400 VALIDATION_ERROR naming
// the field, and changes nothing; the user still sees them (GET /user).
func TestUserCannotSetGroupsOrMetadata(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("ann@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+uid, `{"groups":["staff"],"metadata":{"plan":"free"}}`))
	for _, c := range []struct{ body, field string }{
		{`{"groups":["admins"]}`, "groups"},
		{`{"groups":null}`, "groups"},
		{`{"metadata":{"plan":"pro"}}`, "metadata"},
		{`{"metadata":null}`, "metadata"},
		{`{"firstName":"Ann","metadata":{"plan":"pro"}}`, "metadata"},
		{`{"firstName":"Ann","groups":[]}`, "groups"},
	} {
		r := ts.do("PATCH", "/api/v1/user", tok, c.body)
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if msg := r.Body["error"].(string); !strings.HasPrefix(msg, c.field+" cannot be changed from the user's session") || len(r.Body) != 3 {
			t.Fatalf("%s: body %s, want the envelope naming %s", c.body, r.Raw, c.field)
		}
	}
	u := obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user")
	if g, m := userFields(t, u); g != `["staff"]` || m != `{"plan":"free"}` || u["firstName"] != nil {
		t.Fatalf("after the refusals: %v", u)
	}
	// The first name alone still works, and keeps them.
	r := ts.do("PATCH", "/api/v1/user", tok, `{"firstName":"Ann"}`)
	wantOK(t, r)
	if g, m := userFields(t, obj(t, r.Body, "user")); g != `["staff"]` || m != `{"plan":"free"}` {
		t.Fatalf("PATCH /user {firstName}: groups %s, metadata %s", g, m)
	}
}

// TestImportExportGroupsMetadata: import lines carry groups and metadata
// under the PATCH rules (a line without them keeps the user's; [], {}
// and null clear them; a bad value rejects the line alone, naming the
// field); an export carries them ([] and {} when none), and importing it
// again into another project gives the same users.
func TestImportExportGroupsMetadata(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	r := ts.importUsers(pid, "application/x-ndjson", strings.Join([]string{
		`{"email":"ann@example.com","groups":["staff","admins","staff"],"metadata":{"role": "admin","seats":3}}`,
		`{"email":"bob@example.com","groups":["staff"]}`,
		`{"email":"cy@example.com"}`,
		`{"email":"dee@example.com","groups":["Staff"]}`,
		`{"email":"eve@example.com","metadata":["x"]}`,
		`{"email":"fay@example.com","groups":"staff"}`,
	}, "\n")+"\n")
	created, _, rejected := reportOf(t, r)
	if created != 3 || len(rejected) != 3 {
		t.Fatalf("created %d, rejected %v", created, rejected)
	}
	for i, want := range []string{`groups[0] "Staff" is not a group name`, "metadata must be a JSON object", "groups must be an array of group names"} {
		if rejected[i]["line"] != float64(4+i) || !strings.HasPrefix(rejected[i]["error"].(string), want) {
			t.Fatalf("rejected[%d] = %v, want line %d: %s", i, rejected[i], 4+i, want)
		}
	}
	want := map[string][2]string{
		"ann@example.com": {`["admins","staff"]`, `{"role":"admin","seats":3}`},
		"bob@example.com": {`["staff"]`, `{}`},
		"cy@example.com":  {`[]`, `{}`},
	}
	check := func(what, projectID string, want map[string][2]string) []map[string]any {
		t.Helper()
		lines, _ := ts.exportUsers(projectID)
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines exported, want %d", what, len(lines), len(want))
		}
		for _, l := range lines {
			g, m := userFields(t, l)
			if w := want[l["email"].(string)]; g != w[0] || m != w[1] {
				t.Fatalf("%s: %s exported with groups %s, metadata %s; want %s, %s", what, l["email"], g, m, w[0], w[1])
			}
		}
		return lines
	}
	lines := check("after the import", pid, want)

	// Again, over the same users: absent keeps, [] {} and null clear.
	_, updated, rejected := reportOf(t, ts.importUsers(pid, "application/x-ndjson", strings.Join([]string{
		`{"email":"ann@example.com","firstName":"Ann"}`,
		`{"email":"bob@example.com","groups":[],"metadata":{"k":1}}`,
		`{"email":"cy@example.com","groups":["ops"],"metadata":null}`,
	}, "\n")+"\n"))
	if updated != 3 || len(rejected) != 0 {
		t.Fatalf("updated %d, rejected %v", updated, rejected)
	}
	check("after the update", pid, map[string][2]string{
		"ann@example.com": want["ann@example.com"],
		"bob@example.com": {`[]`, `{"k":1}`},
		"cy@example.com":  {`["ops"]`, `{}`},
	})

	// The first export into another project: the same groups and
	// metadata.
	other := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"}).Body, "project"), "id")
	var file strings.Builder
	for _, l := range lines {
		b, _ := json.Marshal(l)
		file.Write(append(b, '\n'))
	}
	if created, _, rejected := reportOf(t, ts.importUsers(other, "application/x-ndjson", file.String())); created != 3 || len(rejected) != 0 {
		t.Fatalf("export imported elsewhere: created %d, rejected %v", created, rejected)
	}
	check("the export imported into another project", other, want)
}
