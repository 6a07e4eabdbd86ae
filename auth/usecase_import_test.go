package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// importLines imports lines (one JSON object each) into the test project.
func (ts *testService) importLines(lines ...string) *auth.ImportReport {
	ts.t.Helper()
	rep, err := ts.ImportUsers(ctx, ts.project.ID, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		ts.t.Fatal(err)
	}
	return rep
}

// putSelfRegistered stores an unverified account of addr as a passkey
// sign-up leaves it (its passkey, a live session), without the ceremony.
func (ts *testService) putSelfRegistered(addr string) *store.User {
	ts.t.Helper()
	now := ts.clock.Now()
	u := &store.User{ID: "self-" + addr, ProjectID: ts.project.ID, Email: addr, FirstName: "Mallory", CreatedAt: now, UpdatedAt: now,
		EmailVerified: ptr(false), Vouched: ptr(false)}
	err := ts.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if err := tx.PutPasskey(&store.Passkey{ID: "cred-" + addr, UserID: u.ID, ProjectID: u.ProjectID, Credential: []byte("{}"), CreatedAt: now}); err != nil {
			return err
		}
		return tx.PutSession(&store.Session{ID: "sess-" + addr, UserID: u.ID, ProjectID: u.ProjectID, Method: "passkey", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return u
}

// TestImportedUserKeptAtFirstSignIn: an imported user, unverified by
// default, is the account its owner's first sign-in by code or link
// lands in: same id, not new, every imported field kept, verified from
// then on, and no user.registered.
func TestImportedUserKeptAtFirstSignIn(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"otp", "magic"} {
		t.Run(how, func(t *testing.T) {
			ts := newTestService(t)
			const addr = "legacy@example.com"
			rep := ts.importLines(`{"email":"legacy@example.com","externalUserId":"legacy-7","firstName":"Lee","companyId":"acme","createdAt":"2001-02-03T04:05:06Z"}`)
			if rep.Created != 1 || rep.RejectedCount != 0 {
				t.Fatalf("import %+v", rep)
			}
			imported := ts.user(addr)
			if imported.EmailVerified == nil || *imported.EmailVerified || imported.Vouched == nil || !*imported.Vouched {
				t.Fatalf("imported user %+v, want unverified and vouched for", imported)
			}

			var l *auth.Login
			var err error
			if how == "otp" {
				ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
				l, err = ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr)}, ts.meta)
			} else {
				ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta))
				l, err = ts.VerifyMagicLink(ctx, ts.linkToken(addr), "", ts.meta)
			}
			ok(t, err)
			u := l.User
			if l.IsNewUser || u.ID != imported.ID || u.ExternalUserID != "legacy-7" || u.FirstName != "Lee" || u.CompanyID != "acme" ||
				!u.CreatedAt.Equal(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)) || !*u.EmailVerified {
				t.Fatalf("sign-in: new %v user %+v, want the imported account, verified", l.IsNewUser, u)
			}
			if stored := ts.user(addr); stored.ID != imported.ID || !*stored.EmailVerified {
				t.Fatalf("stored %+v", stored)
			}
			if n := len(ts.outbox("user.registered")) + len(ts.outbox("user.deleted")); n != 0 {
				t.Fatalf("%d user.registered or user.deleted events: the account must stay", n)
			}
		})
	}
}

// TestImportOntoSelfRegistered: an import line for an address held by
// an unverified account that registered itself replaces it when the
// line says emailVerified true (the account, its passkey and session
// deleted, user.deleted) and is rejected otherwise, changing nothing and
// never giving that account the line's externalUserId.
func TestImportOntoSelfRegistered(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	squat := ts.putSelfRegistered("victim@example.com")
	for _, line := range []string{
		`{"email":"victim@example.com","externalUserId":"legacy-1","firstName":"Vic"}`,
		`{"email":"victim@example.com","externalUserId":"legacy-1","emailVerified":false}`,
	} {
		rep := ts.importLines(line)
		if rep.Created+rep.Updated != 0 || rep.RejectedCount != 1 || !strings.Contains(rep.Rejected[0].Error, "emailVerified true") {
			t.Fatalf("import of %s: %+v, want the line rejected", line, rep)
		}
		if got := ts.user("victim@example.com"); got.ID != squat.ID || got.ExternalUserID != "" || got.FirstName != "Mallory" || *got.Vouched {
			t.Fatalf("after a rejected line the account is %+v", got)
		}
	}

	rep := ts.importLines(`{"email":"victim@example.com","externalUserId":"legacy-1","firstName":"Vic","emailVerified":true}`)
	if rep.Created != 1 || rep.Updated != 0 || rep.RejectedCount != 0 {
		t.Fatalf("import %+v, want one user created", rep)
	}
	got := ts.user("victim@example.com")
	if got.ID == squat.ID || got.ExternalUserID != "legacy-1" || got.FirstName != "Vic" || !*got.EmailVerified || !*got.Vouched {
		t.Fatalf("imported user %+v", got)
	}
	if del := ts.outbox("user.deleted"); len(del) != 1 || del[0]["user_id"] != squat.ID {
		t.Fatalf("user.deleted events %v", del)
	}
	if n := len(ts.outbox("user.registered")); n != 0 {
		t.Fatalf("%d user.registered events: imports emit none", n)
	}
	err := ts.db.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Passkey(ts.project.ID, "cred-victim@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the replaced account's passkey: %v", err)
		}
		if live, err := tx.SessionExists("sess-victim@example.com"); err != nil || live {
			t.Fatalf("the replaced account's session lives (%v)", err)
		}
		return nil
	})
	ok(t, err)
}

