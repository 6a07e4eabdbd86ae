package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"latchkey/auth/passkeytest"
	"latchkey/store"
)

// The relying party the passkey tests configure through the admin API.
const (
	pkOrigin = "https://app.example.com"
	pkRPID   = "example.com"
)

// newPasskeyServer is newTestServer with the default project's relying
// party set to pkOrigin / pkRPID through the admin API, and a software
// authenticator for pages at pkOrigin.
func newPasskeyServer(t *testing.T) (*testServer, *passkeytest.Authenticator) {
	t.Helper()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID,
		map[string]any{"allowedOrigins": []string{pkOrigin}, "rpId": pkRPID}))
	return ts, passkeytest.New(pkOrigin)
}

// ceremony is a started WebAuthn ceremony as /start answered it.
type ceremony struct {
	ID      string
	Options json.RawMessage
	Body    map[string]any // the options object, decoded
}

// startCeremony calls a /passkey/.../start endpoint and returns the ceremony.
func (ts *testServer) startCeremony(path, token string, body any) ceremony {
	ts.t.Helper()
	r := ts.do("POST", path, token, body)
	wantOK(ts.t, r)
	opts := obj(ts.t, r.Body, "options")
	raw, err := json.Marshal(opts)
	if err != nil {
		ts.t.Fatal(err)
	}
	return ceremony{ID: str(ts.t, r.Body, "challengeId"), Options: raw, Body: opts}
}

// verify calls a /passkey/.../verify endpoint with a credential.
func (ts *testServer) verify(path, token, challengeID string, credential json.RawMessage) *response {
	ts.t.Helper()
	return ts.do("POST", path, token, map[string]any{"challengeId": challengeID, "credential": credential})
}

// create runs the authenticator's create on c, failing the test on error.
func create(t testing.TB, a *passkeytest.Authenticator, c ceremony, tw ...passkeytest.Tweak) (json.RawMessage, *passkeytest.Credential) {
	t.Helper()
	cred, held, err := a.Create(c.Options, tw...)
	if err != nil {
		t.Fatal(err)
	}
	return cred, held
}

// get runs the authenticator's get on c, failing the test on error.
func assertion(t testing.TB, a *passkeytest.Authenticator, c ceremony, tw ...passkeytest.Tweak) json.RawMessage {
	t.Helper()
	cred, _, err := a.Get(c.Options, tw...)
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// passkeySignUp signs addr up with a passkey of a (API key + email) and
// returns the verify response.
func (ts *testServer) passkeySignUp(a *passkeytest.Authenticator, addr string) *response {
	ts.t.Helper()
	c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": addr})
	cred, _ := create(ts.t, a, c)
	r := ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, cred)
	wantOK(ts.t, r)
	return r
}

// addPasskey registers a passkey of a for the session token's user.
func (ts *testServer) addPasskey(a *passkeytest.Authenticator, token string) string {
	ts.t.Helper()
	c := ts.startCeremony("/api/v1/passkey/register/start", token, map[string]any{})
	cred, _ := create(ts.t, a, c)
	r := ts.verify("/api/v1/passkey/register/verify", token, c.ID, cred)
	wantOK(ts.t, r)
	return str(ts.t, r.Body, "credentialId")
}

// passkeyLogin signs in with a passkey of a, by email when addr is set,
// discoverable otherwise, and returns the verify response.
func (ts *testServer) passkeyLogin(a *passkeytest.Authenticator, addr string, tw ...passkeytest.Tweak) *response {
	ts.t.Helper()
	body := map[string]any{}
	if addr != "" {
		body["email"] = addr
	}
	c := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, body)
	return ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, assertion(ts.t, a, c, tw...))
}

// listPasskeys returns GET /passkeys for token, checking the shape.
func (ts *testServer) listPasskeys(token string) []map[string]any {
	ts.t.Helper()
	r := ts.do("GET", "/api/v1/passkeys", token, nil)
	wantOK(ts.t, r)
	return passkeyItems(ts.t, r)
}

