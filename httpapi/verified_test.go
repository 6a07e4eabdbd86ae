package httpapi_test

import (
	"net/url"
	"strings"
	"testing"

	"latchkey/auth/passkeytest"
	"latchkey/store"
)

// emailLogin signs addr in by OTP or by magic link and returns the login
// result.
func (ts *testServer) emailLogin(how, addr string) *response {
	ts.t.Helper()
	if how == "otp" {
		return ts.login(addr)
	}
	r := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(ts.magicToken(addr, nil)), "", nil)
	wantOK(ts.t, r)
	return r
}

// loginUser returns the user object of a login result.
func loginUser(t testing.TB, r *response) map[string]any {
	t.Helper()
	return obj(t, r.Body, "user")
}

// TestPasskeySignUpCannotCaptureAddress performs the attack of issue 13
// finding 1: an attacker with an API key signs the victim's address up
// with the attacker's passkey. Before, the victim's later sign-in by code
// or link landed in that account (isNewUser:false) and the attacker's
// passkey kept working. Now the sign-in that proves the address replaces
// the unverified account: a new user (isNewUser:true, user.registered),
// the old one deleted with its sessions and passkeys (user.deleted), and
// the attacker's passkey and session dead.
func TestPasskeySignUpCannotCaptureAddress(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"otp", "magic"} {
		t.Run(how, func(t *testing.T) {
			ts, attacker := newPasskeyServer(t)
			signUp := ts.passkeySignUp(attacker, "victim@example.com")
			attackerID, attackerTok := str(t, signUp.Body, "userId"), str(t, signUp.Body, "token")
			if u := loginUser(t, signUp); u["emailVerified"] != false {
				t.Fatalf("passkey sign-up user=%v, want emailVerified false", u)
			}
			n := len(ts.outbox())

			victim := ts.emailLogin(how, "victim@example.com")
			victimID := str(t, victim.Body, "userId")
			if victimID == attackerID || victim.Body["isNewUser"] != true {
				t.Fatalf("victim signed in to userId %s isNewUser %v, want a new user (attacker's is %s)", victimID, victim.Body["isNewUser"], attackerID)
			}
			if u := loginUser(t, victim); u["emailVerified"] != true || u["email"] != "victim@example.com" {
				t.Fatalf("victim user=%v", u)
			}
			var types []string
			for _, e := range ts.outboxSince(n) {
				types = append(types, e.Type)
			}
			if got := strings.Join(types, ","); got != "session.revoked,user.deleted,user.registered,session.created" {
				t.Fatalf("events %s, want the attacker's session revoked, user.deleted, user.registered, session.created", got)
			}
			if d := ts.outboxSince(n)[1].Data; d["user_id"] != attackerID {
				t.Fatalf("user.deleted for %v, want %s", d["user_id"], attackerID)
			}

			// The attacker's passkey and session are gone.
			wantError(t, ts.passkeyLogin(attacker, ""), 401, "INVALID_CREDENTIAL")
			wantError(t, ts.do("GET", "/api/v1/user", attackerTok, nil), 401, "INVALID_SESSION")
			if pks := ts.listPasskeys(str(t, victim.Body, "token")); len(pks) != 0 {
				t.Fatalf("victim's account has passkeys %v", pks)
			}
			// The address is proven now: a passkey sign-up for it is refused.
			wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "victim@example.com"}), 409, "USER_EXISTS")
		})
	}
}

