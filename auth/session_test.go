package auth

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestTokenCacheDroppedWithSession: a token is cached when it is signed
// and again when it is verified; once its session row is gone (logout
// here; deletion and disabling delete the rows the same way) the next
// check fails and evicts it.
func TestTokenCacheDroppedWithSession(t *testing.T) {
	s, l := signedIn(t, Config{})
	if !s.tokens.cached(l.Token) {
		t.Fatal("not cached when signed")
	}
	s.tokens.drop(l.Token)
	pr, err := s.AuthenticateSession(ctx, "Bearer "+l.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !s.tokens.cached(l.Token) {
		t.Fatal("not cached after a successful check")
	}
	if err := s.Logout(ctx, pr, LogoutThis); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthenticateSession(ctx, "Bearer "+l.Token); err != ErrInvalidSession {
		t.Fatalf("after logout: %v, want ErrInvalidSession", err)
	}
	if s.tokens.cached(l.Token) {
		t.Fatal("dead token still cached")
	}
}

// TestTokenCachedWhenSigned: the principal remembered when a token is
// signed is the one its verification gives, so a first check served from
// the cache answers as a verified one would.
func TestTokenCachedWhenSigned(t *testing.T) {
	s, l := signedIn(t, Config{})
	signed, ok := s.tokens.get(l.Token)
	if !ok {
		t.Fatal("not cached when signed")
	}
	s.tokens.drop(l.Token)
	verified, err := s.AuthenticateSession(ctx, "Bearer "+l.Token)
	if err != nil {
		t.Fatal(err)
	}
	want := Principal{SessionID: l.Session.ID, UserID: l.User.ID, ProjectID: l.project.ID,
		IssuedAt: l.Session.IssuedAt.Unix(), ExpiresAt: l.Session.ExpiresAt.Unix()}
	if signed != *verified || signed != want {
		t.Fatalf("cached when signed %+v, verified %+v, want %+v", signed, *verified, want)
	}
}

// TestAuthenticateSessionAllocs: the session check on the path of every
// user call allocates no more than before the store became an interface
// (10 with a cached token on a bbolt file, bbolt's own read transaction
// included). A closure handed to DB.View, an interface method, would be
// one more: see sessionProbe. Other backends allocate what they must.
func TestAuthenticateSessionAllocs(t *testing.T) {
	if storetest.Backend(t) != storetest.Bolt {
		t.Skip("the bound is bbolt's")
	}
	s, l := signedIn(t, Config{SessionRateLimit: 1 << 30})
	header := "Bearer " + l.Token
	if _, err := s.AuthenticateSession(ctx, header); err != nil { // caches the token
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() { s.AuthenticateSession(ctx, header) }); n > 10 {
		t.Fatalf("AuthenticateSession allocates %v times, want at most 10", n)
	}
}

// signedIn returns a service on a fresh store (clock fixed, cfg's other
// settings applied) and the login of a user signed in by email OTP.
func signedIn(t *testing.T, cfg Config) (*Service, *Login) {
	t.Helper()
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cfg.BaseURL, cfg.Now = "http://127.0.0.1:1", func() time.Time { return now }
	s, err := New(db, keys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendOTP(ctx, boot.Project, "c@example.com", Meta{}); err != nil {
		t.Fatal(err)
	}
	var content store.MailContent
	db.View(ctx, func(tx store.Tx) error {
		ms, err := tx.DueMail(now.Add(time.Hour), 10)
		if err != nil || len(ms) != 1 {
			t.Fatalf("queued mail: %v %d", err, len(ms))
		}
		body, err := keys.Open(ms[0].Body, store.MailAAD)
		if err != nil {
			t.Fatal(err)
		}
		return json.Unmarshal(body, &content)
	})
	l, err := s.VerifyOTP(ctx, boot.Project, OTPInput{Email: "c@example.com", Code: content.Code}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}
