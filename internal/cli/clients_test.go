package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestClientCommands: an OpenID Connect client's life through the CLI:
// create (the secret printed once, the issuer shown), list, get, update
// (only the flags given), rotate-secret, delete, and the usage and API
// errors of each.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	if out := ts.ok("client", "list", "--project", pid); out != "No clients.\n" {
		t.Fatalf("out=%q", out)
	}
	out := ts.ok("client", "create", "--project", pid, "--name", "Grafana", "--type", "confidential",
		"--redirect-uri", "https://grafana.example.com/login/generic_oauth?a=1,2", "--grant-type", "authorization_code,refresh_token",
		"--claim", "role=metadata.role", "--first-party", "yes", "--access-token-ttl", "900")
	wantContains(t, out, "Client secret (shown once", "lkcs_", "Issuer:", ts.URL+"/oidc/"+pid,
		"https://grafana.example.com/login/generic_oauth?a=1,2", "authorization_code,refresh_token", "role=metadata.role", "15m")
	secret := ""
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "lkcs_") {
			secret = f
		}
	}
	id := ""
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "ID:"); ok {
			id = strings.TrimSpace(v)
		}
	}
	if secret == "" || id == "" {
		t.Fatalf("no secret or id in:\n%s", out)
	}

	pub := ts.okJSON("client", "create", "--project", pid, "--name", "CLI", "--type", "public",
		"--redirect-uri", "http://127.0.0.1/callback", "--redirect-uri", "com.example.cli:/cb", "--id-token-alg", "ES256")
	if pub["clientSecret"] != nil {
		t.Fatalf("public client --json: clientSecret=%v, want null", pub["clientSecret"])
	}
	if out := ts.ok("client", "create", "--project", pid, "--name", "SPA", "--type", "public", "--redirect-uri", "https://spa.example.com/cb"); strings.Contains(out, "secret") {
		t.Fatalf("a public client's creation mentions a secret:\n%s", out)
	}

	list := ts.ok("client", "list", "--project", pid)
	if row := tableRow(t, list, id); row[1] != "Grafana" || row[2] != "confidential" || row[3] != "authorization_code,refresh_token" {
		t.Fatalf("row=%q", row)
	}
	wantContains(t, list, "CLI", "http://127.0.0.1/callback,com.example.cli:/cb")
	if strings.Contains(list+ts.ok("client", "get", id, "--project", pid)+ts.ok("client", "list", "--project", pid, "--json"), secret) {
		t.Fatal("a client command shows the secret after its creation")
	}

	out = ts.ok("client", "update", id, "--project", pid, "--name", "Grafana (ops)", "--post-logout-uri", "https://grafana.example.com/",
		"--require-mfa", "yes", "--claim", "")
	wantContains(t, out, "Grafana (ops)", "Requires MFA:", "https://grafana.example.com/", "First party:")
	var got struct {
		Client struct {
			Name                       string
			FirstParty                 bool
			RequireMfa                 bool
			Claims                     map[string]string
			AccessTokenLifetimeSeconds int
		}
	}
	if err := json.Unmarshal([]byte(ts.ok("client", "get", id, "--project", pid, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Client; c.Name != "Grafana (ops)" || !c.FirstParty || !c.RequireMfa || len(c.Claims) != 0 || c.AccessTokenLifetimeSeconds != 900 {
		t.Fatalf("after update: %+v", c)
	}

	out = ts.ok("client", "rotate-secret", id, "--project", pid)
	wantContains(t, out, "New client secret (shown once", "lkcs_")
	if strings.Contains(out, secret) {
		t.Fatal("rotate-secret printed the old secret")
	}

	wantFail(t, ts.cli("client", "create", "--project", pid, "--name", "x"), 2, "--type is required")
	wantFail(t, ts.cli("client", "create", "--name", "x", "--type", "public"), 2, "--project is required")
	wantFail(t, ts.cli("client", "update", id, "--project", pid), 2, "nothing to update")
	wantFail(t, ts.cli("client", "update", id, "--project", pid, "--first-party", "maybe"), 2, "--first-party must be yes or no")
	wantFail(t, ts.cli("client", "update", id, "--project", pid, "--claim", "role"), 2, "--claim must be NAME=metadata.KEY")
	wantFail(t, ts.cli("client", "get", "--project", pid), 2, "missing ID")
	wantFail(t, ts.cli("client", "create", "--project", pid, "--name", "x", "--type", "public", "--redirect-uri", "http://localhost/cb"), 1,
		"(VALIDATION_ERROR)", "instead of localhost")
	wantFail(t, ts.cli("client", "rotate-secret", str(pub["client"].(map[string]any)["id"]), "--project", pid), 1, "(VALIDATION_ERROR)")
	wantFail(t, ts.cli("client", "get", "nope", "--project", pid), 1, "(CLIENT_NOT_FOUND)")
	wantFail(t, ts.cli("client", "list", "--project", "nope"), 1, "(PROJECT_NOT_FOUND)")

	if out := ts.ok("client", "delete", id, "--project", pid); out != "Deleted client "+id+".\n" {
		t.Fatalf("delete: %q", out)
	}
	wantFail(t, ts.cli("client", "delete", id, "--project", pid), 1, "(CLIENT_NOT_FOUND)")
}

// str is v as a string ("" when it is not one).
func str(v any) string {
	s, _ := v.(string)
	return s
}
