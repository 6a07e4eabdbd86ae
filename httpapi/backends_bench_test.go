package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
	"latchkey/store/pgtest"
)

// The PostgreSQL benchmarks (docs/performance.md, "PostgreSQL"): they
// start a cluster of their own with PostgreSQL's durability settings on
// (fsync, synchronous commit, full-page writes: as a production server
// runs, unlike the tests' cluster), and run the same requests on a bbolt
// data file in the same run, so the ratios compare like with like.
//
//	go test -run XXX -bench 'Backends|Replicas' -benchtime 1x ./httpapi/
//
// LATCHKEY_BENCH_SECONDS sets each measurement's length (default 5; the
// replicas' mixed load runs 12 times that, 60 s by default).

// benchSeconds is the length of one measurement.
func benchSeconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("LATCHKEY_BENCH_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 5 * time.Second
}

// rate is what one timed load measured.
type rate struct {
	ops  int
	per  float64 // operations per second
	p99  time.Duration
	errs int
}

// loadFor runs do from conc goroutines for d and measures it. It stops a
// worker at its first error, counting it.
func loadFor(conc int, d time.Duration, do func(worker, i int) error) (rate, error) {
	var ops, errs atomic.Int64
	var first atomic.Value
	lat := make([][]time.Duration, conc)
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				t := time.Now()
				if err := do(w, i); err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err)
					return
				}
				lat[w] = append(lat[w], time.Since(t))
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	r := rate{ops: int(ops.Load()), per: float64(ops.Load()) / elapsed.Seconds(), errs: int(errs.Load())}
	if len(all) > 0 {
		r.p99 = all[len(all)*99/100]
	}
	err, _ := first.Load().(error)
	return r, err
}

// counter counts round trips and statements (store.Options.ObserveRoundTrip).
type counter struct{ trips, stmts atomic.Int64 }

func (c *counter) observe(n int) { c.trips.Add(1); c.stmts.Add(int64(n)) }

// roundTripsOf returns the round trips and statements fn made.
func (c *counter) roundTripsOf(fn func()) (trips, stmts int64) {
	t, s := c.trips.Load(), c.stmts.Load()
	fn()
	return c.trips.Load() - t, c.stmts.Load() - s
}

