package autotls

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"latchkey/internal/testkit"
	"latchkey/store"
	_ "latchkey/store/bolt"
	_ "latchkey/store/postgres"
	"latchkey/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// TestQuietLog: one line a minute at most, the next one counting the
// failures left out.
func TestQuietLog(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	var buf testkit.Buffer
	q := &quietLog{log: slog.New(slog.NewTextHandler(&buf, nil)), now: clock.Now, msg: "tls: failed"}
	logged := []bool{q.warn("err", "a")}
	clock.Advance(30 * time.Second)
	logged = append(logged, q.warn("err", "b"), q.warn("err", "c"))
	clock.Advance(30 * time.Second)
	logged = append(logged, q.warn("err", "d"))
	if want := []bool{true, false, false, true}; !equalBools(logged, want) {
		t.Errorf("logged %v, want %v", logged, want)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "err=a") || strings.Contains(lines[0], "suppressed") ||
		!strings.Contains(lines[1], "err=d suppressed=2") {
		t.Errorf("log:\n%s", buf.String())
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCache: entries round-trip through the store sealed and bound to
// their name (a sealed value moved to another name does not open); a
// missing one is autocert.ErrCacheMiss; Delete removes one.
func TestCache(t *testing.T) {
	t.Parallel()
	db, _, err := store.Open(context.Background(), storetest.New(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	keys, err := store.NewKeyring(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	c := &Cache{DB: db, Keys: keys}
	ctx := context.Background()
	secret := []byte("-----BEGIN EC PRIVATE KEY-----\nsecret\n-----END EC PRIVATE KEY-----\n")
	if err := c.Put(ctx, "auth.example.com", secret); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "auth.example.com"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	var raw []byte
	db.View(ctx, func(tx store.Tx) error {
		e, err := tx.TLSCacheEntry("auth.example.com")
		if err == nil {
			raw = e.Data
		}
		return err
	})
	if raw == nil || bytes.Contains(raw, []byte("PRIVATE KEY")) || bytes.Contains(raw, []byte("secret")) {
		t.Fatalf("stored %q: want it sealed", raw)
	}
	if err := db.Update(ctx, func(tx store.Tx) error {
		return tx.PutTLSCacheEntry(&store.TLSCacheEntry{Key: "other.example.com", Data: raw})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "other.example.com"); err == nil || errors.Is(err, autocert.ErrCacheMiss) {
		t.Errorf("a sealed value under another name opened: %v", err)
	}
	if err := c.Delete(ctx, "auth.example.com"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"auth.example.com", "never.example.com"} {
		if _, err := c.Get(ctx, key); !errors.Is(err, autocert.ErrCacheMiss) {
			t.Errorf("Get(%s) = %v, want ErrCacheMiss", key, err)
		}
	}
}
