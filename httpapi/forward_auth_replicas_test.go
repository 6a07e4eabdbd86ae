package httpapi_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store/storetest"
)

// fwdReplica starts another replica of newFwdServer's ts (replica's)
// behind the same public origin: its base URL is ts's, which the
// session tokens name.
func (ts *testServer) fwdReplica() *testServer {
	ts.t.Helper()
	base := ts.faBase()
	r := &testServer{t: ts.t, Clock: ts.Clock, dsn: ts.dsn, storeOpts: ts.storeOpts, api: ts.api, Key: ts.Key, Project: ts.Project,
		opts: append(slices.Clip(ts.opts), func(c *auth.Config) { c.BaseURL = base })}
	r.start()
	return r
}

// TestForwardAuthAcrossReplicas: two replicas on one PostgreSQL
// database (the store's default feed interval) answer forward-auth
// checks for the same project. Each change is made on one replica while
// the other has the project and the session's state in its memory, and
// the other's checks follow within 1 s: a rule change (PATCH forwardAuth,
// there and back), a user's groups given and taken away (the identity
// comes from the session's state, which the other replica drops when
// the feed tells it the user changed), the user's name.
func TestForwardAuthAcrossReplicas(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("replicas share a database: this test runs on the postgres pass (on bbolt one process owns the file)")
	}
	a := newFwdServer(t)
	b := a.fwdReplica()
	pid := a.Project.ID
	app := "http://app." + faDomain
	tok := str(t, a.login("ada@example.com").Body, "token")
	u := a.userByEmail("ada@example.com")

	// follows makes sure b answers the check of u before, then polls b
	// after change ran on a until it answers as want says, for at most
	// 1 s.
	follows := func(what, u string, before, after func(*response) bool, change func()) {
		t.Helper()
		if r := b.fwdCheck("127.0.0.1", pid, fwdHeaders(u), tok); !before(r) {
			t.Fatalf("%s: before the change, replica b answered %d %s %v", what, r.Status, r.Raw, r.Header)
		}
		change()
		if r := a.fwdCheck("127.0.0.1", pid, fwdHeaders(u), tok); !after(r) {
			t.Fatalf("%s: replica a, which made the change, answered %d %s %v", what, r.Status, r.Raw, r.Header)
		}
		start := time.Now()
		for {
			r := b.fwdCheck("127.0.0.1", pid, fwdHeaders(u), tok)
			if after(r) {
				break
			}
			if time.Since(start) > time.Second {
				t.Fatalf("%s: replica b still answers %d %s %v 1 s after the change on replica a", what, r.Status, r.Raw, r.Header)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("%s: followed by replica b after %v", what, time.Since(start).Round(time.Millisecond))
	}
	status := func(code int) func(*response) bool { return func(r *response) bool { return r.Status == code } }
	header := func(name, want string) func(*response) bool {
		return func(r *response) bool {
			got, ok := r.Header[name]
			return r.Status == http.StatusOK && ok && got[0] == want
		}
	}
	patchRules := func(rules []map[string]any) func() {
		return func() {
			wantOK(t, a.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"forwardAuth": map[string]any{"cookieDomain": faDomain, "rules": rules}}))
		}
	}

	// A rule change: app's paths that were open to a signed-in user are
	// refused (no rule), then open again.
	follows("rules that no longer cover app", app+"/page", status(http.StatusOK), status(http.StatusForbidden),
		patchRules([]map[string]any{{"host": "x." + faDomain, "policy": "signed_in"}}))
	follows("the rules back", app+"/page", status(http.StatusForbidden), status(http.StatusOK), patchRules(faRules))
	// A bypass rule: no identity headers at all.
	anonymous := func(r *response) bool {
		_, ok := r.Header["Remote-User"]
		return r.Status == http.StatusOK && !ok
	}
	follows("a bypass rule", app+"/page", header("Remote-User", u.ID), anonymous,
		patchRules([]map[string]any{{"host": "app." + faDomain, "policy": "bypass"}}))
	follows("the rules back again", app+"/page", anonymous, header("Remote-User", u.ID), patchRules(faRules))

	// Groups: ada is in none of the ops rule's groups; put in sre on a,
	// she passes on b with the header; taken out, she is refused again.
	setGroups := func(groups ...string) func() {
		return func() {
			wantOK(t, a.admin("PATCH", "/api/v1/admin/users/"+u.ID, map[string]any{"groups": groups}))
		}
	}
	follows("groups given", app+"/ops/", status(http.StatusForbidden), header("Remote-Groups", "sre"), setGroups("sre"))
	follows("another group", app+"/page", header("Remote-Groups", "sre"), header("Remote-Groups", "ops,sre"), setGroups("sre", "ops"))
	follows("groups taken away", app+"/ops/", header("Remote-Groups", "ops,sre"), status(http.StatusForbidden), setGroups())
	// The name the user gives herself.
	follows("the user's name", app+"/page", header("Remote-Name", ""), header("Remote-Name", "Ada"), func() {
		wantOK(t, a.do("PATCH", "/api/v1/user", tok, map[string]any{"firstName": "Ada"}))
	})
}
