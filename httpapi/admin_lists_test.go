package httpapi_test

import (
	"slices"
	"strings"
	"testing"
)

// TestAdminProjectWebhooks: GET /admin/projects/:id/webhooks lists the
// project's webhooks of both modes, oldest first, without secrets; an
// unknown project is 404 PROJECT_NOT_FOUND.
func TestAdminProjectWebhooks(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	r := ts.admin("GET", "/api/v1/admin/projects/"+pid+"/webhooks", nil)
	wantOK(t, r)
	if got := r.Body["webhooks"].([]any); len(got) != 0 {
		t.Fatalf("webhooks=%v, want []", got)
	}

	test := ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:9/a", "eventTypes": []string{"user.registered"}})
	wantOK(t, test)
	ts.Clock.Advance(1)
	live := ts.createKey(map[string]any{"projectId": pid, "mode": "live"})
	wantOK(t, ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": "https://93.184.216.34/b"}))
	// Another project's webhook is not listed.
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	wantOK(t, other)
	otherID := str(t, obj(t, other.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherID, "mode": "test"})
	wantOK(t, ts.do("POST", "/api/v1/webhooks", otherKey, map[string]any{"url": "http://127.0.0.1:9/c"}))

	r = ts.admin("GET", "/api/v1/admin/projects/"+pid+"/webhooks", nil)
	wantOK(t, r)
	hooks := r.Body["webhooks"].([]any)
	if len(hooks) != 2 {
		t.Fatalf("%d webhooks, want 2: %s", len(hooks), r.Raw)
	}
	first, second := hooks[0].(map[string]any), hooks[1].(map[string]any)
	var keys []string
	for k := range first {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if got := strings.Join(keys, ","); got != "createdAt,eventTypes,id,mode,projectId,url" {
		t.Fatalf("webhook keys=%s, want createdAt,eventTypes,id,mode,projectId,url", got)
	}
	if first["id"] != obj(t, test.Body, "webhook")["id"] || first["mode"] != "test" || first["url"] != "http://127.0.0.1:9/a" ||
		first["projectId"] != pid || first["eventTypes"].([]any)[0] != "user.registered" {
		t.Fatalf("first=%v", first)
	}
	if second["mode"] != "live" || second["eventTypes"] != nil || second["url"] != "https://93.184.216.34/b" {
		t.Fatalf("second=%v", second)
	}
	secret := str(t, obj(t, test.Body, "webhook"), "secret")
	if strings.Contains(string(r.Raw), secret) {
		t.Fatal("the admin list shows a webhook secret")
	}

	wantError(t, ts.admin("GET", "/api/v1/admin/projects/nope/webhooks", nil), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.do("GET", "/api/v1/admin/projects/"+pid+"/webhooks", ts.Key, nil), 401, "UNAUTHORIZED")
}

// TestAdminProjectMethods: GET /admin/projects/:id/external-methods lists
// the project's registrations, oldest first, without secrets; an unknown
// project is 404 PROJECT_NOT_FOUND.
func TestAdminProjectMethods(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	r := ts.admin("GET", "/api/v1/admin/projects/"+pid+"/external-methods", nil)
	wantOK(t, r)
	if got := r.Body["registrations"].([]any); len(got) != 0 {
		t.Fatalf("registrations=%v, want []", got)
	}
	a := ts.admin("POST", "/api/v1/admin/projects/"+pid+"/external-methods", map[string]any{"method": "bank_id", "pattern": "direct"})
	wantOK(t, a)
	ts.Clock.Advance(1)
	b := ts.admin("POST", "/api/v1/admin/projects/"+pid+"/external-methods", map[string]any{"method": "card", "pattern": "webhook"})
	wantOK(t, b)
	bID := str(t, obj(t, b.Body, "registration"), "id")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/external-methods/"+bID, map[string]any{"status": "inactive"}))
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherID := str(t, obj(t, other.Body, "project"), "id")
	wantOK(t, ts.admin("POST", "/api/v1/admin/projects/"+otherID+"/external-methods", map[string]any{"method": "elsewhere", "pattern": "direct"}))

	r = ts.admin("GET", "/api/v1/admin/projects/"+pid+"/external-methods", nil)
	wantOK(t, r)
	regs := r.Body["registrations"].([]any)
	if len(regs) != 2 {
		t.Fatalf("%d registrations, want 2: %s", len(regs), r.Raw)
	}
	first, second := regs[0].(map[string]any), regs[1].(map[string]any)
	if first["method"] != "bank_id" || first["pattern"] != "direct" || first["status"] != "active" || first["projectId"] != pid ||
		first["id"] != obj(t, a.Body, "registration")["id"] {
		t.Fatalf("first=%v", first)
	}
	if second["method"] != "card" || second["pattern"] != "webhook" || second["status"] != "inactive" {
		t.Fatalf("second=%v", second)
	}
	for _, reg := range regs {
		if _, has := reg.(map[string]any)["secret"]; has {
			t.Fatalf("registration %v carries its secret", reg)
		}
	}
	wantError(t, ts.admin("GET", "/api/v1/admin/projects/nope/external-methods", nil), 404, "PROJECT_NOT_FOUND")
}

// TestAdminDeleteUser: DELETE /admin/users/:id deletes the user with
// everything that is theirs, as DELETE /user does: the session token is
// refused, backup codes are gone, user.deleted is emitted (after
// session.revoked), and the address signs up anew. Unknown ids are 404.
func TestAdminDeleteUser(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("gone@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	codes := ts.backupCodes(tok)
	keep := ts.login("kept@example.com")
	n := len(ts.outbox())

	r := ts.admin("DELETE", "/api/v1/admin/users/"+uid, nil)
	wantOK(t, r)
	if len(r.Body) != 1 {
		t.Fatalf("body=%s, want {success:true}", r.Raw)
	}
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, keep.Body, "token"), nil))
	evs := ts.outboxSince(n)
	if len(evs) != 2 || evs[0].Type != "session.revoked" || evs[1].Type != "user.deleted" || evs[1].Data["user_id"] != uid {
		t.Fatalf("events=%v, want session.revoked then user.deleted for %s", evs, uid)
	}
	users := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	wantOK(t, users)
	if list := users.Body["users"].([]any); len(list) != 1 || list[0].(map[string]any)["email"] != "kept@example.com" {
		t.Fatalf("users=%s, want only kept@example.com", users.Raw)
	}
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "gone@example.com", "code": codes[0]}), 401, "INVALID_CODE")
	again := ts.login("gone@example.com")
	if again.Body["isNewUser"] != true || again.Body["userId"] == uid {
		t.Fatalf("sign-in after delete: %s, want a new user", again.Raw)
	}

	wantError(t, ts.admin("DELETE", "/api/v1/admin/users/"+uid, nil), 404, "USER_NOT_FOUND")
	wantError(t, ts.admin("DELETE", "/api/v1/admin/users/nope", nil), 404, "USER_NOT_FOUND")
	wantError(t, ts.do("DELETE", "/api/v1/admin/users/"+str(t, again.Body, "userId"), ts.Key, nil), 401, "UNAUTHORIZED")
}
