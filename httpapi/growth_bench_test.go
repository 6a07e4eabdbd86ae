package httpapi

import (
	"fmt"
	"os"
	"testing"

	"latchkey/store"
)

// BenchmarkLoginBytes measures how much of the data file an email OTP
// login of a new user takes: b.N logins (send, then verify with the
// emailed code) through HTTP from 64 clients, in rounds of 2,000; after
// each round the sent mail and the fanned-out outbox events are deleted,
// as the mail queue and the webhook worker do. It reports the growth of
// the pages that hold data (in-use-B/login) and of the file
// (file-B/login) between the end of a first warm-up round and the end,
// not compacted. Run it with a fixed count:
//
//	go test -run XXX -bench LoginBytes -benchtime 20000x ./httpapi/
func BenchmarkLoginBytes(b *testing.B) {
	e := newBenchEnv(b)
	const round = 2000
	login := func(w, i int) error {
		email := fmt.Sprintf("u%d-%d@example.com", w, i)
		if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
			return err
		}
		_, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
		return err
	}
	var start store.Space
	done := 0
	b.ResetTimer()
	for r := 0; done < b.N; r++ {
		n := min(round, b.N-done)
		base := done
		e.run(b, 64, n, func(w, i int) error { return login(w, base+i) })
		done += n
		e.purgeQueues(b)
		if r == 0 {
			start = e.db.Space()
		}
	}
	b.StopTimer()
	end := e.db.Space()
	if n := b.N - min(round, b.N); n > 0 {
		b.ReportMetric(float64(end.InUse()-start.InUse())/float64(n), "in-use-B/login")
		b.ReportMetric(float64(end.FileSize-start.FileSize)/float64(n), "file-B/login")
	}
	b.ReportMetric(float64(end.FileSize)/float64(b.N), "total-file-B/login")
	keepBench(e)
}

// run calls do n times from conc goroutines (i from 0 to n-1) and fails
// b on the first error.
func (e *benchEnv) run(b *testing.B, conc, n int, do func(worker, i int) error) {
	b.Helper()
	errs := make(chan error, conc)
	next := make(chan int)
	for w := range conc {
		go func() {
			var err error
			for i := range next {
				if err == nil {
					err = do(w, i)
				}
			}
			errs <- err
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	for range conc {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// purgeQueues deletes every queued mail and outbox event, as the mail
// queue and the webhook worker (with no webhook) do after sending.
func (e *benchEnv) purgeQueues(b *testing.B) {
	b.Helper()
	for {
		n := 0
		err := e.db.Update(func(tx *store.Tx) error {
			var ids []uint64
			tx.RecentMail(func(m *store.Mail) bool { ids = append(ids, m.ID); return len(ids) < 5000 })
			for _, id := range ids {
				if err := tx.DeleteMail(id); err != nil {
					return err
				}
			}
			evs, err := tx.EventsAfter(0, 5000)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if err := tx.DeleteEvent(ev.Seq); err != nil {
					return err
				}
			}
			n = len(ids) + len(evs)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// keepBench copies the benchmark's data file to $LATCHKEY_BENCH_KEEP, when
// set, for a look at its buckets (bbolt stats).
func keepBench(e *benchEnv) {
	if p := os.Getenv("LATCHKEY_BENCH_KEEP"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return
		}
		e.db.WriteTo(f)
		f.Close()
	}
}
