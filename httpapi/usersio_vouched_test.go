package httpapi_test

import (
	"strings"
	"testing"

	"latchkey/store"
)

// An import is the operator vouching for the addresses it lists, over
// real HTTP on the test backend: the imported account is the one its
// owner's first sign-in lands in, and an import never verifies an
// account someone registered for themselves.

// whyUnproven is the rejection of an import line for an address held by
// an unverified account that registered itself.
const whyUnproven = "the address belongs to an account registered without proving it: only a line with emailVerified true replaces it"

// exported returns the export's line for addr, or nil.
func (ts *testServer) exported(addr string) map[string]any {
	ts.t.Helper()
	users, r := ts.exportUsers(ts.Project.ID)
	if users == nil {
		wantOK(ts.t, r)
	}
	for _, u := range users {
		if u["email"] == addr {
			return u
		}
	}
	return nil
}

// TestImportCannotVerifyPreRegistered performs the attack of issue 26
// finding 2: before a migration, an attacker signs a legacy user's
// address up with the attacker's passkey. An import line for that
// address used to merge the legacy externalUserId and profile into the
// attacker's account and, with emailVerified true, mark it verified, so
// that the owner's sign-in landed in it. Now a line without
// emailVerified true is rejected and changes nothing; a line with it
// replaces the attacker's account as a sign-in proving the address
// would: the account, its passkey and sessions deleted (user.deleted),
// the imported user created with the line's fields, which the owner's
// sign-in then finds.
func TestImportCannotVerifyPreRegistered(t *testing.T) {
	t.Parallel()
	ts, attacker := newPasskeyServer(t)
	signUp := ts.passkeySignUp(attacker, "victim@example.com")
	attackerID, attackerTok := str(t, signUp.Body, "userId"), str(t, signUp.Body, "token")
	wantOK(t, ts.do("PATCH", "/api/v1/user", attackerTok, map[string]any{"firstName": "Mallory"}))
	n := len(ts.outbox())

	for _, line := range []string{
		`{"email":"victim@example.com","externalUserId":"legacy-1","firstName":"Victor","companyId":"acme"}`,
		`{"email":"Victim@Example.com","externalUserId":"legacy-1","firstName":"Victor","emailVerified":false}`,
	} {
		created, updated, rejected := reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", line+"\n"))
		if created != 0 || updated != 0 || len(rejected) != 1 || rejected[0]["line"] != float64(1) || rejected[0]["error"] != whyUnproven {
			t.Fatalf("import of %s: created %d updated %d rejected %v, want the line rejected", line, created, updated, rejected)
		}
		u := obj(t, ts.do("GET", "/api/v1/user", attackerTok, nil).Body, "user")
		if u["id"] != attackerID || u["externalUserId"] != nil || u["firstName"] != "Mallory" || u["companyId"] != nil || u["emailVerified"] != false {
			t.Fatalf("after a rejected line the attacker's account is %v", u)
		}
	}
	if ev := ts.outboxSince(n); len(ev) != 0 {
		t.Fatalf("rejected lines emitted %v", ev)
	}
	wantOK(t, ts.passkeyLogin(attacker, "victim@example.com")) // a second session of the attacker's
	n = len(ts.outbox())

	line := `{"email":"victim@example.com","externalUserId":"legacy-1","firstName":"Victor","companyId":"acme","emailVerified":true,"createdAt":"2019-05-06T07:08:09Z"}`
	created, updated, rejected := reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", line+"\n"))
	if created != 1 || updated != 0 || len(rejected) != 0 {
		t.Fatalf("import: created %d updated %d rejected %v, want one user created", created, updated, rejected)
	}
	var types []string
	for _, e := range ts.outboxSince(n) {
		types = append(types, e.Type)
		if e.Data["user_id"] != attackerID {
			t.Fatalf("event %s for user %v, want the attacker's %s", e.Type, e.Data["user_id"], attackerID)
		}
	}
	if got := strings.Join(types, ","); got != "session.revoked,session.revoked,user.deleted" {
		t.Fatalf("events %s, want the attacker's two sessions revoked and user.deleted (and no user.registered)", got)
	}
	wantError(t, ts.passkeyLogin(attacker, ""), 401, "INVALID_CREDENTIAL")
	wantError(t, ts.do("GET", "/api/v1/user", attackerTok, nil), 401, "INVALID_SESSION")
	imported := ts.exported("victim@example.com")
	if imported == nil || imported["id"] == attackerID || imported["externalUserId"] != "legacy-1" || imported["firstName"] != "Victor" ||
		imported["companyId"] != "acme" || imported["emailVerified"] != true || imported["createdAt"] != "2019-05-06T07:08:09.000Z" ||
		len(imported["factors"].([]any)) != 0 {
		t.Fatalf("imported user %v", imported)
	}

	// The owner's sign-in lands in the imported account.
	owner := ts.login("victim@example.com")
	if owner.Body["userId"] != imported["id"] || owner.Body["isNewUser"] != false {
		t.Fatalf("owner's sign-in: userId %v isNewUser %v, want the imported %v", owner.Body["userId"], owner.Body["isNewUser"], imported["id"])
	}
	// And the address is taken for passkey sign-ups.
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "victim@example.com"}), 409, "USER_EXISTS")
}