// BenchmarkBackends: GET /session (32 clients) and OTP logins (send and
// verify, 64 clients, the servers' mail queues sending the codes) on a
// bbolt file and on PostgreSQL with fsync on, in one run; PostgreSQL's
// rates are reported as shares of bbolt's (targets: GET /session ≥ 50%,
// logins ≥ 40%), with the round trips of each call and the time of one
// unloaded call on each backend (where the time goes). Run it with
// -benchtime 1x: one op is the whole experiment.
func BenchmarkBackends(b *testing.B) {
	cluster := pgtest.Durable(b)
	d := benchSeconds()
	for range b.N {
		// Round trips of each call, on a database of their own without
		// the mail queue (whose work would land in any call's count).
		rtURL, rtDrop, err := cluster.NewDatabase(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var rtCount counter
		rtdb, _, err := store.Open(ctx, rtURL, store.Options{ObserveRoundTrip: rtCount.observe})
		if err != nil {
			b.Fatal(err)
		}
		roundTrips(b, newBenchEnvOn(b, rtdb), &rtCount)
		rtdb.Close()
		rtDrop()

		url, drop, err := cluster.NewDatabase(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var count counter
		pgdb, _, err := store.Open(ctx, url, store.Options{ObserveRoundTrip: count.observe})
		if err != nil {
			b.Fatal(err)
		}
		boltdb, _, err := store.Open(ctx, filepath.Join(b.TempDir(), "latchkey.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		// The servers run their mail queues, and the clients take their
		// codes from what the queue hands over, as latchkey serve runs.
		envs := map[string]*benchEnv{"bolt": newMailedBenchEnv(b, boltdb), "postgres": newMailedBenchEnv(b, pgdb)}
		for _, name := range []string{"bolt", "postgres"} {
			e := envs[name]
			send, verify := unloadedLogin(b, e, 50)
			b.Logf("%s, one client: otp/send %v, otp/verify %v (medians of 50)", name, send, verify)
		}

		// The rates, interleaved: bolt, postgres, postgres, bolt.
		results := map[string]map[string]rate{"bolt": {}, "postgres": {}}
		tokens := map[string][]string{}
		for name, e := range envs {
			for i := range benchConc {
				tokens[name] = append(tokens[name], e.loginDirect(b, fmt.Sprintf("session%d@example.com", i)))
			}
		}
		var trips0, stmts0 int64
		for _, name := range []string{"bolt", "postgres", "postgres", "bolt"} {
			e := envs[name]
			if _, done := results[name]["session"]; !done {
				r, err := loadFor(benchConc, d, func(w, _ int) error { return e.get("/api/v1/session", tokens[name][w]) })
				if err != nil {
					b.Fatalf("%s GET /session: %v", name, err)
				}
				results[name]["session"] = r
				continue
			}
			var seq atomic.Int64
			logins := func() (rate, error) {
				return loadFor(64, d, func(w, i int) error {
					email := fmt.Sprintf("u%d-%d@example.com", w, seq.Add(1))
					if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
						return err
					}
					_, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
					return err
				})
			}
			// A warm-up of the same load first, on each backend: the
			// rate measured is the steady state, not the first seconds
			// on empty tables (where PostgreSQL's serialization
			// conflicts are most frequent: docs/performance.md).
			w, err := logins()
			if err != nil {
				b.Fatalf("%s logins, warm-up: %v", name, err)
			}
			b.Logf("%s logins, warm-up on empty tables: %.0f/s (p99 %v)", name, w.per, w.p99.Round(10*time.Microsecond))
			if name == "postgres" {
				trips0, stmts0 = count.trips.Load(), count.stmts.Load()
			}
			r, err := logins()
			if err != nil {
				b.Fatalf("%s logins: %v", name, err)
			}
			if name == "postgres" {
				trips, stmts := count.trips.Load()-trips0, count.stmts.Load()-stmts0
				b.Logf("postgres logins under load: %.1f round trips, %.1f statements per login (the mail queue's included)",
					float64(trips)/float64(r.ops), float64(stmts)/float64(r.ops))
			}
			results[name]["login"] = r
		}
		for _, what := range []string{"session", "login"} {
			bo, pq := results["bolt"][what], results["postgres"][what]
			b.ReportMetric(bo.per, "bolt-"+what+"/s")
			b.ReportMetric(pq.per, "pg-"+what+"/s")
			b.ReportMetric(100*pq.per/bo.per, "pg-"+what+"-%")
			b.Logf("%s: bolt %.0f/s (p99 %v), postgres %.0f/s (p99 %v): %.0f%%", what, bo.per, bo.p99.Round(10*time.Microsecond),
				pq.per, pq.p99.Round(10*time.Microsecond), 100*pq.per/bo.per)
		}
		boltdb.Close()
		pgdb.Close()
		drop()
	}
}

// roundTrips reports the round trips of each call of a login and of
// GET /session on e, whose store count observes, in the steady state.
func roundTrips(b *testing.B, e *benchEnv, count *counter) {
	b.Helper()
	// One login first fills what a replica reads once and keeps (the
	// project's templates, its number of kept events).
	e.loginDirect(b, "warmup@example.com")
	var err error
	email := "roundtrips@example.com"
	sendRT, _ := count.roundTripsOf(func() { _, err = e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}) })
	if err != nil {
		b.Fatal(err)
	}
	code := e.code(email)
	var out map[string]any
	verifyRT, _ := count.roundTripsOf(func() {
		out, err = e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": code})
	})
	if err != nil {
		b.Fatal(err)
	}
	tok := out["token"].(string)
	firstRT, _ := count.roundTripsOf(func() { err = e.get("/api/v1/session", tok) })
	if err != nil {
		b.Fatal(err)
	}
	sessionRT, _ := count.roundTripsOf(func() { err = e.get("/api/v1/session", tok) })
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(sendRT), "pg-roundtrips/send")
	b.ReportMetric(float64(verifyRT), "pg-roundtrips/verify")
	b.ReportMetric(float64(sessionRT), "pg-roundtrips/session")
	b.Logf("round trips: otp/send %d, otp/verify %d (a login: %d), GET /session %d the first time, %d after",
		sendRT, verifyRT, sendRT+verifyRT, firstRT, sessionRT)
}

// unloadedLogin signs n users in one after the other on e and returns
// the median times of otp/send and otp/verify.
func unloadedLogin(b *testing.B, e *benchEnv, n int) (send, verify time.Duration) {
	b.Helper()
	var ss, vs []time.Duration
	for i := range n {
		email := fmt.Sprintf("one%d-%d@example.com", i, time.Now().UnixNano())
		t := time.Now()
		if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
			b.Fatal(err)
		}
		ss = append(ss, time.Since(t))
		code := e.code(email)
		t = time.Now()
		if _, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": code}); err != nil {
			b.Fatal(err)
		}
		vs = append(vs, time.Since(t))
	}
	slices.Sort(ss)
	slices.Sort(vs)
	return ss[n/2], vs[n/2]
}

