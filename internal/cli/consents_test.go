package cli_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// TestUserConsents: `user consents ID` lists the third-party clients a
// user allowed (a table, or the API's JSON), `user revoke-consent ID
// CLIENT_ID` revokes one; unknown users and clients are refused with
// the API's codes.
func TestUserConsents(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	_, uid := ts.login("ann@example.com")
	cid := ts.okJSON("client", "create", "--project", pid, "--name", "Wiki", "--type", "public",
		"--redirect-uri", "http://127.0.0.1/cb")["client"].(map[string]any)["id"].(string)
	if out := ts.ok("user", "consents", uid); out != "No consents.\n" {
		t.Fatalf("before: %q", out)
	}
	// The consent page writes this row (httpapi's TestOIDCConsent).
	at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	if err := ts.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutOIDCConsent(&store.OIDCConsent{ProjectID: pid, UserID: uid, ClientID: cid,
			Scopes: []string{"openid", "email"}, GrantedAt: at, UpdatedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
	out := ts.ok("user", "consents", uid)
	if got := tableRow(t, out, "SCOPES"); strings.Join(got, "|") != "CLIENT ID|CLIENT|SCOPES|GRANTED|UPDATED" {
		t.Fatalf("header=%q", got)
	}
	if row := tableRow(t, out, cid); len(row) != 5 || row[1] != "Wiki" || row[2] != "openid,email" || !strings.HasPrefix(row[3], "2026-11-20") {
		t.Fatalf("row=%q", row)
	}
	got := ts.okJSON("user", "consents", uid)["consents"].([]any)
	if len(got) != 1 || got[0].(map[string]any)["clientId"] != cid || got[0].(map[string]any)["clientName"] != "Wiki" {
		t.Fatalf("--json consents=%v", got)
	}
	wantFail(t, ts.cli("user", "consents", "nobody"), 1, "(USER_NOT_FOUND)")
	wantFail(t, ts.cli("user", "revoke-consent", uid, "no-such-client"), 1, "(CONSENT_NOT_FOUND)")
	wantFail(t, ts.cli("user", "revoke-consent", uid), 2)

	wantContains(t, ts.ok("user", "revoke-consent", uid, cid), "Revoked the consent of user "+uid+" to client "+cid)
	if out := ts.ok("user", "consents", uid); out != "No consents.\n" {
		t.Fatalf("after revoke: %q", out)
	}
	wantFail(t, ts.cli("user", "revoke-consent", uid, cid), 1, "(CONSENT_NOT_FOUND)")

	r := run(t, nil, "user", "--help")
	wantContains(t, r.Stdout, "latchkey user consents ID", "latchkey user revoke-consent ID CLIENT_ID")
}

// TestProjectClientRegistration: `project update --client-registration
// open|closed` (and create) sets whether clients may register
// themselves: shown by the project, and discovery names the
// registration endpoint only while it is open; another value is
// refused.
func TestProjectClientRegistration(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	registration := func() any {
		res, err := http.Get(ts.URL + "/oidc/" + pid + "/.well-known/openid-configuration")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return doc["registration_endpoint"]
	}
	if got := registration(); got != nil {
		t.Fatalf("registration_endpoint=%v by default", got)
	}
	wantContains(t, ts.ok("project", "update", pid, "--client-registration", "open"), "Client registration", "open")
	if got := registration(); got != ts.URL+"/oidc/"+pid+"/register" {
		t.Fatalf("registration_endpoint=%v once open", got)
	}
	p := ts.okJSON("project", "update", pid, "--client-registration", "closed")["project"].(map[string]any)
	if p["clientRegistration"] != "closed" || registration() != nil {
		t.Fatalf("closed: project=%v registration_endpoint=%v", p, registration())
	}
	wantFail(t, ts.cli("project", "update", pid, "--client-registration", "sometimes"), 1, "(VALIDATION_ERROR)")
	p = ts.okJSON("project", "create", "--name", "Agents", "--client-registration", "open")["project"].(map[string]any)
	if p["clientRegistration"] != "open" {
		t.Fatalf("create: project=%v", p)
	}
	wantContains(t, ts.ok("project", "list"), "Agents")
	r := run(t, nil, "project", "update", "--help")
	wantContains(t, r.Stdout, "-client-registration MODE")
}
