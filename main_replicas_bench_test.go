package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/mail/mailtest"
	"latchkey/store/pgtest"
)

// BenchmarkThreeProcesses: three `latchkey serve` processes on one
// PostgreSQL database with its durability settings on (fsync,
// synchronous commit, full-page writes), sharing one SMTP server (a
// mail catcher), serve a mixed load for 12 × LATCHKEY_BENCH_SECONDS (60 s
// by default) from 48 clients, each request to a replica picked at
// random. A round is an OTP login (send; the code read from the mail the
// lease-holding replica sent; verify), its session checked eight times
// with GET /session and the API key used twice with GET /me; one round
// in four then logs the session out, and the replica that did it must
// refuse the token at once, every other replica within 1 s (the promise
// of docs/replicas.md, "Consistency across replicas"). Any
// other answer is an error; the target is none, and the benchmark fails
// on one. The replicas run with the defaults: feed read every 250 ms,
// 15 s leases. It is BenchmarkReplicas (./httpapi) with real processes,
// real mail and the serve command's own wiring; the processes are this
// test binary running main (spawnReplica), the cluster is the
// benchmark's own (without PostgreSQL it is skipped, whatever
// LATCHKEY_TEST_STORE says). Run it with -benchtime 1x:
//
//	go test -run XXX -bench ThreeProcesses -benchtime 1x -timeout 20m .
//
// It reports per kind of request (send, mail: the wait for the code,
// verify, session, me, logout, refused: the logging-out replica's 401,
// spread: from the logout's answer to another replica's 401) the count,
// rate and latencies, the CPU each process used, and the warnings the
// replicas logged (a stale invalidation feed shows there).
func BenchmarkThreeProcesses(b *testing.B) {
	dsn := durableDatabase(b)
	smtp := mailtest.NewServer(b, mailtest.Options{NoTLS: true})
	const admin = "adm_three_processes_bench_token_0123456789"
	env := []string{
		"LATCHKEY_DATABASE_URL=" + dsn,
		"LATCHKEY_MASTER_KEY=" + testMasterKey,
		"LATCHKEY_ADMIN_TOKEN=" + admin,
		"LATCHKEY_BASE_URL=http://auth.replicas.test",
		"LATCHKEY_SMTP_URL=smtp://" + smtp.Addr,
		"LATCHKEY_LOG_FORMAT=text",
	}
	rs, key, project := spawnGroup(b, env, admin)
	// The key's rate is raised out of the way, as BenchmarkReplicas
	// does; the limiter still runs. Each replica sees it within 1 s.
	rs[0].must(200, "PATCH", "/api/v1/admin/projects/"+project, admin, map[string]any{"rateLimitPerMinute": auth.MaxRateLimit})
	time.Sleep(1500 * time.Millisecond)

	d := 12 * threeProcessSeconds()
	for range b.N {
		l := &mixedLoad{rs: rs, smtp: smtp, key: key}
		load0, cpu0 := loadAverage(), l.cpu()
		elapsed := l.run(48, d)
		cpu := l.cpu()
		for i := range cpu {
			cpu[i] -= cpu0[i]
		}

		// The output of a benchmark that passes is cut after ten lines:
		// the results come first, in six; the details of errors and
		// warnings after them (a failure prints everything).
		errs := l.errors.Load()
		var warn [][]string
		nwarn := 0
		for _, r := range rs {
			warn = append(warn, warnings(r.logs()))
			nwarn += len(warn[len(warn)-1])
		}
		b.ReportMetric(float64(errs), "errors")
		b.ReportMetric(float64(l.kinds[kindVerify].n())/elapsed.Seconds(), "logins/s")
		b.ReportMetric(float64(l.kinds[kindSession].n()+l.kinds[kindMe].n())/elapsed.Seconds(), "reads/s")
		for _, k := range l.kinds {
			b.ReportMetric(float64(k.n())/elapsed.Seconds(), k.name+"/s")
			b.ReportMetric(float64(k.quantile(.99).Microseconds())/1000, k.name+"-p99-ms")
		}
		b.Logf("%v on three processes, 48 clients: %d logins, %d GET /session, %d GET /me, %d logouts: %d errors; %d warnings logged by the replicas",
			elapsed.Round(time.Millisecond), l.kinds[kindVerify].n(), l.kinds[kindSession].n(), l.kinds[kindMe].n(), l.kinds[kindLogout].n(), errs, nwarn)
		for i := 0; i < numKinds; i += 2 {
			b.Logf("  %s; %s", l.kinds[i].line(elapsed), l.kinds[i+1].line(elapsed))
		}
		b.Logf("CPU seconds: %s; %s at the start, %s at the end", l.cpuString(cpu, elapsed), load0, loadAverage())
		for _, e := range l.first() {
			b.Logf("error: %s", e)
		}
		for i, r := range rs {
			if len(warn[i]) > 0 {
				b.Logf("%s logged %d warnings and errors; the first:\n%s", r.name, len(warn[i]), strings.Join(warn[i][:min(5, len(warn[i]))], "\n"))
			}
		}
		if errs > 0 {
			b.Fatalf("%d errors under the mixed load on three processes; want none (first ones above)", errs)
		}
	}
}

