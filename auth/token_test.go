package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
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
	t.Parallel()
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

// TestSessionOfAnotherUser: a token whose session row belongs to another
// user than its subject (which only a forger holding the project's key
// could sign) is refused and leaves the token cache.
func TestSessionOfAnotherUser(t *testing.T) {
	s, l := signedIn(t, Config{})
	other := *l.Session
	other.UserID = "someone-else"
	tok, _, err := s.signSession(l.project, &other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthenticateSession(ctx, "Bearer "+tok); err != ErrInvalidSession {
		t.Fatalf("a session row of another user: %v, want ErrInvalidSession", err)
	}
	if s.tokens.cached(tok) {
		t.Fatal("the refused token is still cached")
	}
	if _, err := s.AuthenticateSession(ctx, "Bearer "+l.Token); err != nil {
		t.Fatalf("the session's own token: %v", err)
	}
}

// TestTokenCachedWhenSigned: the principal remembered when a token is
// signed is the one its verification gives, so a first check served from
// the cache answers as a verified one would.
func TestTokenCachedWhenSigned(t *testing.T) {
	t.Parallel()
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
		IssuedAt: l.Session.IssuedAt.Unix(), ExpiresAt: l.Session.IssuedAt.Unix() + DefaultSessionTTL}
	if signed != *verified || signed != want {
		t.Fatalf("cached when signed %+v, verified %+v, want %+v", signed, *verified, want)
	}
}

// TestAuthenticateSessionAllocs: the session check on the path of every
// user call, with a token and a session already known, allocates only
// the principal it returns (it allocated 10 times, bbolt's read
// transaction included, before the store answered known sessions from
// memory), reads and writes alike, on either backend.
func TestAuthenticateSessionAllocs(t *testing.T) {
	s, l := signedIn(t, Config{})
	header := "Bearer " + l.Token
	if _, err := s.AuthenticateSession(ctx, header); err != nil { // caches the token and the session
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() { s.AuthenticateSession(ctx, header) }); n > 1 {
		t.Fatalf("AuthenticateSession allocates %v times, want at most 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.AuthenticateSessionWrite(ctx, header) }); n > 1 {
		t.Fatalf("AuthenticateSessionWrite allocates %v times, want at most 1", n)
	}
}

// countingDB is a store that counts the transactions begun through it.
type countingDB struct {
	store.DB
	views, updates atomic.Int64
}

func (c *countingDB) View(ctx context.Context, fn func(store.Tx) error) error {
	c.views.Add(1)
	return c.DB.View(ctx, fn)
}

func (c *countingDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.DB.Update(ctx, fn)
}

func (c *countingDB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.DB.Batch(ctx, fn)
}

// TestSessionCheckTakesNoTransaction: once a token and its session are
// known, a check begins no store transaction (on bbolt a read
// transaction takes the file's meta lock, which every check of every
// session would share) and writes nothing; a logout still ends the
// session for the next check.
func TestSessionCheckTakesNoTransaction(t *testing.T) {
	t.Parallel()
	db := &countingDB{DB: storetest.Open(t)}
	keys, err := store.NewKeyring(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var clock atomic.Int64 // minutes after now
	s, err := New(db, keys, Config{BaseURL: "http://127.0.0.1:1", Now: func() time.Time { return now.Add(time.Duration(clock.Load()) * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var u *store.User
	sess := s.newSession(boot.Project, &store.User{ID: "u1", ProjectID: boot.Project.ID}, "otp")
	if err := db.Update(ctx, func(tx store.Tx) error {
		u = &store.User{ID: "u1", ProjectID: boot.Project.ID, Email: "u1@example.com", CreatedAt: now}
		if err := tx.PutUser(u); err != nil {
			return err
		}
		return tx.PutSession(sess)
	}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := s.signSession(boot.Project, sess)
	if err != nil {
		t.Fatal(err)
	}
	header := "Bearer " + tok
	pr, err := s.AuthenticateSession(ctx, header)
	if err != nil {
		t.Fatal(err)
	}
	// On PostgreSQL the session cache is not read while the invalidation
	// feed is stale (a reader starved on a loaded machine), so a round
	// may read once; a check that always reads fails every round.
	for round := 1; ; round++ {
		// Each round in a minute of its own: 200 checks a round stay
		// under the session's rate limit, three rounds in one would not.
		clock.Add(1)
		views, updates := db.views.Load(), db.updates.Load()
		for range 100 {
			if _, err := s.AuthenticateSession(ctx, header); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AuthenticateSessionWrite(ctx, header); err != nil {
				t.Fatal(err)
			}
		}
		v, w := db.views.Load()-views, db.updates.Load()-updates
		if v == 0 && w == 0 {
			break
		}
		if round == 3 {
			t.Fatalf("200 checks of a known session began %d read and %d write transactions, want none (three rounds)", v, w)
		}
	}
	if err := s.Logout(ctx, pr, LogoutThis); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthenticateSession(ctx, header); err != ErrInvalidSession {
		t.Fatalf("after logout: %v, want ErrInvalidSession", err)
	}
}

// signedIn returns a service on a fresh store (clock fixed, cfg's other
// settings applied) and the login of a user signed in by email OTP.
func signedIn(t testing.TB, cfg Config) (*Service, *Login) {
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
