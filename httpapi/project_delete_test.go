package httpapi_test

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
	"latchkey/auth/sms"
	"latchkey/store"
)

// TestDeleteProjectRemovesItsData: DELETE /admin/projects/:id removes the
// project's users and everything that could sign anyone in to it, in one
// transaction, emits nothing, detaches its keys (INVALID_API_KEY), keeps
// its authentication events and queued mail, and leaves another project
// alone.
func TestDeleteProjectRemovesItsData(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = &sms.Log{Logger: slog.New(slog.DiscardHandler), Dir: t.TempDir()} })
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID,
		map[string]any{"allowedOrigins": []string{pkOrigin}, "rpId": pkRPID}))
	pid := ts.Project.ID

	// Another project with a signed-in user and a pending code.
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "kept"})
	wantOK(t, r)
	keptKey := ts.createKey(map[string]any{"projectId": str(t, obj(t, r.Body, "project"), "id"), "mode": "test"})
	wantOK(t, ts.do("POST", "/api/v1/otp/send", keptKey, map[string]any{"email": "kept@example.com"}))
	r = ts.do("POST", "/api/v1/otp/verify", keptKey, map[string]any{"email": "kept@example.com", "code": ts.lastMail("kept@example.com").Code})
	wantOK(t, r)
	keptTok := str(t, r.Body, "token")
	wantOK(t, ts.do("POST", "/api/v1/otp/send", keptKey, map[string]any{"email": "later@example.com"}))
	laterCode := ts.lastMail("later@example.com").Code

	// The doomed project: one of everything.
	login := ts.login("ada@example.com")
	tok, uid, device := str(t, login.Body, "token"), str(t, login.Body, "userId"), str(t, login.Body, "deviceToken")
	wantOK(t, ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{}))
	ts.backupCodes(tok)
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}))
	credID := ts.addPasskey(passkeytest.New(pkOrigin), tok)
	challenge := ts.startCeremony("/api/v1/passkey/register/start", tok, map[string]any{})
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "ada@example.com", "code": "AAAAA-AAAAA"}), 401, "INVALID_CODE")
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "bob@example.com"}))
	link := ts.magicToken("carol@example.com", nil)
	directID, directSecret := ts.method("bank_id", "direct")
	body := ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id", "email": "ext@example.com"})
	sig := sign(directSecret, body)
	r = ts.confirm(body, sig)
	wantOK(t, r)
	extTok, extUID := str(t, r.Body, "token"), str(t, r.Body, "userId")
	hookMethodID, hookSecret := ts.method("kyc", "webhook")
	cb := ts.confirmBody(map[string]any{"externalUserId": "k1", "email": "k1@example.com", "reference": "ref-1"})
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/callback/"+hookMethodID, strings.NewReader(string(cb)))
	req.Header.Set("X-Service-Signature", sign(hookSecret, cb))
	wantOK(t, ts.send(req))
	hookID, _ := ts.createWebhook("http://127.0.0.1:9/hook", nil)
	liveKey := ts.createKey(map[string]any{"projectId": pid, "mode": "test"})

	outboxBefore, mailBefore := len(ts.outbox()), ts.mailCount()
	eventsBefore := len(ts.events("?projectId=" + pid))
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+pid, nil))

	// Nothing emitted; queued mail and authentication events kept.
	if n := len(ts.outbox()); n != outboxBefore {
		t.Fatalf("outbox grew from %d to %d on project deletion", outboxBefore, n)
	}
	if n := ts.mailCount(); n != mailBefore {
		t.Fatalf("mail queue %d, was %d", n, mailBefore)
	}
	if n := len(ts.events("?projectId=" + pid)); n != eventsBefore {
		t.Fatalf("authentication events %d, were %d", n, eventsBefore)
	}

	// The keys are detached: INVALID_API_KEY, listed without a project.
	for _, key := range []string{ts.Key, liveKey} {
		wantError(t, ts.do("GET", "/api/v1/me", key, nil), 401, "INVALID_API_KEY")
	}
	r = ts.admin("GET", "/api/v1/admin/keys?projectId="+pid, nil)
	wantOK(t, r)
	if n := len(r.Body["apiKeys"].([]any)); n != 0 {
		t.Fatalf("%d keys still listed under the deleted project", n)
	}
	detached := 0
	for _, k := range ts.admin("GET", "/api/v1/admin/keys", nil).Body["apiKeys"].([]any) {
		k := k.(map[string]any)
		if p := k["prefix"].(string); (p == ts.Key[:16] || p == liveKey[:16]) && k["projectId"] == nil {
			detached++
		}
	}
	if detached != 2 {
		t.Fatalf("%d of the project's 2 keys listed without a project", detached)
	}

	// Sessions, links and the admin view are gone.
	for _, tk := range []string{tok, extTok} {
		wantError(t, ts.do("GET", "/api/v1/session", tk, nil), 401, "INVALID_SESSION")
	}
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil), 401, "INVALID_TOKEN")
	wantError(t, ts.admin("GET", "/api/v1/admin/users?projectId="+pid, nil), 404, "PROJECT_NOT_FOUND")

	// Row by row.
	gone := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: err=%v, want it deleted", what, err)
		}
	}
	ts.DB.View(ctx, func(tx store.Tx) error {
		for _, id := range []string{uid, extUID} {
			_, err := tx.User(id)
			gone("user "+id, err)
			if s, err := tx.UserSessions(id); err != nil || len(s) != 0 {
				t.Fatalf("sessions of %s: %v (%v)", id, s, err)
			}
		}
		for _, addr := range []string{"ada@example.com", "ext@example.com"} {
			_, err := tx.UserByEmail(pid, addr)
			gone("email index "+addr, err)
		}
		_, err := tx.UserByExternalID(pid, "ext-1")
		gone("external id index", err)
		_, err = tx.Factor(uid, "totp")
		gone("TOTP factor", err)
		_, err = tx.BackupCodes(uid)
		gone("backup codes", err)
		_, err = tx.Passkey(pid, credID)
		gone("passkey", err)
		if pks, _ := tx.UserPasskeys(pid, uid); len(pks) != 0 {
			t.Fatalf("passkey index: %d", len(pks))
		}
		_, err = tx.Challenge(challenge.ID)
		gone("challenge", err)
		_, err = tx.Code("otp", pid, "bob@example.com")
		gone("OTP code", err)
		_, err = tx.Code("sms", pid, uid)
		gone("SMS code", err)
		_, err = tx.Code("replay", directID, sig)
		gone("replay mark", err)
		for _, th := range []struct{ kind, subject string }{{"otp", "bob@example.com"}, {"magic", "carol@example.com"}, {"backup_fail", uid}, {"sms_send", uid}} {
			h, err := tx.Throttle(th.kind, pid, th.subject)
			if err != nil || len(h.Sends) != 0 {
				t.Fatalf("%s send history of %s: %v %v", th.kind, th.subject, h, err)
			}
		}
		lh := ts.Keys.HashString("magic", link)
		_, err = tx.MagicLink(lh[:])
		gone("magic link", err)
		raw, _ := base64.RawURLEncoding.DecodeString(device)
		_, err = tx.Device(raw[:16])
		gone("device", err)
		_, err = tx.ExternalMethod(directID)
		gone("external method", err)
		gh := ts.Keys.HashString("grant", hookMethodID+"\x00ref-1")
		_, err = tx.Grant(gh[:])
		gone("grant", err)
		_, err = tx.Webhook(pid, hookID)
		gone("webhook", err)
		return nil
	})

	// The other project is untouched.
	wantOK(t, ts.do("GET", "/api/v1/session", keptTok, nil))
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", keptKey, map[string]any{"email": "later@example.com", "code": laterCode}))
}