// TestImportReplaceNeedsFreeExternalID: a line that would replace a
// self-registered account but names another user's externalUserId is
// rejected before anything is deleted.
func TestImportReplaceNeedsFreeExternalID(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	squat := ts.putSelfRegistered("victim@example.com")
	ts.importLines(`{"email":"holder@example.com","externalUserId":"taken"}`)
	rep := ts.importLines(`{"email":"victim@example.com","externalUserId":"taken","emailVerified":true}`)
	if rep.Created+rep.Updated != 0 || rep.RejectedCount != 1 || rep.Rejected[0].Error != "externalUserId belongs to another user of the project" {
		t.Fatalf("import %+v", rep)
	}
	if got := ts.user("victim@example.com"); got == nil || got.ID != squat.ID {
		t.Fatalf("account %+v, want it untouched", got)
	}
	if n := len(ts.outbox("user.deleted")); n != 0 {
		t.Fatalf("%d user.deleted events", n)
	}
}

// TestImportCreatedAtRange: createdAt must be a time the store holds
// exactly (1678-01-01 to 2262-04-11T23:47:16Z); a line outside is
// rejected alone.
func TestImportCreatedAtRange(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const why = "createdAt must be from 1678-01-01T00:00:00Z to 2262-04-11T23:47:16Z"
	for _, c := range []struct {
		createdAt string
		ok        bool
	}{
		{"1677-12-31T23:59:59Z", false},
		{"1678-01-01T00:00:00Z", true},
		{"1969-12-31T23:59:59.999999999Z", true},
		{"2262-04-11T23:47:16Z", true},
		{"2262-04-11T23:47:17Z", false},
		{"2263-01-01T00:00:00Z", false},
		{"9999-12-31T23:59:59Z", false},
	} {
		addr := "t" + strings.NewReplacer(":", "", ".", "").Replace(c.createdAt) + "@example.com"
		rep := ts.importLines(`{"email":"` + addr + `","createdAt":"` + c.createdAt + `"}`)
		if c.ok {
			want, _ := time.Parse(time.RFC3339Nano, c.createdAt)
			if u := ts.user(strings.ToLower(addr)); rep.Created != 1 || u == nil || !u.CreatedAt.Equal(want) {
				t.Fatalf("createdAt %s: report %+v, user %+v", c.createdAt, rep, u)
			}
		} else if rep.Created != 0 || rep.RejectedCount != 1 || rep.Rejected[0].Error != why {
			t.Fatalf("createdAt %s: report %+v, want the line rejected: %s", c.createdAt, rep, why)
		}
	}
}

// TestReplacedAccountNotPending: a sign-in by code or link that replaces
// a self-registered, unverified account holding TOTP lands in a new
// user, which has nothing enrolled: the login is not waiting for a second
// factor (the factors are not read for a user the sign-in created), and
// a second sign-in of the same address, after it enrolls TOTP, is.
func TestReplacedAccountNotPending(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"otp", "magic"} {
		t.Run(how, func(t *testing.T) {
			ts := newTestService(t)
			addr := how + "-taken@example.com"
			old := ts.putSelfRegistered(addr)
			err := ts.db.Update(ctx, func(tx store.Tx) error {
				return tx.PutFactor(&store.Factor{UserID: old.ID, ProjectID: old.ProjectID, Kind: "totp", Status: "enrolled", Secret: []byte("sealed")})
			})
			ok(t, err)
			var l *auth.Login
			if how == "otp" {
				l, _ = ts.signIn(addr)
			} else {
				ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta))
				l, err = ts.VerifyMagicLink(ctx, ts.linkToken(addr), "", ts.meta)
				ok(t, err)
				ts.clock.Advance(auth.SendInterval)
			}
			if !l.IsNewUser || l.User.ID == old.ID || l.SecondFactorPending() {
				t.Fatalf("sign-in over a self-registered account: new %v, same id %v, pending %v; want a new user, not pending",
					l.IsNewUser, l.User.ID == old.ID, l.SecondFactorPending())
			}
			pr := ts.principal(l)
			en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
			ok(t, err)
			ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
			if again, _ := ts.signIn(addr); again.IsNewUser || !again.SecondFactorPending() {
				t.Fatalf("a second sign-in after TOTP: new %v, pending %v; want the same user, pending", again.IsNewUser, again.SecondFactorPending())
			}
		})
	}
}