// passkeyItems checks a list body is exactly {success, passkeys:[{credentialId, createdAt}]}.
func passkeyItems(t testing.TB, r *response) []map[string]any {
	t.Helper()
	if len(r.Body) != 2 {
		t.Fatalf("list body=%s, want exactly success and passkeys", r.Raw)
	}
	list, ok := r.Body["passkeys"].([]any)
	if !ok {
		t.Fatalf("passkeys is %T, want array (body %s)", r.Body["passkeys"], r.Raw)
	}
	out := make([]map[string]any, len(list))
	for i, v := range list {
		item, ok := v.(map[string]any)
		if !ok || len(item) != 2 {
			t.Fatalf("passkeys[%d]=%v, want {credentialId, createdAt}", i, v)
		}
		str(t, item, "credentialId")
		str(t, item, "createdAt")
		out[i] = item
	}
	return out
}

// credentialIDs returns the credentialIds of a list.
func credentialIDs(items []map[string]any) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it["credentialId"].(string)
	}
	return ids
}

// lastAuthEvent returns the project's newest authentication event.
func (ts *testServer) lastAuthEvent() map[string]any {
	ts.t.Helper()
	r := ts.admin("GET", "/api/v1/admin/events?limit=1&projectId="+ts.Project.ID, nil)
	wantOK(ts.t, r)
	evs, _ := r.Body["events"].([]any)
	if len(evs) != 1 {
		ts.t.Fatalf("events=%s, want one", r.Raw)
	}
	return evs[0].(map[string]any)
}

// wantAuthEvent fails unless the newest authentication event is a passkey
// event with action and failureCode (nil: a success).
func (ts *testServer) wantAuthEvent(action string, failureCode any) {
	ts.t.Helper()
	e := ts.lastAuthEvent()
	if e["method"] != "passkey" || e["action"] != action || e["failureCode"] != failureCode || e["success"] != (failureCode == nil) {
		ts.t.Fatalf("last event=%v, want passkey %s failureCode=%v", e, action, failureCode)
	}
}

// storedCredential returns go-webauthn's record of a stored passkey.
func (ts *testServer) storedCredential(credentialID string) (*store.Passkey, webauthn.Credential) {
	ts.t.Helper()
	var pk *store.Passkey
	err := ts.DB.View(ctx, func(tx store.Tx) error {
		var err error
		pk, err = tx.Passkey(ts.Project.ID, credentialID)
		return err
	})
	if err != nil {
		ts.t.Fatalf("passkey %s: %v", credentialID, err)
	}
	var c webauthn.Credential
	if err := json.Unmarshal(pk.Credential, &c); err != nil {
		ts.t.Fatal(err)
	}
	return pk, c
}

