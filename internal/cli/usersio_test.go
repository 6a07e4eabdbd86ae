package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latchkey/httpapi"
	"latchkey/internal/cli"
)

// TestUserExportImport: `user export` writes JSON lines that `user
// import` reads back into another project; the report names rejected
// lines and the exit code says so.
func TestUserExportImport(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"email":"ada@example.com","firstName":"Ada","emailVerified":true}
{"email":"bob@example.com","externalUserId":"b-1"}
not json
`), 0o600)
	r := ts.cli("user", "import", "--project", ts.Project.ID, in)
	if r.Code != 1 || !strings.Contains(r.Stdout, "Created 2, updated 0, rejected 1.") || !strings.Contains(r.Stdout, "line 3: not a JSON object") {
		t.Fatalf("import: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	// More rejected lines than the report lists: the count is of all.
	many := filepath.Join(dir, "many.jsonl")
	os.WriteFile(many, []byte(strings.Repeat("not json\n", 1005)), 0o600)
	r = ts.cli("user", "import", "--project", ts.Project.ID, many)
	if r.Code != 1 || !strings.Contains(r.Stdout, "Created 0, updated 0, rejected 1005.\n") || !strings.Contains(r.Stdout, "line 1000: not a JSON object\n") ||
		strings.Contains(r.Stdout, "line 1001:") || !strings.HasSuffix(r.Stdout, "(the first 1000 rejected lines are listed; 5 more were rejected)\n") ||
		!strings.Contains(r.Stderr, "1005 lines rejected") {
		t.Fatalf("import of 1005 bad lines: exit %d\nstdout tail: %s\nstderr: %s", r.Code, r.Stdout[max(0, len(r.Stdout)-200):], r.Stderr)
	}
	// Again, without the bad line: idempotent.
	os.WriteFile(in, []byte(`{"email":"ada@example.com","firstName":"Ada","emailVerified":true}`+"\n"), 0o600)
	if out := ts.ok("user", "import", "--project", ts.Project.ID, in); out != "Created 0, updated 1, rejected 0.\n" {
		t.Fatalf("second import: %q", out)
	}
	rep := ts.okJSON("user", "import", "--project", ts.Project.ID, in)
	if rep["updated"] != float64(1) || rep["success"] != true {
		t.Fatalf("--json report=%v", rep)
	}

	out := ts.ok("user", "export", "--project", ts.Project.ID)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("export:\n%s", out)
	}
	var ada map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ada); err != nil || ada["email"] != "ada@example.com" || ada["firstName"] != "Ada" {
		t.Fatalf("first line %q: %v", lines[0], err)
	}
	file := filepath.Join(dir, "users.jsonl")
	os.WriteFile(file, []byte(out), 0o600)
	other := ts.okJSON("project", "create", "--name", "Other")["project"].(map[string]any)["id"].(string)
	if out := ts.ok("user", "import", "--project", other, file); out != "Created 2, updated 0, rejected 0.\n" {
		t.Fatalf("import of the export: %q", out)
	}

	r = ts.cli("user", "export", "--project", "nope")
	if r.Code != 1 || !strings.Contains(r.Stderr, "PROJECT_NOT_FOUND") {
		t.Fatalf("export of an unknown project: exit %d stderr %q", r.Code, r.Stderr)
	}
	// A file over the server's limit is refused before anything is sent.
	if cli.MaxImportBytes != httpapi.MaxImportBytes {
		t.Fatalf("the CLI's limit %d is not the server's %d", cli.MaxImportBytes, httpapi.MaxImportBytes)
	}
	big := filepath.Join(dir, "big.jsonl")
	if err := os.WriteFile(big, []byte(`{"email":"big@example.com"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, httpapi.MaxImportBytes+1); err != nil { // sparse
		t.Fatal(err)
	}
	r = ts.cli("user", "import", "--project", other, big)
	if r.Code != 1 || !strings.Contains(r.Stderr, "is 64.0 MiB; an import takes at most 64 MiB: split it") {
		t.Fatalf("import of a file over the limit: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	if out := ts.ok("user", "export", "--project", other); strings.Contains(out, "big@example.com") {
		t.Fatalf("a line of the refused file was imported:\n%s", out)
	}
	if r := ts.cli("user", "import", "--project", ts.Project.ID); r.Code != 2 {
		t.Fatalf("import without FILE: exit %d", r.Code)
	}
	if r := ts.cli("user", "export"); r.Code != 2 {
		t.Fatalf("export without --project: exit %d", r.Code)
	}
}

// TestTemplateCommands: put, list, preview (stored, draft, built-in),
// delete, and a template error naming its line.
func TestTemplateCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	dir := t.TempDir()
	text, html := filepath.Join(dir, "otp.txt"), filepath.Join(dir, "otp.html")
	os.WriteFile(text, []byte("Olá {{.Email}}\nCódigo: {{.Code}}\n"), 0o600)
	os.WriteFile(html, []byte("<p>{{.Code}}</p>\n"), 0o600)

	wantContains(t, ts.ok("template", "list", "--project", pid), "No templates")
	wantContains(t, ts.ok("template", "put", "--project", pid, "--kind", "otp", "--locale", "pt-br", "--subject", "Código {{.Project}}", "--text-file", text, "--html-file", html),
		"Stored the otp template for pt-BR.")
	out := ts.ok("template", "list", "--project", pid)
	if row := tableRow(t, out, "pt-BR"); row[0] != "otp" {
		t.Fatalf("row=%q", row)
	}
	out = ts.ok("template", "preview", "--project", pid, "--kind", "otp", "--locale", "pt-BR")
	wantContains(t, out, "From: template pt-BR", "Subject: Código ", "Código: 123456", "<p>123456</p>")
	out = ts.ok("template", "preview", "--project", pid, "--kind", "otp", "--locale", "de")
	wantContains(t, out, "From: built-in English", "sign-in code")
	out = ts.ok("template", "preview", "--project", pid, "--kind", "otp", "--locale", "fr", "--subject", "Votre code", "--text-file", text, "--html-file", html)
	wantContains(t, out, "From: template fr", "Subject: Votre code")

	os.WriteFile(text, []byte("ok\n{{.Code}\n"), 0o600)
	r := ts.cli("template", "put", "--project", pid, "--kind", "otp", "--locale", "en", "--subject", "s", "--text-file", text, "--html-file", html)
	if r.Code != 1 || !strings.Contains(r.Stderr, "text: line 2") {
		t.Fatalf("bad template: exit %d stderr %q", r.Code, r.Stderr)
	}
	wantContains(t, ts.ok("template", "delete", "--project", pid, "--kind", "otp", "--locale", "pt-BR"), "Deleted.")
	if r := ts.cli("template", "delete", "--project", pid, "--kind", "otp", "--locale", "pt-BR"); r.Code != 1 || !strings.Contains(r.Stderr, "TEMPLATE_NOT_FOUND") {
		t.Fatalf("second delete: exit %d stderr %q", r.Code, r.Stderr)
	}
	if r := ts.cli("template", "put", "--project", pid, "--kind", "otp"); r.Code != 2 {
		t.Fatalf("put without --locale: exit %d", r.Code)
	}
}
