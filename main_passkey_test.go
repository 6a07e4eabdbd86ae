package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"latchkey/auth/passkeytest"
	"latchkey/internal/testkit"
)

// TestPasskeyDemoOnFreshStart: on a fresh start the default project
// allows the server's own origin, so the demo page's passkey sign-up and
// sign-in (through its /demo/passkeys/api/v1 routes) work at once from
// http://localhost:<port>, as the printed demo link opens it; a ceremony
// from an origin the project does not allow is refused with an error and
// a log line that name the origin.
func TestPasskeyDemoOnFreshStart(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	m, out := startMain(t, Config{}, &logs)
	key := match(t, keyLine, out.String())
	admin := match(t, adminLine, out.String())
	base := "http://" + m.Addr()
	port := m.Addr()[strings.LastIndex(m.Addr(), ":")+1:]
	page := "http://localhost:" + port
	if !strings.Contains(out.String(), "allowed origins "+base+", http://localhost:3000") || !strings.Contains(out.String(), "passkey demo page: "+page+"/demo/passkeys") {
		t.Fatalf("first-start output:\n%s", out)
	}
	c := client{t, base}
	_, projects := c.do("GET", "/api/v1/admin/projects", admin, nil)
	p := projects["projects"].([]any)[0].(map[string]any)
	if got := p["allowedOrigins"]; !reflect.DeepEqual(got, []any{base, "http://localhost:3000"}) {
		t.Fatalf("default project's origins %v", got)
	}

	ceremony := func(path string, body map[string]any) (string, []byte) {
		t.Helper()
		st, r := c.do("POST", "/demo/passkeys/api/v1/"+path, key, body)
		if st != 200 {
			t.Fatalf("%s: %d %v", path, st, r)
		}
		opts, _ := json.Marshal(r["options"])
		return r["challengeId"].(string), opts
	}
	a := passkeytest.New(page)
	id, opts := ceremony("passkey/register/start", map[string]any{"email": "demo@example.com"})
	cred, _, err := a.Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, signup := c.do("POST", "/demo/passkeys/api/v1/passkey/register/verify", key, map[string]any{"challengeId": id, "credential": cred})
	if st != 200 || signup["isNewUser"] != true {
		t.Fatalf("demo sign-up on a fresh start: %d %v", st, signup)
	}
	id, opts = ceremony("passkey/login/start", map[string]any{})
	assertion, _, err := a.Get(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, login := c.do("POST", "/demo/passkeys/api/v1/passkey/login/verify", key, map[string]any{"challengeId": id, "credential": assertion})
	if st != 200 || login["userId"] != signup["userId"] {
		t.Fatalf("demo sign-in: %d %v", st, login)
	}

	// A page elsewhere is refused, and told why.
	id, opts = ceremony("passkey/register/start", map[string]any{"email": "elsewhere@example.com"})
	cred, _, err = passkeytest.New("http://elsewhere.example:9000").Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, body := c.do("POST", "/api/v1/passkey/register/verify", key, map[string]any{"challengeId": id, "credential": cred})
	want := "The passkey was created for origin http://elsewhere.example:9000, which is not an allowed origin of this project."
	if st != 400 || body["code"] != "INVALID_CREDENTIAL" || body["error"] != want {
		t.Fatalf("foreign origin: %d %v, want 400 INVALID_CREDENTIAL %q", st, body, want)
	}
	if l := logs.String(); !strings.Contains(l, `level=WARN msg="passkey refused: origin not allowed"`) || !strings.Contains(l, "origin=http://elsewhere.example:9000") {
		t.Fatalf("log lacks the refusal:\n%s", l)
	}
}