// TestPasskeyEndToEnd drives the whole life of passkeys over HTTP with
// software authenticators: sign-up with an API key and an email, a second
// passkey added with the session, the list, sign-in by email and
// discoverable, removal, and the events each step writes.
func TestPasskeyEndToEnd(t *testing.T) {
	t.Parallel()
	ts, phone := newPasskeyServer(t)
	const addr = "pat@example.com"
	ts.Clock.Advance(123456 * time.Microsecond) // createdAt shows microseconds

	// Sign-up: the options are go-webauthn's creation options for the
	// project's relying party, also under "publicKey".
	c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": " Pat@Example.com "})
	pub := obj(t, c.Body, "publicKey")
	rp, user := obj(t, pub, "rp"), obj(t, pub, "user")
	if rp["id"] != pkRPID || rp["name"] != ts.Project.Name || user["name"] != addr || pub["timeout"] != 300000.0 {
		t.Fatalf("creation options=%s", c.Options)
	}
	if str(t, pub, "challenge") == "" || obj(t, pub, "extensions")["credProps"] != true {
		t.Fatalf("creation options want a challenge and the credProps extension: %s", c.Options)
	}
	for k, v := range pub {
		if !reflect.DeepEqual(c.Body[k], v) {
			t.Fatalf("options.%s=%v differs from options.publicKey.%s=%v", k, c.Body[k], k, v)
		}
	}
	cred, held := create(t, phone, c)
	r := ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, cred)
	wantOK(t, r)
	credID := str(t, r.Body, "credentialId")
	if credID != held.IDString() {
		t.Fatalf("credentialId=%s, want the credential's id %s", credID, held.IDString())
	}
	tok, userID := str(t, r.Body, "token"), str(t, r.Body, "userId")
	str(t, r.Body, "deviceToken")
	u := obj(t, r.Body, "user")
	if u["id"] != userID || u["email"] != addr || u["externalUserId"] != nil || u["first_name"] != nil || r.Body["isNewUser"] != true {
		t.Fatalf("sign-up login result=%s", r.Raw)
	}
	if v, ok := r.Body["companyId"]; !ok || v != nil {
		t.Fatalf("companyId=%v, want null (body %s)", v, r.Raw)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
	ts.wantAuthEvent("register", nil)

	// A second passkey (a roaming security key) added with the session;
	// the options exclude the first, which the phone therefore refuses.
	ts.Clock.Advance(time.Second)
	key := passkeytest.New(pkOrigin)
	key.BackupEligible, key.BackedUp, key.Transports, key.Attachment = false, false, []string{"usb", "nfc"}, "cross-platform"
	c = ts.startCeremony("/api/v1/passkey/register/start", tok, map[string]any{})
	ex, _ := c.Body["excludeCredentials"].([]any)
	if len(ex) != 1 || ex[0].(map[string]any)["id"] != credID {
		t.Fatalf("excludeCredentials=%v, want the first passkey", c.Body["excludeCredentials"])
	}
	if _, _, err := phone.Create(c.Options); err == nil {
		t.Fatal("the phone created a second credential despite excludeCredentials")
	}
	cred2, _ := create(t, key, c)
	r = ts.verify("/api/v1/passkey/register/verify", tok, c.ID, cred2)
	wantOK(t, r)
	if len(r.Body) != 2 {
		t.Fatalf("add-passkey body=%s, want exactly {success, credentialId}", r.Raw)
	}
	keyID := str(t, r.Body, "credentialId")

	// The list: oldest first, createdAt UTC without zone, microseconds.
	items := ts.listPasskeys(tok)
	want := []map[string]any{
		{"credentialId": credID, "createdAt": "2026-11-22T10:00:00.123456"},
		{"credentialId": keyID, "createdAt": "2026-11-22T10:00:01.123456"},
	}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("passkeys=%v, want %v", items, want)
	}

	// Sign-in by email offers both passkeys.
	c = ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{"email": addr})
	allow, _ := c.Body["allowCredentials"].([]any)
	if len(allow) != 2 || c.Body["rpId"] != pkRPID || c.Body["timeout"] != 300000.0 {
		t.Fatalf("request options=%s", c.Options)
	}
	r = ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, assertion(t, phone, c))
	wantOK(t, r)
	if r.Body["userId"] != userID || obj(t, r.Body, "user")["email"] != addr || str(t, r.Body, "token") == "" || str(t, r.Body, "deviceToken") == "" {
		t.Fatalf("login result=%s", r.Raw)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, r.Body, "token"), nil))
	ts.wantAuthEvent("login", nil)

	// Discoverable sign-in: no email, no allow list; the user handle
	// names the user.
	c = ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
	if _, ok := c.Body["allowCredentials"]; ok {
		t.Fatalf("discoverable options carry allowCredentials: %s", c.Options)
	}
	r = ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, assertion(t, key, c))
	wantOK(t, r)
	if r.Body["userId"] != userID {
		t.Fatalf("discoverable login userId=%v, want %s", r.Body["userId"], userID)
	}

	// Removal: the key goes, a second delete is 404, the key no longer signs in.
	wantOK(t, ts.do("DELETE", "/api/v1/passkeys/"+keyID, tok, nil))
	if got := credentialIDs(ts.listPasskeys(tok)); !reflect.DeepEqual(got, []string{credID}) {
		t.Fatalf("after delete passkeys=%v, want [%s]", got, credID)
	}
	ts.wantAuthEvent("remove", nil)
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/"+keyID, tok, nil), 404, "PASSKEY_NOT_FOUND")
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/AAAA", tok, nil), 404, "PASSKEY_NOT_FOUND")
	wantError(t, ts.passkeyLogin(key, ""), 401, "INVALID_CREDENTIAL")
	wantOK(t, ts.passkeyLogin(phone, addr))

	// Outbox: sign-up is user.registered, passkey.registered and
	// session.created in one transaction; then the rest in order.
	var types []string
	for _, e := range ts.outboxSince(0) {
		types = append(types, e.Type)
		switch e.Type {
		case "passkey.registered", "passkey.removed":
			if len(e.Data) != 2 || e.Data["user_id"] != userID || e.Data["credential_id"] == "" {
				t.Fatalf("%s data=%v, want {user_id, credential_id}", e.Type, e.Data)
			}
		case "user.registered":
			if e.Data["user_id"] != userID || e.Data["email"] != addr {
				t.Fatalf("user.registered data=%v", e.Data)
			}
		case "session.created":
			if e.Data["method"] != "passkey" {
				t.Fatalf("session.created data=%v, want method passkey", e.Data)
			}
		}
	}
	wantTypes := []string{"user.registered", "passkey.registered", "session.created", // sign-up
		"passkey.registered", "session.created", "session.created", "passkey.removed", "session.created"}
	if !reflect.DeepEqual(types, wantTypes) {
		t.Fatalf("outbox=%v, want %v", types, wantTypes)
	}
	if ev := ts.outboxSince(0); ev[6].Data["credential_id"] != keyID || ev[1].Data["credential_id"] != credID {
		t.Fatalf("passkey events name the wrong credentials: %v", ev)
	}
}

