package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkMigrateEvents times the one-time upgrade of a version 1 file
// holding 500,000 events (JSON, no index) at its first open. One op is one
// upgrade; run it with -benchtime 1x:
//
//	LATCHKEY_BENCH_SCALE=1 go test -run XXX -bench MigrateEvents -benchtime 1x ./store/
func BenchmarkMigrateEvents(b *testing.B) {
	if os.Getenv("LATCHKEY_BENCH_SCALE") == "" {
		b.Skip("set LATCHKEY_BENCH_SCALE=1 to build a file of 500,000 version 1 events")
	}
	const n = 500_000
	for range b.N {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "v1.db")
		raw, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i += 50_000 {
			err := raw.Update(func(tx *bolt.Tx) error {
				meta, _ := tx.CreateBucketIfNotExists(bucketMeta)
				meta.Put(keySchema, u64(1))
				ev, _ := tx.CreateBucketIfNotExists(bucketEvents)
				for j := i; j < i+50_000; j++ {
					e := sampleEvent(j)
					e.CreatedAt = time.Now().Add(time.Duration(j-n) * time.Second)
					v, _ := json.Marshal(e)
					seq, _ := ev.NextSequence()
					if err := ev.Put(EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: seq}.key(), v); err != nil {
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
		db, _, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		var count int
		db.View(func(tx *Tx) error {
			count = tx.AuthEventCount(fmt.Sprintf("%08x-0000-4000-8000-00000000beef", 0))
			return nil
		})
		db.Close()
		if count == 0 {
			b.Fatal("nothing indexed")
		}
		b.ReportMetric(float64(n)/took.Seconds(), "events/s")
	}
}
