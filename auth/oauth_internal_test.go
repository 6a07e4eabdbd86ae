package auth

import (
	"bytes"
	"errors"
	"latchkey/internal/testkit"
	"strings"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// The rules of a provider sign-in that need no provider: the ID token's
// authorized party, what vouches for an address, usable subjects and
// issuers, and the linking rules applied to a proved identity (over HTTP
// with real providers: httpapi's oauth tests).

func TestCheckAZP(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks ID token claims in memory")
	tests := []struct {
		aud []string
		azp string
		ok  bool
	}{
		{[]string{"me"}, "", true},
		{[]string{"me"}, "me", true},
		{[]string{"me"}, "other", false},
		{[]string{"me", "other"}, "", false},
		{[]string{"me", "other"}, "other", false},
		{[]string{"other", "me"}, "me", true},
	}
	for _, tt := range tests {
		if err := checkAZP(tt.aud, tt.azp, "me"); (err == nil) != tt.ok {
			t.Errorf("checkAZP(%q, %q)=%v, want ok=%v", tt.aud, tt.azp, err, tt.ok)
		}
	}
}

func TestEmailVerified(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads ID token claims in memory")
	tests := []struct {
		typ      string
		verified any
		edov     any
		want     bool
	}{
		{"google", true, nil, true},
		{"apple", "true", nil, true},
		{"google", nil, nil, false},
		{"google", false, nil, false},
		{"oidc", nil, true, false}, // xms_edov is Microsoft's claim only
		{"github", nil, true, false},
		{"microsoft", nil, nil, false},
		{"microsoft", nil, false, false},
		{"microsoft", nil, "false", false},
		{"microsoft", nil, 1, false},
		{"microsoft", nil, true, true},
		{"microsoft", nil, "true", true},
		{"microsoft", true, nil, true},
		{"microsoft", false, true, true},
	}
	for _, tt := range tests {
		if got := emailVerified(tt.typ, &idClaims{EmailVerified: tt.verified, EDOV: tt.edov}); got != tt.want {
			t.Errorf("emailVerified(%s, email_verified=%v, xms_edov=%v)=%v, want %v", tt.typ, tt.verified, tt.edov, got, tt.want)
		}
	}
}

func TestUsableSubject(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks ID token subjects in memory")
	for sub, want := range map[string]bool{
		"248289761001": true, "a1b2-c3d4": true, "ünïcödé": true, strings.Repeat("s", 255): true,
		"": false, strings.Repeat("s", 256): false, "a\x00b": false, "a\nb": false, "\xff": false, "a\u0085b": false,
	} {
		if got := usableSubject(sub); got != want {
			t.Errorf("usableSubject(%q)=%v, want %v", sub, got, want)
		}
	}
}

func TestCheckIssuer(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks issuers in memory")
	tests := []struct {
		issuer         string
		public, anyone bool // accepted without and with allowPrivate
	}{
		{"https://idp.example.com", true, true},
		{"https://idp.example.com/realms/main", true, true},
		{"http://localhost:8081", true, true},
		{"http://127.0.0.1:8081", true, true},
		{"http://[::1]:8081", true, true},
		{"https://127.0.0.1", true, true},
		{"https://93.184.216.34", true, true},
		{"https://sso.corp.internal", true, true}, // a name: judged when dialled
		{"http://idp.example.com", false, false},
		{"http://10.0.0.1", false, false}, // http only on loopback
		{"https://10.0.0.1", false, true},
		{"https://169.254.169.254", false, true},
		{"https://[fd00::1]", false, true},
		{"https://[::ffff:192.168.1.1]", false, true},
		{"https://[64:ff9b::7f00:1]", false, true}, // loopback through NAT64 is not loopback
		{"https://idp.example.com?x=1", false, false},
		{"idp.example.com", false, false},
	}
	for _, tt := range tests {
		if err := checkIssuer(tt.issuer, false); (err == nil) != tt.public {
			t.Errorf("checkIssuer(%q, false)=%v, want ok=%v", tt.issuer, err, tt.public)
		}
		if err := checkIssuer(tt.issuer, true); (err == nil) != tt.anyone {
			t.Errorf("checkIssuer(%q, true)=%v, want ok=%v", tt.issuer, err, tt.anyone)
		}
	}
}

// TestSignInIdentity: the linking rules, step by step on one project,
// on the backend the tests run on.
func TestSignInIdentity(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(db, keys, Config{BaseURL: "https://auth.example.com", AdminToken: "adm_identity_test_token_0123", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := b.Project
	const iss = "https://idp.example.com"
	// account stores a verified account of email.
	account := func(email string) *store.User {
		t.Helper()
		u := &store.User{ID: newID(), ProjectID: p.ID, Email: email, CreatedAt: now, UpdatedAt: now, EmailVerified: boolPtr(true)}
		if err := db.Update(ctx, func(tx store.Tx) error { return tx.PutUser(u) }); err != nil {
			t.Fatal(err)
		}
		return u
	}
	type outcome struct {
		user  *store.User
		isNew bool
		err   error
	}
	signIn := func(idn oauthIdentity) outcome {
		t.Helper()
		var o outcome
		err := db.Update(ctx, func(tx store.Tx) error {
			var err error
			o.user, o.isNew, err = s.signInIdentity(tx, p, &idn)
			var e *Error
			if errors.As(err, &e) {
				o.err = err
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	link := func(sub string) *store.Identity {
		t.Helper()
		var id *store.Identity
		db.View(ctx, func(tx store.Tx) error {
			id, _ = tx.Identity(p.ID, iss, sub)
			return nil
		})
		return id
	}
	want := func(name string, o outcome, user string, isNew bool, err error) {
		t.Helper()
		if !errors.Is(o.err, err) && (o.err != nil || err != nil) {
			t.Fatalf("%s: err=%v, want %v", name, o.err, err)
		}
		got := ""
		if o.user != nil {
			got = o.user.ID
		}
		if user != "*" && got != user || o.isNew != isNew {
			t.Fatalf("%s: user=%q isNew=%v, want %q %v", name, got, o.isNew, user, isNew)
		}
	}

	// A new address: a new user, linked; unverified and registered by
	// itself, as the provider does not link by address (it is not
	// trusted for it); verified from one that does.
	o := signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s1", Email: "new@example.com", EmailVerified: true})
	want("new address", o, "*", true, nil)
	first := o.user.ID
	if l := link("s1"); l == nil || l.UserID != first || l.Provider != "corp" || !l.CreatedAt.Equal(now) {
		t.Fatalf("link of a new user: %+v", l)
	}
	if u := o.user; isVerified(u) || u.Vouched == nil || *u.Vouched {
		t.Fatalf("a non-linking provider's new user: emailVerified %v vouched %v, want false false", u.EmailVerified, u.Vouched)
	}
	o = signIn(oauthIdentity{Provider: "google", Issuer: iss, Subject: "g1", Email: "trusted@example.com", EmailVerified: true, LinkByEmail: true})
	want("new address, linkByEmail true", o, "*", true, nil)
	if u := o.user; !isVerified(u) || u.Vouched != nil {
		t.Fatalf("a linking provider's new user: emailVerified %v vouched %v, want true and unset", u.EmailVerified, u.Vouched)
	}
	// Linked: found whatever the address now, verified or not.
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s1", Email: "changed@example.com"})
	want("linked, address changed", o, first, false, nil)

	// An account of the address, not linked.
	e := account("e@example.com")
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s2", Email: e.Email, EmailVerified: true})
	want("not linked, linkByEmail false", o, e.ID, false, ErrNotLinked)
	if l := link("s2"); l != nil {
		t.Fatalf("a refused sign-in linked: %+v", l)
	}
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s2", Email: e.Email})
	want("not linked, unverified", o, "", false, ErrEmailNotVerified)
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s2", Email: e.Email, EmailVerified: true, LinkByEmail: true})
	want("linkByEmail true", o, e.ID, false, nil)
	if l := link("s2"); l == nil || l.UserID != e.ID {
		t.Fatalf("link by address: %+v", l)
	}

	// An account whose address was never proven and that registered
	// itself (in use: it has a session): refused too without linking
	// by address, replaced with it.
	unproven := account("unproven@example.com")
	err = db.Update(ctx, func(tx store.Tx) error {
		unproven.EmailVerified = boolPtr(false)
		if err := tx.PutUser(unproven); err != nil {
			return err
		}
		return tx.PutSession(&store.Session{ID: newID(), UserID: unproven.ID, ProjectID: p.ID, Method: "passkey", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s4", Email: unproven.Email, EmailVerified: true})
	want("unproven account, linkByEmail false", o, unproven.ID, false, ErrNotLinked)
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s4", Email: unproven.Email, EmailVerified: true, LinkByEmail: true})
	want("unproven account, linkByEmail true", o, "*", true, nil)
	if o.user.ID == unproven.ID || o.user.Email != unproven.Email {
		t.Fatalf("the unproven account was not replaced: %+v", o.user)
	}
	if l := link("s4"); l == nil || l.UserID != o.user.ID {
		t.Fatalf("link of the replacing user: %+v", l)
	}

	// An identity kept by an older release (no issuer): the address
	// rules with linkByEmail false, and no link.
	o = signIn(oauthIdentity{Provider: "corp", Subject: "s1", Email: e.Email, EmailVerified: true})
	want("old identity, existing account", o, e.ID, false, ErrNotLinked)
	o = signIn(oauthIdentity{Provider: "corp", Subject: "s9", Email: "old@example.com", EmailVerified: true})
	want("old identity, new address", o, "*", true, nil)
	if ids := identitiesOf(t, db, o.user.ID); len(ids) != 0 {
		t.Fatalf("an old identity was linked: %+v", ids)
	}

	// Linked, but disabled; linked, with a second factor.
	err = db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(first)
		if err != nil {
			return err
		}
		u.Disabled = true
		if err := tx.PutUser(u); err != nil {
			return err
		}
		return tx.PutFactor(&store.Factor{UserID: e.ID, ProjectID: p.ID, Kind: "totp", Status: "enrolled", CreatedAt: now, EnrolledAt: &now})
	})
	if err != nil {
		t.Fatal(err)
	}
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s1", Email: "new@example.com", EmailVerified: true})
	want("linked, disabled", o, first, false, ErrUserDisabled)
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s2", Email: e.Email, EmailVerified: true, LinkByEmail: true})
	want("linked, second factor", o, e.ID, false, ErrSignInWithEmailFirst)

	// A link whose user is gone (left by an older release) counts as
	// none, and is replaced.
	err = db.Update(ctx, func(tx store.Tx) error {
		return tx.PutIdentity(&store.Identity{ProjectID: p.ID, Issuer: iss, Subject: "s3", UserID: "gone", CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	o = signIn(oauthIdentity{Provider: "corp", Issuer: iss, Subject: "s3", Email: "third@example.com", EmailVerified: true})
	want("link to a gone user", o, "*", true, nil)
	if l := link("s3"); l == nil || l.UserID != o.user.ID {
		t.Fatalf("the link to a gone user was not replaced: %+v", l)
	}
}

// identitiesOf returns userID's provider links.
func identitiesOf(t *testing.T, db store.DB, userID string) []*store.Identity {
	t.Helper()
	var out []*store.Identity
	if err := db.View(ctx, func(tx store.Tx) (err error) { out, err = tx.UserIdentities(userID); return err }); err != nil {
		t.Fatal(err)
	}
	return out
}

// newIdentityService returns a service on a store of the backend the
// tests run on, its store and its first project.
func newIdentityService(t *testing.T) (*Service, store.DB, *store.Project) {
	t.Helper()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(db, keys, Config{BaseURL: "https://auth.example.com", AdminToken: "adm_identity_test_token_0123", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s, db, b.Project
}

// TestNonLinkingProviderCannotHoldAnAddress performs the pre-hijack
// through a provider that does not link by address: whoever controls an
// account there claims the victim's address (verified, as an open
// provider lets anyone say) before the victim signs up. The account it
// creates is unverified and registered by itself, so the owner's first
// sign-in proving the address (an email code) replaces it: a new user,
// and the provider account's link goes with the old one. The provider
// account then finds the owner's verified account and is refused
// (ErrNotLinked), linking nothing.
func TestNonLinkingProviderCannotHoldAnAddress(t *testing.T) {
	s, db, p := newIdentityService(t)
	const iss, addr = "https://open-idp.example.com", "ada@example.com"
	idn := oauthIdentity{Provider: "corp", Issuer: iss, Subject: "mallory", Email: addr, EmailVerified: true}
	signIn := func() (u *store.User, isNew bool, fail error) {
		t.Helper()
		err := db.Update(ctx, func(tx store.Tx) error {
			var err error
			u, isNew, err = s.signInIdentity(tx, p, &idn)
			if isAuthError(err) {
				fail = err
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return u, isNew, fail
	}
	att, isNew, err := signIn()
	if err != nil || !isNew || isVerified(att) {
		t.Fatalf("first provider sign-in: %+v new=%v err=%v", att, isNew, err)
	}
	if ids := identitiesOf(t, db, att.ID); len(ids) != 1 {
		t.Fatalf("links of the provider's user: %+v", ids)
	}

	var owner *store.User
	err = db.Update(ctx, func(tx store.Tx) error {
		var err error
		owner, isNew, err = s.provenUser(tx, p, addr) // an email code sign-in
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !isNew || owner.ID == att.ID || !isVerified(owner) {
		t.Fatalf("the owner's sign-in: %+v new=%v, want a new verified user", owner, isNew)
	}
	if ids := identitiesOf(t, db, owner.ID); len(ids) != 0 {
		t.Fatalf("the provider account's link carried over to the owner: %+v", ids)
	}
	if ids := identitiesOf(t, db, att.ID); len(ids) != 0 {
		t.Fatalf("the replaced user kept its link: %+v", ids)
	}
	u, _, err := signIn()
	if !errors.Is(err, ErrNotLinked) || u == nil || u.ID != owner.ID {
		t.Fatalf("the provider account afterwards: %+v err=%v, want ErrNotLinked", u, err)
	}
	if ids := identitiesOf(t, db, owner.ID); len(ids) != 0 {
		t.Fatalf("a refused sign-in linked: %+v", ids)
	}
}

// TestImportOntoNonLinkingProviderAccount: an import line for an address
// that a provider which does not link by address registered (unverified,
// by itself) never merges into that account: a line without
// emailVerified true is rejected, changing nothing; one with it replaces
// the account (its link to the provider account goes with it) by a new
// user that carries the line's fields.
func TestImportOntoNonLinkingProviderAccount(t *testing.T) {
	s, db, p := newIdentityService(t)
	idn := oauthIdentity{Provider: "corp", Issuer: "https://open-idp.example.com", Subject: "mallory", Email: "ada@example.com", EmailVerified: true}
	var att *store.User
	if err := db.Update(ctx, func(tx store.Tx) (err error) { att, _, err = s.signInIdentity(tx, p, &idn); return err }); err != nil {
		t.Fatal(err)
	}
	user := func() *store.User {
		t.Helper()
		var u *store.User
		if err := db.View(ctx, func(tx store.Tx) (err error) { u, err = tx.UserByEmail(p.ID, idn.Email); return err }); err != nil {
			t.Fatal(err)
		}
		return u
	}

	rep, err := s.ImportUsers(ctx, p.ID, strings.NewReader(`{"email":"ada@example.com","externalUserId":"legacy-42","firstName":"Ada"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created != 0 || rep.Updated != 0 || len(rep.Rejected) != 1 || rep.Rejected[0].Error != whyUnproven {
		t.Fatalf("report %+v, want the line rejected", rep)
	}
	if u := user(); u.ID != att.ID || u.ExternalUserID != "" || u.FirstName != "" {
		t.Fatalf("a rejected line changed the account: %+v", u)
	}

	rep, err = s.ImportUsers(ctx, p.ID, strings.NewReader(`{"email":"ada@example.com","externalUserId":"legacy-42","firstName":"Ada","emailVerified":true}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created != 1 || rep.Updated != 0 || len(rep.Rejected) != 0 {
		t.Fatalf("report %+v, want the account replaced (created 1)", rep)
	}
	u := user()
	if u.ID == att.ID || u.ExternalUserID != "legacy-42" || u.FirstName != "Ada" || !isVerified(u) {
		t.Fatalf("after the import: %+v", u)
	}
	if ids := identitiesOf(t, db, u.ID); len(ids) != 0 {
		t.Fatalf("the provider account's link carried over: %+v", ids)
	}
	var linked *store.User
	if err := db.View(ctx, func(tx store.Tx) (err error) { linked, err = linkedUser(tx, p, &idn); return err }); err != nil || linked != nil {
		t.Fatalf("the provider account still finds %+v (err %v)", linked, err)
	}
}