// TestPasskeyStoredRecord: a stored credential keeps the public key, sign
// count, transports, AAGUID, backup flags and createdAt, and a sign-in
// advances the count and stamps lastUsedAt.
func TestPasskeyStoredRecord(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	a.BackedUp = false // BE without BS: a synced passkey not yet backed up
	r := ts.passkeySignUp(a, "rec@example.com")
	id, userID := str(t, r.Body, "credentialId"), str(t, r.Body, "userId")
	held := a.Credentials()[0]

	pk, c := ts.storedCredential(id)
	if pk.UserID != userID || pk.ProjectID != ts.Project.ID || !pk.CreatedAt.Equal(ts.Clock.Now()) || pk.LastUsedAt != nil {
		t.Fatalf("stored row=%+v", pk)
	}
	raw, err := held.Key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(c.PublicKey, raw[1:33]) || !bytes.Contains(c.PublicKey, raw[33:]) {
		t.Fatal("stored public key is not the authenticator's")
	}
	var transports []string
	for _, tr := range c.Transport {
		transports = append(transports, string(tr))
	}
	if !bytes.Equal(c.ID, held.ID) || !bytes.Equal(c.Authenticator.AAGUID, a.AAGUID[:]) || c.Authenticator.SignCount != 0 ||
		!reflect.DeepEqual(transports, []string{"internal", "hybrid"}) || !c.Flags.BackupEligible || c.Flags.BackupState ||
		!c.Flags.UserPresent || !c.Flags.UserVerified || c.AttestationFormat != "none" {
		t.Fatalf("stored credential=%+v", c)
	}

	ts.Clock.Advance(time.Minute)
	a.BackedUp = true
	wantOK(t, ts.passkeyLogin(a, ""))
	pk, c = ts.storedCredential(id)
	if c.Authenticator.SignCount != 1 || !c.Flags.BackupState || pk.LastUsedAt == nil || !pk.LastUsedAt.Equal(ts.Clock.Now()) {
		t.Fatalf("after sign-in: signCount=%d backupState=%v lastUsedAt=%v", c.Authenticator.SignCount, c.Flags.BackupState, pk.LastUsedAt)
	}
}

