package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	ptotp "github.com/pquerna/otp/totp"

	"latchkey/auth/passkeytest"
	"latchkey/store"
	"latchkey/store/postgres"
	"latchkey/store/storetest"
)

// TestCopyRoundTrip: a data file populated through the API (users,
// sessions, a TOTP factor and backup codes, a passkey, a magic link,
// remembered devices, throttles, an external method, a webhook with
// failed deliveries and queued jobs, a mail template, keys, events,
// counters and suppressed failures, and an imported user; and, written
// directly, queued mail, an outbox event and a provider link) is copied
// into PostgreSQL with latchkey copy; a server on the database accepts
// the sessions, keys, factor and passkey made on the file, lists the
// template as it was stored, signs a user in, and keeps the imported
// user's account at its first sign-in; the database copied back into a
// new file holds the same records as the original. (Every kind of
// record, every field set, is copied both ways in store's
// TestCopyCarriesEveryRecord.)
//
// It needs PostgreSQL and runs on the postgres pass (it copies between
// both backends whatever LATCHKEY_TEST_STORE says, so it does not run
// twice).
func TestCopyRoundTrip(t *testing.T) {
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("copies a data file into PostgreSQL and back: runs on the postgres pass (LATCHKEY_TEST_STORE=postgres)")
	}
	dbURL := storetest.New(t) // an empty database
	dir := t.TempDir()
	data := filepath.Join(dir, "latchkey.db")
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer failing.Close()

	// 1. Populate a data file through the API.
	// Both servers have the same public origin, as a server moved to a
	// database keeps it (the tokens' issuer, the passkeys' origin).
	const origin = "http://localhost:8080"
	m, out := startMain(t, Config{Data: data, BaseURL: origin})
	key, admin := match(t, keyLine, out.String()), match(t, adminLine, out.String())
	base := "http://" + m.Addr()
	c := client{t, base}
	_, projects := c.do("GET", "/api/v1/admin/projects", admin, nil)
	projectID := projects["projects"].([]any)[0].(map[string]any)["id"].(string)
	must := func(st int, body map[string]any) map[string]any {
		t.Helper()
		if st != 200 {
			t.Fatalf("status %d: %v", st, body)
		}
		return body
	}
	live := must(c.do("POST", "/api/v1/admin/keys", admin, map[string]any{"mode": "live", "projectId": projectID}))["key"].(string)
	must(c.do("POST", "/api/v1/admin/projects", admin, map[string]any{"name": "Second", "sessionRateLimitPerMinute": 33}))
	must(c.do("POST", "/api/v1/webhooks", key, map[string]any{"url": failing.URL + "/hook"}))
	must(c.do("POST", "/api/v1/admin/projects/"+projectID+"/external-methods", admin, map[string]any{"method": "bank", "pattern": "direct"}))
	tplPath := "/api/v1/admin/projects/" + projectID + "/templates/otp/pt-BR"
	tpl := must(c.do("PUT", tplPath, admin, map[string]any{"subject": "Código {{.Project}}", "text": "Código: {{.Code}}\n", "html": "<p>{{.Code}}</p>"}))["template"]
	tokens := map[string]string{}
	for _, addr := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		must(c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}))
		login := must(c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": codeTo(t, data+".outbox", addr)}))
		tokens[addr] = login["token"].(string)
	}
	// TOTP and backup codes for a@.
	enroll := must(c.do("POST", "/api/v1/totp/enroll", tokens["a@example.com"], map[string]any{}))
	secret := enroll["secret"].(string)
	code, _ := ptotp.GenerateCode(secret, time.Now())
	must(c.do("POST", "/api/v1/totp/verify", tokens["a@example.com"], map[string]any{"code": code}))
	must(c.do("POST", "/api/v1/backup-codes/generate", tokens["a@example.com"], map[string]any{}))
	// A passkey sign-up for d@ (its challenge row stays until it expires).
	authn := passkeytest.New(origin)
	start := must(c.do("POST", "/api/v1/passkey/register/start", key, map[string]any{"email": "d@example.com"}))
	opts, _ := json.Marshal(start["options"])
	cred, _, err := authn.Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	must(c.do("POST", "/api/v1/passkey/register/verify", key, map[string]any{"challengeId": start["challengeId"], "credential": cred}))
	must(c.do("POST", "/api/v1/passkey/login/start", key, map[string]any{})) // a pending ceremony
	// A pending magic link, a pending code, failures counted but not
	// stored (unknown tokens).
	must(c.do("POST", "/api/v1/magic/send", key, map[string]any{"email": "e@example.com"}))
	must(c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "f@example.com"}))
	for i := range 15 {
		c.do("GET", fmt.Sprintf("/api/v1/magic/verify?token=unknown-%d", i), "", nil)
	}
	// Deliveries to the failing webhook: wait for a failed attempt.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		m.DB.View(ctx, func(tx store.Tx) error {
			hooks, _ := tx.Webhooks(projectID)
			for _, h := range hooks {
				ds, _ := tx.Deliveries(h.ID, 100)
				n += len(ds)
			}
			return nil
		})
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery attempt recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The workers sent the mail and fanned the outbox out: a message and
	// an event queued as a stopped server leaves them.
	fileDB, _, err := store.Open(ctx, data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = fileDB.Update(ctx, func(tx store.Tx) error {
		now := time.Now().UTC()
		if err := tx.EnqueueMail(&store.Mail{ProjectID: projectID, To: "h@example.com", Kind: "otp", Body: []byte{1, 2, 3},
			Attempts: 2, LastError: "421 try later", CreatedAt: now, NextAttemptAt: now.Add(time.Minute)}); err != nil {
			return err
		}
		// A user as an import writes it: vouched for by the operator
		// (the passkey sign-up's is not, the sign-ins' leave it unset).
		yes, no := true, false
		if err := tx.PutUser(&store.User{ID: "0193a0d5-c3d2-7e80-9000-0000000000ee", ProjectID: projectID, Email: "imported@example.com",
			ExternalUserID: "legacy-1", FirstName: "Ida", CreatedAt: time.Date(1990, 1, 2, 3, 4, 5, 6, time.UTC), UpdatedAt: now,
			EmailVerified: &no, Vouched: &yes}); err != nil {
			return err
		}
		if err := tx.AppendEvent(&store.Event{ID: "evt_1", ProjectID: projectID, Type: "user.updated", CreatedAt: now, Data: json.RawMessage(`{"user_id":"u"}`)}); err != nil {
			return err
		}
		// A link to a sign-in provider account, as a first sign-in with
		// a provider stores it.
		a, err := tx.UserByEmail(projectID, "a@example.com")
		if err != nil {
			return err
		}
		if err := tx.PutIdentity(&store.Identity{ProjectID: projectID, Issuer: "https://accounts.google.com", Subject: "108", UserID: a.ID, Provider: "google", CreatedAt: now}); err != nil {
			return err
		}
		// A sign-in with a provider in flight, waiting for its callback.
		return tx.PutOAuthFlow(&store.OAuthFlow{ID: "5d0a8f0c2b7e4a91c3f6e8d7b2a1c0f9", ProjectID: projectID, Kind: store.OAuthFlowState,
			Payload: []byte(`{"provider":"google","verifier":"v"}`), ExpiresAt: now.Add(10 * time.Minute)})
	})
	fileDB.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := exportAll(t, data)
	if users := strings.Join(before["User"], "\n"); !strings.Contains(users, `"vouched":true`) || !strings.Contains(users, `"vouched":false`) {
		t.Errorf("the populated file lacks a vouched or a self-registered user: the round trip would not test Vouched:\n%s", users)
	}
	for _, kind := range []string{"Settings", "Project", "APIKey", "User", "Session", "Code", "Throttle", "MagicLink", "Device",
		"Factor", "BackupCodes", "Passkey", "Identity", "Challenge", "OAuthFlow", "ExternalMethod", "Template", "Webhook", "Job", "Delivery", "Event", "Mail", "AuthEvent", "EventCount", "SuppressedCount"} {
		if len(before[kind]) == 0 {
			t.Errorf("the populated file holds no %s: the round trip would not test it", kind)
		}
	}
	// a@'s session proved TOTP after its sign-in: its proofs travel too.
	if !strings.Contains(strings.Join(before["Session"], "\n"), `"proofs":[{"method":"otp","at":`) ||
		!strings.Contains(strings.Join(before["Session"], "\n"), `{"method":"totp","at":`) {
		t.Errorf("no session of the populated file holds an otp and a totp proof: %v", before["Session"])
	}

	// 2. Copy it into the database; a second copy is refused.
	var stdout, stderr bytes.Buffer
	if code := runCopy(ctx, []string{"--from", data, "--to", dbURL}, noEnv, &stdout, &stderr); code != 0 {
		t.Fatalf("copy to the database: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "LATCHKEY_MASTER_KEY") {
		t.Fatalf("the copy does not say how to run on the database:\n%s", stdout.String())
	}
	stderr.Reset()
	if code := runCopy(ctx, []string{"--from", data, "--to", dbURL}, noEnv, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "not empty") {
		t.Fatalf("a second copy into the database: exit %d: %s", code, stderr.String())
	}

	// 3. And back into a new file: the same records.
	masterKey, err := os.ReadFile(data + ".key")
	if err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back.db")
	env := func(k string) string {
		if k == "LATCHKEY_MASTER_KEY" {
			return strings.TrimSpace(string(masterKey))
		}
		return ""
	}
	stdout.Reset()
	stderr.Reset()
	if code := runCopy(ctx, []string{"--from", dbURL, "--to", back}, env, &stdout, &stderr); code != 0 {
		t.Fatalf("copy back to a file: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := runCopy(ctx, []string{"--from", dbURL, "--to", data}, env, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "holds data") {
		t.Fatalf("a copy into the populated file: exit %d: %s", code, stderr.String())
	}
	after := exportAll(t, back)
	for kind, recs := range before {
		if got := after[kind]; strings.Join(got, "\n") != strings.Join(recs, "\n") {
			t.Errorf("%s differs after the round trip:\n before %v\n after  %v", kind, recs, got)
		}
	}
	for kind := range after {
		if _, ok := before[kind]; !ok {
			t.Errorf("%s appeared in the round trip", kind)
		}
	}
	storetest.CheckFile(t, back)
	n := 0
	for _, recs := range before {
		n += len(recs)
	}
	t.Logf("round trip: %d records of %d kinds alike; %s", n, len(before), strings.TrimSpace(stdout.String()))

	// 4. A server on the database: the file's sessions, keys, factor and
	// passkey work, and a new user signs in.
	t.Chdir(t.TempDir()) // its outbox: ./latchkey.outbox
	pg, _ := startMain(t, Config{DatabaseURL: dbURL, MasterKey: strings.TrimSpace(string(masterKey)), BaseURL: origin})
	c = client{t, "http://" + pg.Addr()}
	for addr, tok := range tokens {
		if st, body := c.do("GET", "/api/v1/session", tok, nil); st != 200 {
			t.Fatalf("session of %s made on the file, on the database: %d %v", addr, st, body)
		}
	}
	for _, k := range []string{key, live} {
		must(c.do("GET", "/api/v1/me", k, nil))
	}
	must(c.do("GET", "/api/v1/admin/projects", admin, nil))
	// The project's template, as the file's server stored it.
	tpls := must(c.do("GET", "/api/v1/admin/projects/"+projectID+"/templates", admin, nil))["templates"].([]any)
	if len(tpls) != 1 || !reflect.DeepEqual(tpls[0], tpl) {
		t.Fatalf("templates on the database: %v, want the file's %v", tpls, tpl)
	}
	code, _ = ptotp.GenerateCode(secret, time.Now().Add(30*time.Second))
	must(c.do("POST", "/api/v1/totp/verify", tokens["a@example.com"], map[string]any{"code": code}))
	lstart := must(c.do("POST", "/api/v1/passkey/login/start", key, map[string]any{"email": "d@example.com"}))
	lopts, _ := json.Marshal(lstart["options"])
	assertion, _, err := authn.Get(lopts)
	if err != nil {
		t.Fatal(err)
	}
	must(c.do("POST", "/api/v1/passkey/login/verify", key, map[string]any{"challengeId": lstart["challengeId"], "credential": assertion}))
	must(c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "g@example.com"}))
	login := must(c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "g@example.com", "code": codeTo(t, "latchkey.outbox", "g@example.com")}))
	must(c.do("GET", "/api/v1/session", login["token"].(string), nil))
	// The imported user's sign-in keeps the account the copy carried.
	must(c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "imported@example.com"}))
	imported := must(c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "imported@example.com", "code": codeTo(t, "latchkey.outbox", "imported@example.com")}))
	if imported["userId"] != "0193a0d5-c3d2-7e80-9000-0000000000ee" || imported["isNewUser"] != false {
		t.Fatalf("the copied imported user's sign-in: userId %v isNewUser %v, want the copied account", imported["userId"], imported["isNewUser"])
	}
	users := must(c.do("GET", "/api/v1/admin/users?projectId="+projectID, admin, nil))
	if n := len(users["users"].([]any)); n != 6 {
		t.Fatalf("%d users on the database, want the file's 5 and g@", n)
	}
}

