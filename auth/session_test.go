package auth

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"latchkey/store"
)

// TestTokenCacheDroppedWithSession: a verified token is cached; once its
// session row is gone (logout here; deletion and disabling delete the
// rows the same way) the next check fails and evicts it.
func TestTokenCacheDroppedWithSession(t *testing.T) {
	db, _, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	keys, err := store.NewKeyring(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s, err := New(db, keys, Config{BaseURL: "http://127.0.0.1:1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.Init()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendOTP(boot.Project, "c@example.com", Meta{}); err != nil {
		t.Fatal(err)
	}
	var content store.MailContent
	db.View(func(tx store.Tx) error {
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
	l, err := s.VerifyOTP(boot.Project, OTPInput{Email: "c@example.com", Code: content.Code}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if s.tokens.cached(l.Token) {
		t.Fatal("cached before first use")
	}
	pr, err := s.AuthenticateSession("Bearer " + l.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !s.tokens.cached(l.Token) {
		t.Fatal("not cached after a successful check")
	}
	if err := s.Logout(pr, LogoutThis); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthenticateSession("Bearer " + l.Token); err != ErrInvalidSession {
		t.Fatalf("after logout: %v, want ErrInvalidSession", err)
	}
	if s.tokens.cached(l.Token) {
		t.Fatal("dead token still cached")
	}
}