// TestPasskeyRelyingPartyDefaults: without an rpId the relying party is
// the first allowed origin's host; without origins, the base URL's host
// and origin, a loopback address standing as "localhost" (an IP cannot
// be a WebAuthn rpId). A ceremony from an origin not allowed fails.
func TestPasskeyRelyingPartyDefaults(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rpID := func() any {
		c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "rp@example.com"})
		return obj(t, c.Body, "rp")["id"]
	}
	// The default project's origin is http://localhost:3000.
	if got := rpID(); got != "localhost" {
		t.Fatalf("rp.id=%v, want localhost", got)
	}
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{"https://shop.example.org:8443", "https://other.example"}}))
	if got := rpID(); got != "shop.example.org" {
		t.Fatalf("rp.id=%v, want shop.example.org", got)
	}

	// No origins: the base URL (http://127.0.0.1:port), by that address
	// and as localhost.
	r := ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{}})
	wantOK(t, r)
	if got := obj(t, r.Body, "project")["rpId"]; got != "localhost" {
		t.Fatalf("project rpId=%v, want localhost", got)
	}
	port := ts.URL[len("http://127.0.0.1:"):]
	for i, origin := range []string{ts.URL, "http://localhost:" + port} {
		a := passkeytest.New(origin)
		r := ts.passkeySignUp(a, []string{"base1@example.com", "base2@example.com"}[i])
		if got := ts.passkeyLogin(a, ""); got.Body["userId"] != r.Body["userId"] {
			t.Fatalf("sign-in from %s: %s", origin, got.Raw)
		}
	}
	c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "stranger@example.com"})
	cred, _ := create(t, passkeytest.New("http://localhost:3000"), c)
	wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, cred), 400, "INVALID_CREDENTIAL")

	// An IP address cannot be the rpId: refused when set, and a project
	// whose first origin is a non-loopback address gets a clear 400.
	wantError(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rpId": "192.0.2.7"}), 400, "VALIDATION_ERROR")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{"http://192.0.2.7:3000"}}))
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "ip@example.com"}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", ts.Key, map[string]any{}), 400, "VALIDATION_ERROR")
}

// TestPasskeyByExternal: the API-key management calls find the user by
// externalUserId; unknown ids and other users' credentials are 404; over
// the key's rate they answer 401 RATE_LIMIT_EXCEEDED, not 429.
func TestPasskeyByExternal(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	// A user with an externalUserId (attached at otp/verify) adds a passkey.
	const addr = "ext@example.com"
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": ts.lastMail(addr).Code, "externalUserId": "ext-1"})
	wantOK(t, r)
	tok := str(t, r.Body, "token")
	first := ts.addPasskey(a, tok)
	ts.Clock.Advance(time.Second)
	second := ts.addPasskey(passkeytest.New(pkOrigin), tok)
	other := str(t, ts.passkeySignUp(passkeytest.New(pkOrigin), "other@example.com").Body, "credentialId")

	r = ts.do("GET", "/api/v1/passkeys/by-external?externalUserId=ext-1", ts.Key, nil)
	wantOK(t, r)
	if got := credentialIDs(passkeyItems(t, r)); !reflect.DeepEqual(got, []string{first, second}) {
		t.Fatalf("by-external list=%v, want [%s %s]", got, first, second)
	}
	if !reflect.DeepEqual(passkeyItems(t, r), ts.listPasskeys(tok)) {
		t.Fatal("by-external list differs from the session's list")
	}
	wantError(t, ts.do("GET", "/api/v1/passkeys/by-external?externalUserId=nobody", ts.Key, nil), 404, "USER_NOT_FOUND")
	wantError(t, ts.do("GET", "/api/v1/passkeys/by-external", ts.Key, nil), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("GET", "/api/v1/passkeys/by-external?externalUserId=ext-1", tok, nil), 401, "INVALID_FORMAT")

	wantError(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+other+"?externalUserId=ext-1", ts.Key, nil), 404, "PASSKEY_NOT_FOUND")
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+first+"?externalUserId=nobody", ts.Key, nil), 404, "PASSKEY_NOT_FOUND")
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+first, ts.Key, nil), 400, "VALIDATION_ERROR")
	wantOK(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+first+"?externalUserId=ext-1", ts.Key, nil))
	ts.wantAuthEvent("remove", nil)
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+first+"?externalUserId=ext-1", ts.Key, nil), 404, "PASSKEY_NOT_FOUND")
	if got := credentialIDs(ts.listPasskeys(tok)); !reflect.DeepEqual(got, []string{second}) {
		t.Fatalf("after delete passkeys=%v, want [%s]", got, second)
	}
	if ev := ts.outboxSince(0); ev[len(ev)-1].Type != "passkey.removed" || ev[len(ev)-1].Data["credential_id"] != first {
		t.Fatalf("last outbox event=%v, want passkey.removed of %s", ev[len(ev)-1], first)
	}

	// The rate limit: 401 on both by-external calls, 429 elsewhere.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 3}))
	key := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "test"})
	for i := 0; i < 3; i++ {
		wantOK(t, ts.do("GET", "/api/v1/passkeys/by-external?externalUserId=ext-1", key, nil))
	}
	for _, r := range []*response{
		ts.do("GET", "/api/v1/passkeys/by-external?externalUserId=ext-1", key, nil),
		ts.do("DELETE", "/api/v1/passkeys/by-external/"+second+"?externalUserId=ext-1", key, nil),
	} {
		wantError(t, r, 401, "RATE_LIMIT_EXCEEDED")
		if r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("rate-limited headers=%v", r.Header)
		}
	}
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", key, map[string]any{}), 429, "RATE_LIMIT_EXCEEDED")
	if got := credentialIDs(ts.listPasskeys(tok)); !reflect.DeepEqual(got, []string{second}) {
		t.Fatalf("a rate-limited delete removed a passkey: %v", got)
	}
	ts.Clock.Advance(time.Minute)
	wantOK(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+second+"?externalUserId=ext-1", key, nil))
}

