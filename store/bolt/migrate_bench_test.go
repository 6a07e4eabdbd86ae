package bolt

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// BenchmarkMigrateEvents times the one-time upgrade of a version 1 file
// holding 500,000 events (JSON, no index) at its first open. One op is one
// upgrade; run it with -benchtime 1x:
//
//	LATCHKEY_BENCH_SCALE=1 go test -run XXX -bench MigrateEvents -benchtime 1x ./store/bolt/
func BenchmarkMigrateEvents(b *testing.B) {
	if os.Getenv("LATCHKEY_BENCH_SCALE") == "" {
		b.Skip("set LATCHKEY_BENCH_SCALE=1 to build a file of 500,000 version 1 events")
	}
	const n = 500_000
	for range b.N {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "v1.db")
		raw, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i += 50_000 {
			err := raw.Update(func(tx *bbolt.Tx) error {
				meta, _ := tx.CreateBucketIfNotExists(bucketMeta)
				meta.Put(keySchema, u64(1))
				ev, _ := tx.CreateBucketIfNotExists(bucketEvents)
				for j := i; j < i+50_000; j++ {
					e := sampleEvent(j)
					e.CreatedAt = time.Now().Add(time.Duration(j-n) * time.Second)
					v, _ := json.Marshal(e)
					seq, _ := ev.NextSequence()
					if err := ev.Put(posKey(store.EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: seq}), v); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		raw.Close()
		b.StartTimer()
		start := time.Now()
		db, _, err := openDB(path, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		var count int
		db.viewTx(func(tx txn) error {
			count = must(tx.AuthEventCount(fmt.Sprintf("%08x-0000-4000-8000-00000000beef", 0)))
			return nil
		})
		db.Close()
		if count == 0 {
			b.Fatal("nothing indexed")
		}
		b.ReportMetric(float64(n)/took.Seconds(), "events/s")
	}
}

// BenchmarkMigrateExpiry times the one-time upgrade of a version 2 file
// holding 1,000,000 sessions and 1,000,000 remembered devices as version
// 2 wrote them (JSON, no expiry index) at its first open: every row is
// read once and indexed. One op is one upgrade; run it with -benchtime 1x:
//
//	LATCHKEY_BENCH_SCALE=1 go test -run XXX -bench MigrateExpiry -benchtime 1x ./store/bolt/
func BenchmarkMigrateExpiry(b *testing.B) {
	if os.Getenv("LATCHKEY_BENCH_SCALE") == "" {
		b.Skip("set LATCHKEY_BENCH_SCALE=1 to build a version 2 file of a million sessions and devices")
	}
	const n = 1_000_000
	for range b.N {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "v2.db")
		raw, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UTC()
		for i := 0; i < n; i += 100_000 {
			err := raw.Update(func(tx *bbolt.Tx) error {
				for _, name := range allBuckets {
					if _, err := tx.CreateBucketIfNotExists(name); err != nil {
						return err
					}
				}
				tx.Bucket(bucketMeta).Put(keySchema, u64(2))
				for j := i; j < i+100_000; j++ {
					uid := fmt.Sprintf("%08x-58cc-7372-a567-0e02b2c3d479", j)
					s := store.Session{ID: fmt.Sprintf("%08x-9d7a-7c1e-8f00-%012x", j, j), UserID: uid, ProjectID: "0193a0d5-c3d2-7e80-9000-0000000000bb",
						Method: "email_otp", IssuedAt: now, ExpiresAt: now.Add(time.Duration(j) * time.Second), IP: "203.0.113.7",
						UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"}
					v, _ := json.Marshal(s)
					tx.Bucket(bucketSessions).Put([]byte(s.ID), v)
					tx.Bucket(bucketUserSessions).Put(compound(s.UserID, s.ID), nil)
					key := []byte(fmt.Sprintf("%016x", j))
					v, _ = json.Marshal(map[string]any{"key": key, "hash": key, "userId": uid, "projectId": s.ProjectID, "createdAt": now})
					tx.Bucket(bucketDevices).Put(key, v)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		raw.Close()
		b.StartTimer()
		start := time.Now()
		db, _, err := openDB(path, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		var indexed int
		db.viewTx(func(tx txn) error {
			indexed = must(tx.ExpiringCount(store.ExpiringSessions)) + must(tx.ExpiringCount(store.ExpiringDevices))
			return nil
		})
		db.Close()
		if indexed != 2*n {
			b.Fatalf("%d rows indexed, want %d", indexed, 2*n)
		}
		b.ReportMetric(took.Seconds(), "upgrade-s")
		b.ReportMetric(float64(2*n)/took.Seconds(), "rows/s")
	}
}
