package httpapi

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
	"latchkey/store/storetest"
)

// BenchmarkLoginBytes measures how much of the data file an email OTP
// login of a new user takes: b.N logins (send, then verify with the
// emailed code) through HTTP from 64 clients, in rounds of 2,000; after
// each round the sent mail and the fanned-out outbox events are deleted,
// as the mail queue and the webhook worker do. It reports the growth of
// the pages that hold data (in-use-B/login) and of the file
// (file-B/login) between the end of a first warm-up round and the end,
// not compacted, and the pages the commits wrote (page-writes/login,
// which the batching of concurrent logins into one commit lowers). Run
// it with a fixed count:
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
			start = e.file(b).Space()
		}
	}
	b.StopTimer()
	end := e.file(b).Space()
	if n := b.N - min(round, b.N); n > 0 {
		b.ReportMetric(float64(end.InUse()-start.InUse())/float64(n), "in-use-B/login")
		b.ReportMetric(float64(end.FileSize-start.FileSize)/float64(n), "file-B/login")
		b.ReportMetric(float64(end.PagesWritten-start.PagesWritten)/float64(n), "page-writes/login")
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
		err := e.db.Update(ctx, func(tx store.Tx) error {
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
		e.db.(store.File).WriteTo(f)
		f.Close()
	}
}

// BenchmarkRatiosAtScale measures GET /session and the email OTP login
// as ratios to the floor (a trivial JSON handler on the same stack), on a
// file holding 10,000 users and on one holding 1,000,000 (each user with
// a live session and a remembered device, and two events per user, loaded
// straight through the store): the ratios at a million users should stay
// within 5% of those at ten thousand. Both servers run side by side; five
// rounds alternate between them, each round measuring the floor, GET
// /session (32 clients) and OTP logins (64 clients) and taking the ratios
// within the round, and the median round of each size is kept (the shared
// machine's load moves more between rounds than the ratios do). It takes
// a few minutes and about 1.6 GB of disk:
//
//	LATCHKEY_BENCH_SCALE=1 go test -run XXX -bench RatiosAtScale -benchtime 2s ./httpapi/
func BenchmarkRatiosAtScale(b *testing.B) {
	if os.Getenv("LATCHKEY_BENCH_SCALE") == "" {
		b.Skip("set LATCHKEY_BENCH_SCALE=1 to load a million users")
	}
	sizes := []int{10_000, 1_000_000}
	envs := make([]*benchEnv, len(sizes))
	tokens := make([][]string, len(sizes))
	for k, users := range sizes {
		e := newBenchEnv(b)
		projects := []string{e.project.ID}
		for i := 1; i < 10; i++ {
			name := fmt.Sprint("p", i)
			p, err := e.svc.CreateProject(ctx, auth.ProjectInput{Name: &name})
			if err != nil {
				b.Fatal(err)
			}
			projects = append(projects, p.ID)
		}
		start := time.Now()
		if _, err := storetest.Load(e.db, storetest.Growth{ProjectID: e.project.ID, EventProjects: projects,
			Users: users, Sessions: true, Devices: true, Events: 2 * users}); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("ratios: users=%d loaded in %v, file %d MB\n", users, time.Since(start).Round(time.Second), e.file(b).Space().FileSize>>20)
		tokens[k] = make([]string, benchConc)
		for i := range tokens[k] {
			tokens[k][i] = e.loginDirect(b, fmt.Sprintf("ratio%d@example.com", i))
		}
		envs[k] = e
	}
	sessionRatio := make([][]float64, len(sizes))
	loginRatio := make([][]float64, len(sizes))
	for round := 1; round <= 5; round++ {
		for k, users := range sizes {
			e := envs[k]
			var rate [3]float64
			measure := func(i int, name string, conc int, do func(w, i int) error) {
				b.Run(fmt.Sprintf("users=%d/%s#%d", users, name, round), func(b *testing.B) {
					e.load(b, conc, do)
					rate[i] = float64(b.N) / b.Elapsed().Seconds()
				})
			}
			measure(0, "floor", benchConc, func(int, int) error { return e.get("/bench/floor", "") })
			measure(1, "session", benchConc, func(w, _ int) error { return e.get("/api/v1/session", tokens[k][w]) })
			measure(2, "otp-login", 64, func(w, i int) error {
				email := fmt.Sprintf("r%d-%d-%d@example.com", time.Now().UnixNano(), w, i)
				if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
					return err
				}
				_, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
				return err
			})
			sessionRatio[k] = append(sessionRatio[k], rate[1]/rate[0])
			loginRatio[k] = append(loginRatio[k], rate[2]/rate[0])
			fmt.Printf("ratios: users=%d round %d (%s): floor %.0f req/s, GET /session %.0f req/s (%.1f%%), OTP logins %.0f/s (%.2f%%)\n",
				users, round, loadAverage(), rate[0], rate[1], 100*rate[1]/rate[0], rate[2], 100*rate[2]/rate[0])
		}
	}
	for k, users := range sizes {
		slices.Sort(sessionRatio[k])
		slices.Sort(loginRatio[k])
		fmt.Printf("ratios: users=%d: median GET /session %.1f%% of the floor, median OTP logins %.2f%% of the floor\n",
			users, 100*sessionRatio[k][2], 100*loginRatio[k][2])
	}
}

// loadAverage returns the machine's load averages (1, 5, 15 minutes).
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	return "load average " + strings.Join(strings.Fields(string(raw))[:3], " ")
}