// TestImportedUserFirstSignIn is issue 26 finding 4: an imported user is
// unverified by default, and its owner's first sign-in by code or link
// used to delete it and create a new user. Now it lands in the imported
// account: same id, isNewUser false, externalUserId, first name,
// companyId and createdAt kept, emailVerified true from then on, and no
// user.registered or user.deleted.
func TestImportedUserFirstSignIn(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"otp", "magic"} {
		t.Run(how, func(t *testing.T) {
			ts := newTestServer(t)
			const addr = "legacy@example.com"
			line := `{"email":"legacy@example.com","externalUserId":"legacy-7","firstName":"Lee","companyId":"acme","createdAt":"2003-04-05T06:07:08.009Z"}`
			created, _, rejected := reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", line+"\n"))
			if created != 1 || len(rejected) != 0 {
				t.Fatalf("import: created %d rejected %v", created, rejected)
			}
			before := ts.exported(addr)
			if before["emailVerified"] != false {
				t.Fatalf("imported user %v, want emailVerified false", before)
			}
			n := len(ts.outbox())

			r := ts.emailLogin(how, addr)
			if r.Body["userId"] != before["id"] || r.Body["isNewUser"] != false {
				t.Fatalf("sign-in: userId %v isNewUser %v, want the imported %v", r.Body["userId"], r.Body["isNewUser"], before["id"])
			}
			wantLoginUser(t, r.Body, addr)
			if u := loginUser(t, r); u["externalUserId"] != "legacy-7" || u["first_name"] != "Lee" || u["company_id"] != "acme" || u["emailVerified"] != true {
				t.Fatalf("login user %v", u)
			}
			u := obj(t, ts.do("GET", "/api/v1/user", str(t, r.Body, "token"), nil).Body, "user")
			if u["id"] != before["id"] || u["externalUserId"] != "legacy-7" || u["firstName"] != "Lee" || u["companyId"] != "acme" || u["emailVerified"] != true {
				t.Fatalf("GET /user %v", u)
			}
			after := ts.exported(addr)
			if after["id"] != before["id"] || after["createdAt"] != "2003-04-05T06:07:08.009Z" || after["emailVerified"] != true {
				t.Fatalf("exported after the sign-in: %v", after)
			}
			for _, e := range ts.outboxSince(n) {
				if e.Type != "session.created" {
					t.Fatalf("the first sign-in emitted %s %v: the account must stay as it is", e.Type, e.Data)
				}
			}
		})
	}
}

