package auth

import (
	"errors"
	"testing"
	"time"

	"latchkey/store"
)

// TestSettleVerified: a row without emailVerified (written before the
// field existed) counts as verified unless it is a passkey sign-up: a
// passkey created in the same instant as the user and no externalUserId.
// A row with the field keeps it.
func TestSettleVerified(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	created := f.now.Add(-time.Hour)
	yes, no := true, false
	for _, c := range []struct {
		name      string
		verified  *bool
		ext       string
		passkeyAt *time.Time // a passkey of the user created then
		want      bool
		changed   bool
	}{
		{"old, no passkey", nil, "", nil, true, true},
		{"old, passkey sign-up", nil, "", &created, false, true},
		{"old, passkey added later", nil, "", ptrTime(created.Add(time.Minute)), true, true},
		{"old, passkey sign-up with an externalUserId", nil, "ext-1", &created, true, true},
		{"new, verified", &yes, "", &created, true, false},
		{"new, unverified", &no, "", nil, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &store.User{ID: newID(), ProjectID: f.u.ProjectID, Email: newID() + "@example.com", ExternalUserID: c.ext, CreatedAt: created, EmailVerified: c.verified}
			err := f.db.Update(ctx, func(tx store.Tx) error {
				if err := tx.PutUser(u); err != nil {
					return err
				}
				if c.passkeyAt != nil {
					if err := tx.PutPasskey(&store.Passkey{ID: newID(), UserID: u.ID, ProjectID: u.ProjectID, Credential: []byte("{}"), CreatedAt: *c.passkeyAt}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			f.db.View(ctx, func(tx store.Tx) error {
				got, err := tx.User(u.ID) // as stored, JSON round trip included
				if err != nil {
					t.Fatal(err)
				}
				changed, err := settleVerified(tx, got)
				if err != nil || changed != c.changed || isVerified(got) != c.want {
					t.Fatalf("settled %v (changed %v, err %v), want %v (changed %v)", isVerified(got), changed, err, c.want, c.changed)
				}
				return nil
			})
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestProvenUserReplacesUnverified: proving the address of an unverified
// account deletes it (its sessions, factors and passkeys; user.deleted)
// and creates a new verified user (user.registered) in one transaction;
// a verified account is kept; a disabled one is returned as it is.
func TestProvenUserReplacesUnverified(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	p := f.project()
	victim, pr := f.signIn(p, "victim@example.com")
	if err := f.db.Update(ctx, func(tx store.Tx) error {
		victim.EmailVerified = boolPtr(false)
		if err := tx.PutUser(victim); err != nil {
			return err
		}
		if err := tx.PutFactor(&store.Factor{UserID: victim.ID, ProjectID: p.ID, Kind: factorSMS, Status: factorEnrolled, Phone: "+15550000000"}); err != nil {
			return err
		}
		return tx.PutPasskey(&store.Passkey{ID: "cred-1", UserID: victim.ID, ProjectID: p.ID, Credential: []byte("{}"), CreatedAt: f.now})
	}); err != nil {
		t.Fatal(err)
	}
	deleted, registered := f.outbox("user.deleted"), f.outbox("user.registered")
	var u *store.User
	var isNew bool
	err := f.db.Update(ctx, func(tx store.Tx) error {
		var err error
		u, isNew, err = f.svc.provenUser(tx, p, "victim@example.com")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !isNew || u.ID == victim.ID || !isVerified(u) || u.Email != "victim@example.com" {
		t.Fatalf("provenUser gave %+v (new %v), want a new verified user", u, isNew)
	}
	if f.outbox("user.deleted") != deleted+1 || f.outbox("user.registered") != registered+1 {
		t.Fatal("replacement did not emit user.deleted and user.registered")
	}
	f.db.View(ctx, func(tx store.Tx) error {
		if live, err := tx.SessionExists(pr.SessionID); err != nil || live {
			t.Fatalf("the replaced account's session lives (%v)", err)
		}
		if _, err := tx.Factor(victim.ID, factorSMS); err == nil {
			t.Fatal("the replaced account's factor lives")
		}
		if _, err := tx.Passkey(p.ID, "cred-1"); err == nil {
			t.Fatal("the replaced account's passkey lives")
		}
		return nil
	})

	// Proving it again keeps the (now verified) account.
	err = f.db.Update(ctx, func(tx store.Tx) error {
		again, isNew, err := f.svc.provenUser(tx, p, "victim@example.com")
		if err == nil && (isNew || again.ID != u.ID) {
			t.Fatalf("verified account replaced: %+v new %v", again, isNew)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A disabled unverified account is left for the caller's 403.
	off, _ := f.signIn(p, "off@example.com")
	err = f.db.Update(ctx, func(tx store.Tx) error {
		off.EmailVerified, off.Disabled = boolPtr(false), true
		if err := tx.PutUser(off); err != nil {
			return err
		}
		got, isNew, err := f.svc.provenUser(tx, p, "off@example.com")
		if err == nil && (isNew || got.ID != off.ID || !got.Disabled) {
			t.Fatalf("disabled account replaced: %+v new %v", got, isNew)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReplaceable: a sign-in proving the address replaces an unverified
// account that registered itself (Vouched false), never a verified one
// nor one an import vouched for. A row written before Vouched existed
// counts as vouched for when nobody can sign in to it: any passkey,
// session, backup codes or enrolled factor makes it replaceable.
func TestReplaceable(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	yes, no := true, false
	for _, c := range []struct {
		name     string
		verified bool
		vouched  *bool
		has      func(tx store.Tx, u *store.User) error
		want     bool
	}{
		{"verified", true, &no, nil, false},
		{"verified, old row", true, nil, nil, false},
		{"self-registered", false, &no, nil, true},
		{"imported", false, &yes, nil, false},
		{"imported, old row", false, nil, nil, false},
		{"old row with a passkey", false, nil, func(tx store.Tx, u *store.User) error {
			return tx.PutPasskey(&store.Passkey{ID: newID(), UserID: u.ID, ProjectID: u.ProjectID, Credential: []byte("{}"), CreatedAt: f.now})
		}, true},
		{"old row with a session", false, nil, func(tx store.Tx, u *store.User) error {
			return tx.PutSession(&store.Session{ID: newID(), UserID: u.ID, ProjectID: u.ProjectID, IssuedAt: f.now, ExpiresAt: f.now.Add(time.Hour)})
		}, true},
		{"old row with backup codes", false, nil, func(tx store.Tx, u *store.User) error {
			return tx.PutBackupCodes(&store.BackupCodes{UserID: u.ID, ProjectID: u.ProjectID, Hashes: [][]byte{[]byte("h")}, Used: []bool{false}, CreatedAt: f.now})
		}, true},
		{"old row with TOTP", false, nil, func(tx store.Tx, u *store.User) error {
			return tx.PutFactor(&store.Factor{UserID: u.ID, ProjectID: u.ProjectID, Kind: factorTOTP, Status: factorEnrolled, CreatedAt: f.now, EnrolledAt: &f.now})
		}, true},
		{"old row with TOTP pending", false, nil, func(tx store.Tx, u *store.User) error {
			return tx.PutFactor(&store.Factor{UserID: u.ID, ProjectID: u.ProjectID, Kind: factorTOTP, Status: "pending", CreatedAt: f.now})
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &store.User{ID: newID(), ProjectID: f.u.ProjectID, Email: newID() + "@example.com", CreatedAt: f.now,
				EmailVerified: boolPtr(c.verified), Vouched: c.vouched}
			err := f.db.Update(ctx, func(tx store.Tx) error {
				if err := tx.PutUser(u); err != nil {
					return err
				}
				if c.has != nil {
					return c.has(tx, u)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			f.db.View(ctx, func(tx store.Tx) error {
				got, err := tx.User(u.ID)
				if err != nil {
					t.Fatal(err)
				}
				if replace, err := replaceable(tx, got); err != nil || replace != c.want {
					t.Fatalf("replaceable=%v (%v), want %v", replace, err, c.want)
				}
				return nil
			})
		})
	}
}

// TestProviderSignInToVouchedAccount: a provider sign-in keeps an
// account an import vouched for, as a sign-in by code does, so an
// unverified one with a factor (an import said emailVerified false of a
// user who had enrolled one) is signed in to by email first; without
// one, the provider sign-in lands in it and verifies it.
func TestProviderSignInToVouchedAccount(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	p := f.project()
	for _, withFactor := range []bool{true, false} {
		addr := newID() + "@example.com"
		u := &store.User{ID: newID(), ProjectID: p.ID, Email: addr, CreatedAt: f.now, EmailVerified: boolPtr(false), Vouched: boolPtr(true)}
		var got *store.User
		var isNew bool
		err := f.db.Update(ctx, func(tx store.Tx) error {
			if err := tx.PutUser(u); err != nil {
				return err
			}
			if withFactor {
				if err := tx.PutFactor(&store.Factor{UserID: u.ID, ProjectID: p.ID, Kind: factorTOTP, Status: factorEnrolled, CreatedAt: f.now, EnrolledAt: &f.now}); err != nil {
					return err
				}
			}
			var err error
			got, isNew, err = f.svc.signInIdentity(tx, p, &oauthIdentity{Provider: "google", Subject: "s-" + addr, Email: addr, EmailVerified: true, LinkByEmail: true})
			return err
		})
		if withFactor {
			if !errors.Is(err, ErrSignInWithEmailFirst) {
				t.Fatalf("with a factor: %v, want SIGN_IN_WITH_EMAIL_FIRST", err)
			}
			continue
		}
		if err != nil || isNew || got.ID != u.ID || !isVerified(got) {
			t.Fatalf("without a factor: %+v new %v (%v), want the account, verified", got, isNew, err)
		}
	}
}