// TestPasskeyUserKeepsAccountByConfirming: a passkey user proves their
// address from their session (POST /user/email/send, then verify) and
// keeps their account: a later sign-in by code lands in it.
func TestPasskeyUserKeepsAccountByConfirming(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	signUp := ts.passkeySignUp(a, "pk@example.com")
	uid, tok := str(t, signUp.Body, "userId"), str(t, signUp.Body, "token")

	wantOK(t, ts.do("POST", "/api/v1/user/email/send", tok, map[string]any{}))
	if k := ts.lastMailKind("pk@example.com"); k != "email_change" {
		t.Fatalf("mail kind %q, want email_change", k)
	}
	n := len(ts.outbox())
	r := ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": ts.lastMail("pk@example.com").Code})
	wantOK(t, r)
	u := obj(t, r.Body, "user")
	if len(r.Body) != 2 || u["id"] != uid || u["email"] != "pk@example.com" || u["emailVerified"] != true || u["externalUserId"] != nil {
		t.Fatalf("verify answered %s", r.Raw)
	}
	if ev := ts.outboxSince(n); len(ev) != 0 {
		t.Fatalf("confirming the current address emitted %v", ev)
	}
	if got := obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user")["emailVerified"]; got != true {
		t.Fatalf("GET /user emailVerified=%v", got)
	}

	login := ts.login("pk@example.com")
	if login.Body["userId"] != uid || login.Body["isNewUser"] != false {
		t.Fatalf("login userId=%v isNewUser=%v, want the same account", login.Body["userId"], login.Body["isNewUser"])
	}
	wantOK(t, ts.passkeyLogin(a, "pk@example.com"))
	if c := ts.methodEvents("email_verify", "send"); c[""] != 1 {
		t.Fatalf("email_verify send events %v", c)
	}
	if c := ts.methodEvents("email_verify", "verify"); c[""] != 1 {
		t.Fatalf("email_verify verify events %v", c)
	}
}

// TestEmailVerifiedShown: emailVerified appears in GET /user, GET /me
// with a JWT, every login result's user and the admin user list; a
// sign-in by code makes it true, a passkey sign-up false.
func TestEmailVerifiedShown(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	otp := ts.login("otp@example.com")
	pk := ts.passkeySignUp(a, "pk@example.com")
	for _, c := range []struct {
		name  string
		login *response
		want  bool
	}{{"otp", otp, true}, {"passkey sign-up", pk, false}} {
		tok := str(t, c.login.Body, "token")
		if got := loginUser(t, c.login)["emailVerified"]; got != c.want {
			t.Fatalf("%s: login result emailVerified=%v, want %v", c.name, got, c.want)
		}
		for _, path := range []string{"/api/v1/user", "/api/v1/me"} {
			r := ts.do("GET", path, tok, nil)
			wantOK(t, r)
			if got := obj(t, r.Body, "user")["emailVerified"]; got != c.want {
				t.Fatalf("%s: %s emailVerified=%v, want %v", c.name, path, got, c.want)
			}
		}
	}
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	wantOK(t, r)
	got := map[string]any{}
	for _, u := range r.Body["users"].([]any) {
		got[u.(map[string]any)["email"].(string)] = u.(map[string]any)["emailVerified"]
	}
	if got["otp@example.com"] != true || got["pk@example.com"] != false {
		t.Fatalf("admin list emailVerified %v", got)
	}
	// A passkey login keeps the account unverified; the login result says so.
	if u := loginUser(t, ts.passkeyLogin(a, "pk@example.com")); u["emailVerified"] != false {
		t.Fatalf("passkey login user=%v", u)
	}
}

// TestExternalConfirmReplacesUnverified: an external method vouches for
// the address, so a confirm that would attach by email to an unverified
// account replaces it, as a sign-in by code does; an unverified account
// holding another externalUserId is not attached to (409) and stays; the
// confirmed user is verified.
func TestExternalConfirmReplacesUnverified(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	_, secret := ts.method("bank", "direct")
	confirm := func(fields map[string]any) *response {
		fields["method"] = "bank"
		body := ts.confirmBody(fields)
		return ts.confirm(body, sign(secret, body))
	}
	oldID := str(t, ts.passkeySignUp(a, "held@example.com").Body, "userId")

	r := confirm(map[string]any{"externalUserId": "ext-1", "email": "held@example.com"})
	wantOK(t, r)
	if r.Body["userId"] == oldID || r.Body["isNewUser"] != true || loginUser(t, r)["emailVerified"] != true {
		t.Fatalf("confirm answered %s, want a new verified user replacing %s", r.Raw, oldID)
	}
	wantError(t, ts.passkeyLogin(a, ""), 401, "INVALID_CREDENTIAL")

	// An unverified account with its own externalUserId: 409, untouched.
	other := ts.login("other@example.com")
	otherTok := str(t, other.Body, "token")
	ts.setExternalID(str(t, other.Body, "userId"), "ext-other", false)
	wantError(t, confirm(map[string]any{"externalUserId": "ext-2", "email": "other@example.com"}), 409, "EXTERNAL_ID_CONFLICT")
	wantOK(t, ts.do("GET", "/api/v1/user", otherTok, nil))

	// A confirm by the known externalUserId vouches for the account.
	k := confirm(map[string]any{"externalUserId": "ext-other"})
	wantOK(t, k)
	if k.Body["userId"] != other.Body["userId"] || loginUser(t, k)["emailVerified"] != true {
		t.Fatalf("confirm by known id answered %s", k.Raw)
	}
}