// TestPasskeyIsolation: a user never sees or deletes another user's
// credential, nor a project another project's, and a credential or
// challenge of one project means nothing in another.
func TestPasskeyIsolation(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	r1 := ts.passkeySignUp(a, "one@example.com")
	tok1, cred1 := str(t, r1.Body, "token"), str(t, r1.Body, "credentialId")
	b := passkeytest.New(pkOrigin)
	r2 := ts.passkeySignUp(b, "two@example.com")
	tok2, cred2 := str(t, r2.Body, "token"), str(t, r2.Body, "credentialId")

	if got := credentialIDs(ts.listPasskeys(tok2)); !reflect.DeepEqual(got, []string{cred2}) {
		t.Fatalf("user two sees %v", got)
	}
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/"+cred1, tok2, nil), 404, "PASSKEY_NOT_FOUND")
	if got := credentialIDs(ts.listPasskeys(tok1)); !reflect.DeepEqual(got, []string{cred1}) {
		t.Fatalf("user one's passkeys after user two's delete: %v", got)
	}
	// Signing in "as one" with two's passkey: generic 401.
	wantError(t, ts.passkeyLogin(b, "one@example.com", passkeytest.Tweak{Credential: b.Credentials()[0]}), 401, "INVALID_CREDENTIAL")
	ts.wantAuthEvent("login", "user_not_found")

	// Another project with the same relying party and its own key.
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other", "allowedOrigins": []string{pkOrigin}, "rpId": pkRPID})
	wantOK(t, r)
	otherProject := str(t, obj(t, r.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherProject, "mode": "test"})
	c := ts.startCeremony("/api/v1/passkey/login/start", otherKey, map[string]any{})
	wantError(t, ts.verify("/api/v1/passkey/login/verify", otherKey, c.ID, assertion(t, a, c)), 401, "INVALID_CREDENTIAL")
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/by-external/"+cred1+"?externalUserId=x", otherKey, nil), 404, "PASSKEY_NOT_FOUND")

	// A challenge of the first project is unknown to the other, and
	// survives the attempt.
	c = ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{"email": "one@example.com"})
	cred := assertion(t, a, c)
	wantError(t, ts.verify("/api/v1/passkey/login/verify", otherKey, c.ID, cred), 400, "CHALLENGE_EXPIRED")
	wantOK(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, cred))

	// The other project's user with the same email is a different user.
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", otherKey, map[string]any{"email": "one@example.com"}), 404, "USER_NOT_FOUND")
	c = ts.startCeremony("/api/v1/passkey/register/start", otherKey, map[string]any{"email": "one@example.com"})
	credB, _ := create(t, a, c)
	r = ts.verify("/api/v1/passkey/register/verify", otherKey, c.ID, credB)
	wantOK(t, r)
	if r.Body["userId"] == r1.Body["userId"] {
		t.Fatal("the same email in two projects is one user")
	}
	if got := credentialIDs(ts.listPasskeys(str(t, r.Body, "token"))); len(got) != 1 || got[0] == cred1 {
		t.Fatalf("other project's user lists %v", got)
	}
	if got := credentialIDs(ts.listPasskeys(tok1)); !reflect.DeepEqual(got, []string{cred1}) {
		t.Fatalf("user one's passkeys now %v", got)
	}
}