// codeTo waits for the mail task to write a message to addr into the
// outbox directory dir and returns its code.
func codeTo(t *testing.T, dir, addr string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil && bytes.Contains(b, []byte("To: <"+addr+">")) || bytes.Contains(b, []byte("To: "+addr)) {
				if code := regexp.MustCompile(`\b(\d{6})\b`).FindString(string(b)); code != "" {
					return code
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no message to %s in %s", addr, dir)
	return ""
}

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// exportAll returns the records of the data file at path as JSON, by
// kind, sorted; sequence numbers a store assigns again on import are
// left out.
func exportAll(t *testing.T, path string) map[string][]string {
	t.Helper()
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]string{}
	err = db.Export(ctx, func(rec any) error {
		kind := fmt.Sprintf("%T", rec)[len("*store."):]
		switch r := rec.(type) {
		case *store.Delivery:
			c := *r
			c.Seq = 0
			rec = &c
		case *store.Event:
			c := *r
			c.Seq = 0
			rec = &c
		case *store.Mail:
			c := *r
			c.ID = 0
			rec = &c
		case *store.AuthEvent:
			c := *r
			c.Pos = store.EventPos{}
			rec = &c
		case *store.ThrottleRecord:
			kind = "Throttle"
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		out[kind] = append(out[kind], string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, recs := range out {
		sort.Strings(recs)
	}
	return out
}

// TestMigrateCommand: latchkey migrate brings an empty database to the
// binary's schema version and says so; run again it has nothing to do;
// without a database URL it is a usage error.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("needs a database: runs on the postgres pass (LATCHKEY_TEST_STORE=postgres)")
	}
	url := storetest.NewEmpty(t)
	var stdout, stderr bytes.Buffer
	if code := runMigrate(ctx, []string{"--database-url", url}, noEnv, &stdout, &stderr); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr.String())
	}
	want := fmt.Sprintf("Schema version %d, was 0", postgres.SchemaVersion())
	if !strings.Contains(stdout.String(), want) {
		t.Fatalf("migrate printed %q, want %q", stdout.String(), want)
	}
	stdout.Reset()
	env := func(k string) string { return map[string]string{"LATCHKEY_DATABASE_URL": url}[k] }
	if code := runMigrate(ctx, nil, env, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "up to date") {
		t.Fatalf("migrate again (URL from the environment): exit %d: %q %s", code, stdout.String(), stderr.String())
	}
	if code := runMigrate(ctx, []string{"--database-url", "latchkey.db"}, noEnv, &stdout, &stderr); code != 2 {
		t.Fatalf("migrate of a file: exit %d, want 2", code)
	}
}