// setExternalID gives userID an externalUserId and an emailVerified
// straight in the store (a state the API reaches through an address
// changed directly).
func (ts *testServer) setExternalID(userID, ext string, verified bool) {
	ts.t.Helper()
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(userID)
		if err != nil {
			return err
		}
		u.ExternalUserID, u.EmailVerified = ext, &verified
		return tx.PutUser(u)
	})
	if err != nil {
		ts.t.Fatal(err)
	}
}

// TestEmailVerifiedOfOldRows: users written before emailVerified existed
// count as verified (they signed up by code, link or an external
// method), except passkey sign-ups (a user created in the same instant
// as its first passkey, without an externalUserId), which count as
// unverified like every passkey sign-up since. A sign-in stores the
// settled value.
func TestEmailVerifiedOfOldRows(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	otpID := str(t, ts.login("old-otp@example.com").Body, "userId")
	later := ts.login("old-later@example.com") // signed up by code, added a passkey later
	ts.addPasskey(passkeytest.New(pkOrigin), str(t, later.Body, "token"))
	pkID := str(t, ts.passkeySignUp(a, "old-pk@example.com").Body, "userId")
	for _, id := range []string{otpID, str(t, later.Body, "userId"), pkID} {
		ts.forgetVerified(id)
	}
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	got := map[string]any{}
	for _, u := range r.Body["users"].([]any) {
		got[u.(map[string]any)["email"].(string)] = u.(map[string]any)["emailVerified"]
	}
	if got["old-otp@example.com"] != true || got["old-later@example.com"] != true || got["old-pk@example.com"] != false {
		t.Fatalf("old rows settled as %v", got)
	}
	if l := ts.login("old-otp@example.com"); l.Body["userId"] != otpID || loginUser(t, l)["emailVerified"] != true {
		t.Fatalf("old OTP user's login %s", l.Raw)
	}
	if l := ts.login("old-pk@example.com"); l.Body["userId"] == pkID || l.Body["isNewUser"] != true {
		t.Fatalf("old passkey sign-up's address proven by code: %s, want a new user", l.Raw)
	}
	ts.DB.View(ctx, func(tx store.Tx) error {
		u, err := tx.User(otpID)
		if err != nil || u.EmailVerified == nil || !*u.EmailVerified {
			t.Fatalf("settled value not stored: %+v %v", u, err)
		}
		return nil
	})
}

// forgetVerified drops emailVerified from a user row, as rows written
// before the field existed lack it.
func (ts *testServer) forgetVerified(userID string) {
	ts.t.Helper()
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(userID)
		if err != nil {
			return err
		}
		u.EmailVerified = nil
		return tx.PutUser(u)
	})
	if err != nil {
		ts.t.Fatal(err)
	}
}

// lastMailKind returns the kind of the newest queued message to addr.
func (ts *testServer) lastMailKind(addr string) string {
	ts.t.Helper()
	kind := ""
	ts.DB.View(ctx, func(tx store.Tx) error {
		return tx.RecentMail(func(m *store.Mail) bool {
			if m.To == addr {
				kind = m.Kind
				return false
			}
			return true
		})
	})
	return kind
}