// TestPasskeyDisabledUser: a disabled user's valid passkey gets 403
// USER_DISABLED at sign-in (by email already at start); enabling again
// restores it.
func TestPasskeyDisabledUser(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	const addr = "off@example.com"
	r := ts.passkeySignUp(a, addr)
	tok, id := str(t, r.Body, "token"), str(t, r.Body, "userId")
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+id+"/disable", nil))

	wantError(t, ts.passkeyLogin(a, ""), 403, "USER_DISABLED")
	ts.wantAuthEvent("login", "user_disabled")
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", ts.Key, map[string]any{"email": addr}), 403, "USER_DISABLED")
	ts.wantAuthEvent("login_start", "user_disabled")
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}), 401, "INVALID_SESSION")
	wantError(t, ts.do("GET", "/api/v1/passkeys", tok, nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": addr}), 409, "USER_EXISTS")

	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+id+"/enable", nil))
	wantOK(t, ts.passkeyLogin(a, addr))
}

// TestPasskeyUserExists: sign-up for an email that has an account is 409
// USER_EXISTS at start, and at verify when the account appeared meanwhile.
func TestPasskeyUserExists(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	ts.login("taken@example.com")
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "TAKEN@example.com"}), 409, "USER_EXISTS")
	ts.wantAuthEvent("register_start", "user_exists")

	c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "late@example.com"})
	ts.login("late@example.com")
	cred, _ := create(t, a, c)
	wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, cred), 409, "USER_EXISTS")
	ts.wantAuthEvent("register", "user_exists")
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID+"&email=late@example.com", nil)
	wantOK(t, r)
	if users := r.Body["users"].([]any); len(users) != 1 {
		t.Fatalf("users=%v, want only the OTP account", users)
	}
	if n := len(ts.outboxSince(0)); n != 4 { // two OTP sign-ups: user.registered + session.created each
		t.Fatalf("outbox has %d events, want 4 (no passkey events)", n)
	}
}

// TestPasskeyLoginStartUnknown: sign-in by email needs an account with a
// passkey: otherwise 404 USER_NOT_FOUND (an enrolment lookup), recorded
// as user_not_found.
func TestPasskeyLoginStartUnknown(t *testing.T) {
	t.Parallel()
	ts, _ := newPasskeyServer(t)
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", ts.Key, map[string]any{"email": "nobody@example.com"}), 404, "USER_NOT_FOUND")
	ts.wantAuthEvent("login_start", "user_not_found")
	ts.login("nopasskey@example.com")
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", ts.Key, map[string]any{"email": "nopasskey@example.com"}), 404, "USER_NOT_FOUND")
}

// TestPasskeyDenyList: a denied end-user IP cannot start a sign-up or a
// sign-in.
func TestPasskeyDenyList(t *testing.T) {
	t.Parallel()
	ts, _ := newPasskeyServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"denyCidrs": []string{"203.0.113.0/24"}}))
	for _, path := range []string{"/api/v1/passkey/register/start", "/api/v1/passkey/login/start"} {
		req, _ := http.NewRequest("POST", ts.URL+path, bytes.NewReader([]byte(`{"email":"deny@example.com"}`)))
		req.Header.Set("Authorization", "Bearer "+ts.Key)
		req.Header.Set("X-End-User-IP", "203.0.113.5")
		wantError(t, ts.send(req), 403, "RISK_BLOCKED")
	}
}
