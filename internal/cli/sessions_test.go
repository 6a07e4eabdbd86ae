package cli_test

import (
	"strings"
	"testing"
)

// TestUserSessions: `user sessions ID` lists a user's sessions as a
// table (or the API's JSON), `user revoke-sessions ID` ends them all.
func TestUserSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	secret := ts.okJSON("method", "create", "--project", pid, "--method", "card", "--pattern", "direct")["registration"].(map[string]any)["secret"].(string)
	for range 2 {
		if status, code := ts.confirm(secret, "card", "ext-1", "ann@example.com"); status != 200 {
			t.Fatalf("confirm: %d %s", status, code)
		}
	}
	uid := tableRow(t, ts.ok("user", "list", "--project", pid), "ann@example.com")[0]
	wantFail(t, ts.cli("user", "sessions", "nobody"), 1, "(USER_NOT_FOUND)")

	out := ts.ok("user", "sessions", uid)
	if got := tableRow(t, out, "METHOD"); strings.Join(got, "|") != "ID|METHOD|CREATED|LAST SEEN|EXPIRES|IP|USER AGENT" {
		t.Fatalf("header=%q", got)
	}
	row := tableRow(t, out, "external:card")
	if len(row) != 7 || row[5] != "127.0.0.1" || !strings.HasPrefix(row[6], "Go-http-client") || !strings.HasSuffix(row[2], " UTC") {
		t.Fatalf("row=%q", row)
	}
	if n := strings.Count(out, "external:card"); n != 2 {
		t.Fatalf("%d sessions listed, want 2:\n%s", n, out)
	}
	if got := ts.okJSON("user", "sessions", uid)["sessions"].([]any); len(got) != 2 {
		t.Fatalf("--json sessions=%v", got)
	}

	wantContains(t, ts.ok("user", "revoke-sessions", uid), "Ended 2 sessions of user "+uid+".")
	if out := ts.ok("user", "sessions", uid); out != "No sessions.\n" {
		t.Fatalf("after revoke: %q", out)
	}
	if got := ts.okJSON("user", "revoke-sessions", uid); got["revoked"] != float64(0) {
		t.Fatalf("--json revoke=%v", got)
	}
	wantFail(t, ts.cli("user", "revoke-sessions", "nope"), 1, "(USER_NOT_FOUND)")
	wantFail(t, ts.cli("user", "sessions"), 2)

	r := run(t, nil, "user", "--help")
	wantContains(t, r.Stdout, "latchkey user sessions ID", "latchkey user revoke-sessions ID  end every session")
}
