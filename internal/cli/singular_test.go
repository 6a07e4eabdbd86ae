package cli_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMessagesForOne: counts of one read in the singular: one rejected
// import line, one ended session (and zero in the plural).
func TestMessagesForOne(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	in := filepath.Join(t.TempDir(), "one-bad.jsonl")
	os.WriteFile(in, []byte("{\"email\":\"ok@example.com\"}\nnot json\n"), 0o600)
	r := ts.cli("user", "import", "--project", ts.Project.ID, in)
	if r.Code != 1 || r.Stderr != "latchkey: 1 line rejected\n" {
		t.Fatalf("import with one bad line: exit %d, stderr %q; want 1 and %q", r.Code, r.Stderr, "latchkey: 1 line rejected\n")
	}
	_, uid := ts.login("one@example.com")
	if out := ts.ok("user", "revoke-sessions", uid); out != "Ended 1 session of user "+uid+".\n" {
		t.Fatalf("revoke-sessions of one session: %q", out)
	}
	if out := ts.ok("user", "revoke-sessions", uid); out != "Ended 0 sessions of user "+uid+".\n" {
		t.Fatalf("revoke-sessions of none: %q", out)
	}
}