// BenchmarkReplicas: three replicas (services and HTTP servers of their
// own, each with its own connections) on one PostgreSQL database with
// fsync on, syncing their rate counts as on PostgreSQL, serve a mixed
// load for 12 × LATCHKEY_BENCH_SECONDS (60 s by default) from 48
// clients, each request to a replica picked at random: OTP logins, GET
// /session, GET /me with the API key, and logouts whose token the
// replica that logged out must refuse at once and every other replica
// within a second. Any other answer is an error; the target is none. Run
// it with -benchtime 1x.
func BenchmarkReplicas(b *testing.B) {
	cluster := pgtest.Durable(b)
	d := 12 * benchSeconds()
	url, drop, err := cluster.NewDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer drop()
	var rs []*benchEnv
	for i := range 3 {
		db, _, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if i == 0 {
			rs = append(rs, newBenchEnvOn(b, db))
			continue
		}
		rs = append(rs, newReplicaEnv(b, db, rs[0]))
	}
	// Every replica publishes and reads its rate counts, as main runs
	// SyncLimits on PostgreSQL.
	syncCtx, stop := context.WithCancel(context.Background())
	var syncs sync.WaitGroup
	for _, r := range rs {
		syncs.Add(1)
		go func() {
			defer syncs.Done()
			t := time.NewTicker(auth.SyncInterval)
			defer t.Stop()
			for {
				select {
				case <-syncCtx.Done():
					return
				case <-t.C:
					r.svc.SyncLimits(syncCtx)
				}
			}
		}()
	}
	defer func() { stop(); syncs.Wait() }()
	pick := func() *benchEnv { return rs[rand.IntN(len(rs))] }
	var logins, sessions, mes, logouts atomic.Int64
	for range b.N {
		r, err := loadFor(48, d, func(w, i int) error {
			// A login on one replica, its session checked on all.
			email := fmt.Sprintf("mixed%d-%d@example.com", w, i)
			e := pick()
			if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
				return err
			}
			out, err := pick().post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
			if err != nil {
				return err
			}
			logins.Add(1)
			tok := out["token"].(string)
			for range 8 {
				if err := pick().get("/api/v1/session", tok); err != nil {
					return err
				}
				sessions.Add(1)
			}
			for range 2 {
				if err := pick().get("/api/v1/me", e.key); err != nil {
					return err
				}
				mes.Add(1)
			}
			if i%4 == 0 {
				// The replica that logs out refuses the token at once,
				// every other one within a second (docs/replicas.md).
				by := pick()
				if _, err := by.post("/api/v1/logout", tok, map[string]any{}); err != nil {
					return err
				}
				logouts.Add(1)
				if by.get("/api/v1/session", tok) == nil {
					return errors.New("the replica that logged a session out still accepts it")
				}
				deadline := time.Now().Add(time.Second)
				for _, other := range rs {
					for other.get("/api/v1/session", tok) == nil {
						if time.Now().After(deadline) {
							return errors.New("a logged-out session still answers on a replica after a second")
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
			}
			return nil
		})
		b.ReportMetric(float64(r.errs), "errors")
		b.ReportMetric(float64(r.ops)/d.Seconds(), "rounds/s")
		b.ReportMetric(float64(logins.Load())/d.Seconds(), "logins/s")
		b.ReportMetric(float64(sessions.Load()+mes.Load())/d.Seconds(), "reads/s")
		b.Logf("%v on three replicas: %d logins, %d GET /session, %d GET /me, %d logouts (refused at once by the replica that did it, within a second by the others); %d errors",
			d, logins.Load(), sessions.Load(), mes.Load(), logouts.Load(), r.errs)
		if err != nil {
			b.Fatalf("mixed load on three replicas: %v", err)
		}
	}
}

// newReplicaEnv is another replica on db, the store e0 initialized: a
// service and an HTTP server of its own, e0's key and project.
func newReplicaEnv(b *testing.B, db store.DB, e0 *benchEnv) *benchEnv {
	b.Helper()
	hs := httptest.NewUnstartedServer(nil)
	url := "http://" + hs.Listener.Addr().String()
	svc, err := auth.New(db, e0.keys, auth.Config{BaseURL: e0.url, AdminToken: "adm_benchbenchbenchbenchbench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	s := New(svc, Config{Logger: slog.New(slog.DiscardHandler)})
	hs.Config.Handler = s
	hs.Start()
	b.Cleanup(hs.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchEnv{url: url, svc: svc, server: s, db: db, keys: e0.keys, key: e0.key, project: e0.project, client: &http.Client{Transport: tr}}
}