// durableDatabase returns a new database's URL on a cluster of the
// benchmark's own with durability on (pgtest.Durable); the database is
// dropped and the cluster stopped when b ends.
func durableDatabase(b *testing.B) string {
	b.Helper()
	dsn, drop, err := pgtest.Durable(b).NewDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(drop)
	return dsn
}

// warnings returns the lines of log at level WARN or ERROR.
func warnings(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, " level=WARN ") || strings.Contains(l, " level=ERROR ") {
			out = append(out, l)
		}
	}
	return out
}

// threeProcessSeconds is LATCHKEY_BENCH_SECONDS (default 5).
func threeProcessSeconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("LATCHKEY_BENCH_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 5 * time.Second
}

// The kinds of request of a round, in the order a round makes them.
const (
	kindSend    = iota // POST /otp/send
	kindMail           // from the send's answer to the code in the catcher
	kindVerify         // POST /otp/verify
	kindSession        // GET /session
	kindMe             // GET /me with the API key
	kindLogout         // POST /logout
	kindRefused        // GET /session on the replica that logged out: 401
	kindSpread         // from the logout's answer to a 401 from another replica
	numKinds
)

var kindNames = [numKinds]string{"send", "mail", "verify", "session", "me", "logout", "refused", "spread"}

// codeInMail finds the code in a sign-in mail.
var codeInMail = regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`)

// mixedLoad is one run of the mixed load on replicas rs.
type mixedLoad struct {
	rs    []*replica
	smtp  *mailtest.Server
	key   string
	kinds [numKinds]*kindStats

	errors atomic.Int64
	mu     sync.Mutex
	errLog []string // the first errors, in detail
}

// kindStats is the count and latencies of one kind of request.
type kindStats struct {
	name string
	latencies
}

func (k *kindStats) n() int { k.mu.Lock(); defer k.mu.Unlock(); return len(k.d) }

// line describes k over elapsed: count, rate and latencies.
func (k *kindStats) line(elapsed time.Duration) string {
	ms := func(q float64) string {
		return strconv.FormatFloat(float64(k.quantile(q).Microseconds())/1000, 'f', 1, 64)
	}
	return fmt.Sprintf("%s %d (%.1f/s): p50 %s, p99 %s, max %s ms", k.name, k.n(), float64(k.n())/elapsed.Seconds(), ms(.5), ms(.99), ms(1))
}

// quantile returns the q-quantile of k's latencies (0 without any).
func (k *kindStats) quantile(q float64) time.Duration {
	k.mu.Lock()
	d := slices.Clone(k.d)
	k.mu.Unlock()
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*q))]
}

// run runs rounds from conc clients until d has passed (a round under
// way then finishes) and returns how long it took.
func (l *mixedLoad) run(conc int, d time.Duration) time.Duration {
	for i := range l.kinds {
		l.kinds[i] = &kindStats{name: kindNames[i]}
	}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := l.round(w, i); err != nil {
					l.errors.Add(1)
					l.mu.Lock()
					if len(l.errLog) < 20 {
						l.errLog = append(l.errLog, fmt.Sprintf("%s (client %d, round %d, %v into the run)",
							err, w, i, time.Since(start).Round(time.Millisecond)))
					}
					l.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// first returns the first errors, in detail.
func (l *mixedLoad) first() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errLog)
}

func (l *mixedLoad) pick() *replica { return l.rs[rand.IntN(len(l.rs))] }

// expect makes one request of kind k on r, times it, and returns the
// answer, or an error naming the request, the replica and the answer
// unless the status is want.
func (l *mixedLoad) expect(k int, r *replica, want int, method, path, token string, body any) ([]byte, error) {
	t := time.Now()
	st, raw, err := r.do(method, path, token, body)
	if st != want || err != nil {
		return nil, fmt.Errorf("%s: %s %s: status %d %s (err %v), want %d", r.name, method, path, st, strings.TrimSpace(string(raw)), err, want)
	}
	l.kinds[k].add(time.Since(t))
	return raw, nil
}

// round is one round of client w: a login, its reads, and one time in
// four its logout.
func (l *mixedLoad) round(w, i int) error {
	email := fmt.Sprintf("p%d-%d@example.com", w, i)
	if _, err := l.expect(kindSend, l.pick(), 200, "POST", "/api/v1/otp/send", l.key, map[string]any{"email": email}); err != nil {
		return err
	}
	t := time.Now()
	msg, ok := l.smtp.Wait(email, 30*time.Second)
	if !ok {
		return fmt.Errorf("no mail to %s within 30 s of its otp/send", email)
	}
	code := codeInMail.FindSubmatch(msg.Data)
	if code == nil {
		return fmt.Errorf("no code in the mail to %s:\n%s", email, msg.Data)
	}
	l.kinds[kindMail].add(time.Since(t))
	raw, err := l.expect(kindVerify, l.pick(), 200, "POST", "/api/v1/otp/verify", l.key, map[string]any{"email": email, "code": string(code[1])})
	if err != nil {
		return err
	}
	var out struct{ Token string }
	if json.Unmarshal(raw, &out); out.Token == "" {
		return fmt.Errorf("otp/verify for %s answered no token: %s", email, raw)
	}
	for range 8 {
		if _, err := l.expect(kindSession, l.pick(), 200, "GET", "/api/v1/session", out.Token, nil); err != nil {
			return err
		}
	}
	for range 2 {
		if _, err := l.expect(kindMe, l.pick(), 200, "GET", "/api/v1/me", l.key, nil); err != nil {
			return err
		}
	}
	if i%4 != 0 {
		return nil
	}
	by := l.pick()
	if _, err := l.expect(kindLogout, by, 200, "POST", "/api/v1/logout", out.Token, map[string]any{}); err != nil {
		return err
	}
	done := time.Now()
	if _, err := l.expect(kindRefused, by, 401, "GET", "/api/v1/session", out.Token, nil); err != nil {
		return fmt.Errorf("the replica that logged the session out: %w", err)
	}
	// Every other replica refuses it within 1 s of the logout's answer: a
	// 200 to a request sent later is an error.
	for _, other := range l.rs {
		if other == by {
			continue
		}
		for {
			sent := time.Now()
			st, raw, err := other.do("GET", "/api/v1/session", out.Token, nil)
			if st == 401 {
				l.kinds[kindSpread].add(time.Since(done))
				break
			}
			if st != 200 || err != nil {
				return fmt.Errorf("%s: GET /api/v1/session after a logout on %s: status %d %s (err %v), want 401 (or 200 within 1 s)",
					other.name, by.name, st, strings.TrimSpace(string(raw)), err)
			}
			if sent.Sub(done) > time.Second {
				return fmt.Errorf("%s: GET /api/v1/session still answers 200 %v after the logout on %s; want 401 within 1 s",
					other.name, sent.Sub(done).Round(time.Millisecond), by.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// cpu returns the CPU seconds used so far by each replica, by this
// process (the clients and the mail catcher) and by the whole machine
// (busy time of all cores), in that order.
func (l *mixedLoad) cpu() []float64 {
	var out []float64
	for _, r := range l.rs {
		out = append(out, processCPU(r.cmd.Process.Pid))
	}
	out = append(out, processCPU(os.Getpid()), machineCPU())
	return out
}

// cpuString describes the CPU seconds of cpu (differences of l.cpu())
// over elapsed.
func (l *mixedLoad) cpuString(cpu []float64, elapsed time.Duration) string {
	var parts []string
	var replicas float64
	for i, r := range l.rs {
		parts = append(parts, fmt.Sprintf("%s %.1f", r.name, cpu[i]))
		replicas += cpu[i]
	}
	n := len(l.rs)
	machine := cpu[n+1]
	return fmt.Sprintf("%s (replicas %.1f), clients and mail catcher %.1f, rest of the machine (PostgreSQL, others) %.1f; machine busy %.0f%% of 2 cores",
		strings.Join(parts, ", "), replicas, cpu[n], machine-replicas-cpu[n], 100*machine/(2*elapsed.Seconds()))
}

// processCPU returns the user and system CPU seconds of process pid
// (from /proc/<pid>/stat; 100 ticks a second), or 0.
func processCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which may hold spaces.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}

// machineCPU returns the busy CPU seconds of all cores (from /proc/stat:
// everything but idle and iowait), or 0.
func machineCPU() float64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 && i < 7 { // not idle, iowait, steal; guest time is in user
			busy += n
		}
	}
	return busy / 100
}