// TestImportedAccountAddressChangedDirectly: the vouching is for the
// imported address. Once the account switches to another address
// directly (emailChange "direct": unverified), a sign-in proving the new
// address replaces the account, as for any account.
func TestImportedAccountAddressChangedDirectly(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"emailChange": "direct"}))
	reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", `{"email":"imp@example.com","externalUserId":"legacy-9"}`+"\n"))
	login := ts.login("imp@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	wantOK(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "someone@example.com"}))

	owner := ts.login("someone@example.com")
	if owner.Body["userId"] == uid || owner.Body["isNewUser"] != true || loginUser(t, owner)["externalUserId"] != nil {
		t.Fatalf("the address owner's sign-in answered %s, want a new user (not %s)", owner.Raw, uid)
	}
	wantError(t, ts.do("GET", "/api/v1/user", tok, nil), 401, "INVALID_SESSION")
}

// TestImportCreatedAtBounds: createdAt must be a time the store holds
// as it is: 1678 to 2262 (2262-04-11T23:47:16Z at the latest); a line
// outside is rejected alone, and the bounds round-trip exactly.
func TestImportCreatedAtBounds(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	body := strings.Join([]string{
		`{"email":"a1677@example.com","createdAt":"1677-12-31T23:59:59Z"}`,
		`{"email":"a1678@example.com","createdAt":"1678-01-01T00:00:00Z"}`,
		`{"email":"a2262@example.com","createdAt":"2262-04-11T23:47:16Z"}`,
		`{"email":"a2263@example.com","createdAt":"2263-01-01T00:00:00Z"}`,
		`{"email":"late2262@example.com","createdAt":"2262-12-31T00:00:00Z"}`,
	}, "\n") + "\n"
	created, updated, rejected := reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", body))
	if created != 2 || updated != 0 || len(rejected) != 3 {
		t.Fatalf("created %d updated %d rejected %v, want 2 created and 3 rejected", created, updated, rejected)
	}
	for i, line := range []float64{1, 4, 5} {
		if r := rejected[i]; r["line"] != line || r["error"] != "createdAt must be from 1678-01-01T00:00:00Z to 2262-04-11T23:47:16Z" {
			t.Fatalf("rejected[%d]=%v", i, r)
		}
	}
	for addr, want := range map[string]string{"a1678@example.com": "1678-01-01T00:00:00.000Z", "a2262@example.com": "2262-04-11T23:47:16.000Z"} {
		if u := ts.exported(addr); u == nil || u["createdAt"] != want {
			t.Fatalf("%s exported as %v, want createdAt %s", addr, u, want)
		}
	}
	for _, addr := range []string{"a1677@example.com", "a2263@example.com", "late2262@example.com"} {
		if u := ts.exported(addr); u != nil {
			t.Fatalf("a rejected line created %v", u)
		}
	}
}

// TestVouchedOfOldRows: users written before the vouched mark existed
// count as vouched for when nobody can sign in to them (an imported user
// that never signed in: its first sign-in keeps it), and as registered
// by themselves otherwise (a passkey sign-up: a sign-in proving the
// address replaces it, as before).
func TestVouchedOfOldRows(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	reportOf(t, ts.importUsers(ts.Project.ID, "application/x-ndjson", `{"email":"old-imp@example.com","firstName":"Olga"}`+"\n"))
	impID := ts.exported("old-imp@example.com")["id"].(string)
	pkID := str(t, ts.passkeySignUp(a, "old-pk@example.com").Body, "userId")
	for _, id := range []string{impID, pkID} {
		ts.forgetVouched(id)
	}
	if l := ts.login("old-imp@example.com"); l.Body["userId"] != impID || l.Body["isNewUser"] != false || loginUser(t, l)["first_name"] != "Olga" {
		t.Fatalf("old imported user's sign-in %s, want the imported account", l.Raw)
	}
	if l := ts.login("old-pk@example.com"); l.Body["userId"] == pkID || l.Body["isNewUser"] != true {
		t.Fatalf("old passkey sign-up's address proven by code: %s, want a new user", l.Raw)
	}
}

// forgetVouched drops the vouched mark from a user row, as rows written
// before it existed lack it.
func (ts *testServer) forgetVouched(userID string) {
	ts.t.Helper()
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(userID)
		if err != nil {
			return err
		}
		u.Vouched = nil
		return tx.PutUser(u)
	})
	if err != nil {
		ts.t.Fatal(err)
	}
}
