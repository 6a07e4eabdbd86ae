package bolt

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func openTestDB(t *testing.T, opt store.Options) *DB {
	t.Helper()
	db, _, err := openDB(filepath.Join(t.TempDir(), "ev.db"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	return db
}

// checkEventIndex fails unless every event has exactly its index entry
// and every scope's total equals its events (Check verifies both).
func checkEventIndex(t *testing.T, db *DB) {
	t.Helper()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// addEvents stores events in one transaction.
func addEvents(t *testing.T, db *DB, evs []*store.AuthEvent) {
	t.Helper()
	if err := db.updateTx(func(tx txn) error {
		for _, e := range evs {
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestAuthEventEncoding(t *testing.T) {
	t.Parallel()
	tests := []store.AuthEvent{
		{},
		{ID: "0b6f3f4e-9d7a-4c1e-8f00-123456789abc", ProjectID: "5c1e0a4e-0000-4000-8000-00000000beef", UserID: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
			Email: "ada@example.com", Method: "email_otp", Action: "verify", Success: true, IP: "203.0.113.5", UserAgent: "Mozilla/5.0 (X11; Linux x86_64)"},
		{ID: "0B6F3F4E-9D7A-4C1E-8F00-123456789ABC", ProjectID: "p-doomed", UserID: "u\x00x", Method: "magic_link", Action: "verify",
			FailureCode: "invalid_code", IP: "2001:db8::7", UserAgent: "é"},
		{ID: "x", IP: "::ffff:203.0.113.6"},
		{ID: "y", IP: "fe80::1%eth0"},
		{ID: "z", IP: "010.1.2.3"},
		{ID: "w", IP: "nope"},
	}
	for i, e := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e.CreatedAt = t0.Add(time.Duration(i) * time.Microsecond)
			e.Pos = store.EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: uint64(i + 1)}
			v := encodeAuthEvent(&e)
			got, err := decodeAuthEvent(posKey(e.Pos), v)
			if err != nil {
				t.Fatal(err)
			}
			if *got != e {
				t.Fatalf("decoded %+v, want %+v", *got, e)
			}
			scope, kind, err := eventHead(v)
			if err != nil || scope != e.ProjectID || kind != eventKind(&e) {
				t.Fatalf("head %q %q %v, want %q %q", scope, kind, err, e.ProjectID, eventKind(&e))
			}
			for n := 0; n < len(v); n++ {
				if _, err := decodeAuthEvent(posKey(e.Pos), v[:n]); err == nil {
					t.Fatalf("truncated record of %d/%d bytes decoded", n, len(v))
				}
			}
		})
	}
	// A record written before the compact encoding (JSON) still decodes.
	old := store.AuthEvent{ID: "a", ProjectID: "p", Method: "email_otp", Action: "send", Success: true, CreatedAt: t0}
	raw, _ := json.Marshal(old)
	got, err := decodeAuthEvent(posKey(store.PosBefore(t0)), raw)
	if err != nil || got.ID != "a" || !got.CreatedAt.Equal(t0) || !got.Success {
		t.Fatalf("JSON record: %+v %v", got, err)
	}
	// The compact form is much smaller than JSON.
	full := tests[1]
	full.CreatedAt = t0
	js, _ := json.Marshal(full)
	if c := encodeAuthEvent(&full); len(c)*2 > len(js) {
		t.Fatalf("compact %d bytes, JSON %d", len(c), len(js))
	}
}

// TestMigrateEvents: a version 1 file's events (JSON, time order only) are
// indexed and counted at the first open, also when an earlier upgrade
// stopped half way.
func TestMigrateEvents(t *testing.T) {
	defer smallMigrateChunks()()
	for _, interrupted := range []bool{false, true} {
		t.Run(fmt.Sprint("interrupted=", interrupted), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v1.db")
			b, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := migrateChunk + 500
			b.Update(func(tx *bbolt.Tx) error {
				meta, _ := tx.CreateBucket(bucketMeta)
				meta.Put(keySchema, u64(1))
				ev, _ := tx.CreateBucket(bucketEvents)
				for i := range n {
					e := store.AuthEvent{ID: fmt.Sprint(i), ProjectID: []string{"A", ""}[i%2], Success: i%5 == 0, FailureCode: map[bool]string{true: "", false: "expired"}[i%5 == 0],
						CreatedAt: t0.Add(time.Duration(i) * time.Second)}
					raw, _ := json.Marshal(e)
					ev.Put(posKey(store.EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: uint64(i + 1)}), raw)
				}
				ev.SetSequence(uint64(n))
				if interrupted {
					// An upgrade that indexed the first chunk and stopped.
					bt := txn{tx}
					for _, name := range allBuckets {
						tx.CreateBucketIfNotExists(name)
					}
					c := tx.Bucket(bucketEvents).Cursor()
					var last []byte
					k, v := c.First()
					for range 100 {
						scope, kind, _ := eventHead(v)
						hour := hourOf(time.Unix(0, posOf(k).Nanos))
						tx.Bucket(bucketEventIndex).Put(append(indexPrefix(scope, kind), k...), []byte{})
						bt.addCount(countKey(scope, hour, kind), 1)
						bt.addCount(countKey(allScope, hour, kind), 1)
						bt.addTotal(scope, 1)
						last = clone(k)
						k, v = c.Next()
					}
					tx.Bucket(bucketMeta).Put(keyEventMigration, last)
				}
				return nil
			})
			b.Close()
			db, _, err := openDB(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			checkEventIndex(t, db)
			db.viewTx(func(tx txn) error {
				if v := tx.bucket(bucketMeta).Get(keySchema); getU64(v) != SchemaVersion {
					t.Fatalf("schema %d after the upgrade", getU64(v))
				}
				if tx.bucket(bucketMeta).Get(keyEventMigration) != nil {
					t.Fatal("migration progress left behind")
				}
				if a, none := must(tx.AuthEventCount("A")), must(tx.AuthEventCount("")); a+none != n || a != n/2 {
					t.Fatalf("totals A %d, none %d", a, none)
				}
				evs, _, _ := tx.AuthEvents(store.AuthEventFilter{ProjectID: "A", FailureCode: "expired", Limit: 3})
				if len(evs) != 3 || evs[0].ID != fmt.Sprint(n-2) {
					t.Fatalf("newest expired of A: %+v", evs)
				}
				hc, _ := tx.HourlyCounts("", t0, t0.Add(24*time.Hour))
				var sum int64
				for _, c := range hc {
					sum += c.N
				}
				if sum != int64(n) {
					t.Fatalf("hourly counters sum to %d, want %d", sum, n)
				}
				return nil
			})
			// New events go on from the old sequence.
			addEvents(t, db, []*store.AuthEvent{{ProjectID: "A", Success: true, CreatedAt: t0.Add(time.Duration(n) * time.Second)}})
			checkEventIndex(t, db)
			if err := db.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAuthEventBytes reports the file bytes per stored event (about the
// record plus its index entry and counters) with a browser's user agent.
func TestAuthEventBytes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("short")
	}
	db := openTestDB(t, store.Options{})
	const n = 20_000
	var evs []*store.AuthEvent
	for i := range n {
		evs = append(evs, sampleEvent(i))
	}
	for i := 0; i < n; i += 5000 {
		addEvents(t, db, evs[i:i+5000])
	}
	var size int64
	db.viewTx(func(tx txn) error { size = tx.tx.Size(); return nil })
	perEvent := float64(size) / n
	t.Logf("%.0f bytes of file per event (%d events, %d bytes)", perEvent, n, size)
	if perEvent > 400 {
		t.Fatalf("%.0f bytes per event, want at most 400", perEvent)
	}
}

// sampleEvent is a realistic event: a browser user agent, UUIDs, a
// sign-in by code in one of three projects.
func sampleEvent(i int) *store.AuthEvent {
	return &store.AuthEvent{
		ID:        fmt.Sprintf("%08x-9d7a-4c1e-8f00-%012x", i, i),
		ProjectID: fmt.Sprintf("%08x-0000-4000-8000-00000000beef", i%3),
		UserID:    fmt.Sprintf("%08x-58cc-4372-a567-0e02b2c3d479", i/2),
		Email:     fmt.Sprintf("user%d@example.com", i/2),
		Method:    "email_otp", Action: []string{"send", "verify"}[i%2], Success: i%7 != 0,
		FailureCode: map[bool]string{true: "", false: "invalid_code"}[i%7 != 0],
		IP:          fmt.Sprintf("203.0.%d.%d", i/256%256, i%256),
		UserAgent:   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
		CreatedAt:   t0.Add(time.Duration(i) * 100 * time.Millisecond),
	}
}
