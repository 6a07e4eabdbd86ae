package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/mail/mailtest"
	"latchkey/store/storetest"
)

// replica is one `latchkey serve` process of a group on one database.
type replica struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	base string
	mu   sync.Mutex
	out  bytes.Buffer // standard output
	log  bytes.Buffer // standard error: the log
	dead bool
}

func (r *replica) stdout() string { r.mu.Lock(); defer r.mu.Unlock(); return r.out.String() }
func (r *replica) logs() string   { r.mu.Lock(); defer r.mu.Unlock(); return r.log.String() }

// kill ends the process with SIGKILL (kill -9): nothing of it runs after.
func (r *replica) kill() {
	r.mu.Lock()
	dead := r.dead
	r.dead = true
	r.mu.Unlock()
	if !dead && r.cmd.Process != nil {
		r.cmd.Process.Signal(syscall.SIGKILL)
		r.cmd.Wait()
	}
}

// spawnReplica runs `latchkey serve` on a free port as a child process
// (this test binary, which runs main when LATCHKEY_TEST_ARGS is set: the
// binary is built once, by go test) with the settings of env, in dir,
// and waits until it listens.
func spawnReplica(t testing.TB, name, dir string, env []string) *replica {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LATCHKEY_TEST_ARGS=serve --addr 127.0.0.1:0"), env...)
	r := &replica{t: t, name: name, cmd: cmd}
	cmd.Stdout = writerFunc(func(b []byte) (int, error) { r.mu.Lock(); defer r.mu.Unlock(); return r.out.Write(b) })
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		re := regexp.MustCompile(`msg="latchkey listening" addr=(\S+)`)
		for sc.Scan() {
			r.mu.Lock()
			r.log.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		r.base = "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %s did not start:\n%s", name, r.logs())
	}
	return r
}

// spawnGroup starts three replicas r1, r2, r3 with the settings of env
// (the first start creates the first-start state, the others find it)
// and returns them with the test API key r1 printed and the id of the
// first project (admin is the admin token of env).
func spawnGroup(t testing.TB, env []string, admin string) (rs []*replica, key, project string) {
	t.Helper()
	for i := range 3 {
		rs = append(rs, spawnReplica(t, fmt.Sprint("r", i+1), t.TempDir(), env))
	}
	key = waitPrinted(t, keyLine, rs[0].stdout)
	projects := rs[0].must(200, "GET", "/api/v1/admin/projects", admin, nil)["projects"].([]any)
	return rs, key, projects[0].(map[string]any)["id"].(string)
}

// replicaClient keeps connections to the replicas open between calls.
var replicaClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call makes one request and returns the status and the JSON answer; a
// connection error is status 0.
func (r *replica) call(method, path, token string, body any) (int, map[string]any) {
	st, raw, _ := r.do(method, path, token, body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return st, out
}

// do makes one request and returns the status and the body as received;
// a connection error is status 0. Safe for concurrent use.
func (r *replica) do(method, path, token string, body any) (int, []byte, error) {
	rd := bytes.NewReader(nil)
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := replicaClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, raw, err
}

// must is call that fails the test unless the status is want.
func (r *replica) must(want int, method, path, token string, body any) map[string]any {
	r.t.Helper()
	st, out := r.call(method, path, token, body)
	if st != want {
		r.t.Fatalf("%s: %s %s: %d %v, want %d", r.name, method, path, st, out, want)
	}
	return out
}

// hookReceiver is a webhook endpoint that counts deliveries per event.
type hookReceiver struct {
	mu    sync.Mutex
	count map[string]int // event id → deliveries
	order []string       // emails of user.registered, in delivery order
	url   string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{count: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID   string         `json:"id"`
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		json.NewDecoder(r.Body).Decode(&ev)
		h.mu.Lock()
		h.count[ev.ID]++
		if ev.Type == "user.registered" && h.count[ev.ID] == 1 {
			email, _ := ev.Data["email"].(string)
			h.order = append(h.order, email)
		}
		h.mu.Unlock()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.url = "http://" + ln.Addr().String() + "/hook"
	return h
}

// registered returns the addresses whose user.registered arrived, in
// order, and the events delivered more than once.
func (h *hookReceiver) registered() (order []string, twice []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, n := range h.count {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s ×%d", id, n))
		}
	}
	return append([]string(nil), h.order...), twice
}

// TestThreeReplicas: three `latchkey serve` processes on one PostgreSQL
// database, with the same master key, behind no balancer: each call
// goes to the replica the test names. Promised (docs/replicas.md) and
// checked here:
//
//   - a revoked key and a deleted session (logout) are refused by the
//     other replicas within 1 second;
//   - mail is sent once, whichever replica queued it;
//   - each webhook event is delivered once, in order, whichever replica
//     wrote it;
//   - after kill -9 of the replica holding the leases of the background
//     tasks (sweep, mail, webhooks), another takes them over within 30
//     seconds and the work resumes: mail queued and events written after
//     the kill go out, once.
//
// The replicas run with a 2 s lease TTL and read the invalidation feed
// every 50 ms (--lease-ttl, --feed-interval; defaults 15 s and 250 ms).
// PostgreSQL only: on bbolt one process owns the data file.
func TestThreeReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("replicas share a PostgreSQL database: runs with LATCHKEY_TEST_STORE=postgres (skipped on bolt)")
	}
	dsn := storetest.New(t)
	smtp := mailtest.NewServer(t, mailtest.Options{NoTLS: true})
	hooks := newHookReceiver(t)
	const admin = "adm_three_replicas_test_token_0123456789"
	env := []string{
		"LATCHKEY_DATABASE_URL=" + dsn,
		"LATCHKEY_MASTER_KEY=" + testMasterKey,
		"LATCHKEY_ADMIN_TOKEN=" + admin,
		// One public origin behind the balancer: tokens name it (iss).
		"LATCHKEY_BASE_URL=http://auth.replicas.test",
		"LATCHKEY_SMTP_URL=smtp://" + smtp.Addr,
		"LATCHKEY_LEASE_TTL=2s",
		"LATCHKEY_FEED_INTERVAL=50ms",
		"LATCHKEY_LOG_FORMAT=text",
	}
	// The first start creates the first-start state; the others then
	// find it.
	rs, key, project := spawnGroup(t, env, admin)
	// Polling replicas must not meet the per-key rate limit.
	rs[1].must(200, "PATCH", "/api/v1/admin/projects/"+project, admin, map[string]any{"rateLimitPerMinute": 100000})
	rs[2].must(200, "POST", "/api/v1/webhooks", key, map[string]any{"url": hooks.url, "eventTypes": []string{"user.registered"}})

	// refusedWithin polls the other replicas until each refuses the
	// call (status want), and returns the longest wait.
	refusedWithin := func(what string, others []*replica, want int, method, path, token string) time.Duration {
		t.Helper()
		start := time.Now()
		var worst time.Duration
		for _, r := range others {
			for {
				st, body := r.call(method, path, token, nil)
				if st == want {
					worst = max(worst, time.Since(start))
					break
				}
				if time.Since(start) > time.Second {
					t.Fatalf("%s: %s still answers %d %v %v after the change on another replica; want %d within 1 s", what, r.name, st, body, time.Since(start), want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		return worst
	}

	// A key revoked on r1 is refused by r2 and r3 (which had it cached).
	created := rs[0].must(200, "POST", "/api/v1/admin/keys", admin, map[string]any{"projectId": project, "mode": "test"})
	revokee := created["key"].(string)
	for _, r := range rs {
		r.must(200, "GET", "/api/v1/me", revokee, nil)
	}
	rs[0].must(200, "POST", "/api/v1/admin/keys/"+revokee[:16]+"/revoke", admin, map[string]any{})
	keyLag := refusedWithin("revoked key", rs[1:], 401, "GET", "/api/v1/me", revokee)

	// Sign-ups through every replica: each code is mailed once, each
	// user.registered delivered once, in order.
	var n int
	signUp := func(via []*replica) (string, string) {
		t.Helper()
		n++
		addr := fmt.Sprintf("user%d@example.com", n)
		send, verify := via[n%len(via)], via[(n+1)%len(via)]
		send.must(200, "POST", "/api/v1/otp/send", key, map[string]any{"email": addr})
		msg, ok := smtp.Wait(addr, 30*time.Second)
		if !ok {
			t.Fatalf("no mail to %s within 30 s (queued on %s)", addr, send.name)
		}
		code := regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`).FindStringSubmatch(string(msg.Data))
		if code == nil {
			t.Fatalf("no code in:\n%s", msg.Data)
		}
		out := verify.must(200, "POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": code[1]})
		return addr, out["token"].(string)
	}
	var addrs []string
	var token string
	for range 6 {
		var a string
		a, token = signUp(rs)
		addrs = append(addrs, a)
	}

	// A session deleted on r1 (logout) is refused by r2 and r3.
	for _, r := range rs {
		r.must(200, "GET", "/api/v1/session", token, nil)
	}
	rs[0].must(200, "POST", "/api/v1/logout", token, map[string]any{})
	sessionLag := refusedWithin("logout", rs[1:], 401, "GET", "/api/v1/session", token)
	t.Logf("refused by the other replicas after: revoked key %v, logout %v (feed read every 50 ms)", keyLag, sessionLag)

	// Who holds the leases: the replica to kill.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	holders := func() map[string]string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT name, holder FROM leases WHERE until > now()`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
			var r [2]string
			err := row.Scan(&r[0], &r[1])
			return r, err
		})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range out {
			m[r[0]] = r[1]
		}
		return m
	}
	pidOf := func(holder string) int {
		parts := strings.Split(holder, "/")
		if len(parts) < 3 {
			return 0
		}
		pid, _ := strconv.Atoi(parts[len(parts)-2])
		return pid
	}
	byPID := func(pid int) *replica {
		for _, r := range rs {
			if r.cmd.Process.Pid == pid {
				return r
			}
		}
		return nil
	}
	before := holders()
	holder := byPID(pidOf(before[leaseMail]))
	if holder == nil {
		t.Fatalf("no replica holds the mail lease: %v", before)
	}
	for _, name := range []string{leaseSweep, leaseWebhooks} {
		if byPID(pidOf(before[name])) == nil {
			t.Fatalf("no replica holds the %s lease: %v", name, before)
		}
	}
	var survivors []*replica
	for _, r := range rs {
		if r != holder {
			survivors = append(survivors, r)
		}
	}

	// Nothing in flight at the kill: a delivery or a mail under way when
	// its sender dies may go out again (at least once across a crash:
	// docs/replicas.md, "Background work and leases"); what is checked
	// below is that the survivors send
	// the rest once. So wait until every event is delivered and every
	// job deleted, and every code mailed.
	settled := time.Now().Add(30 * time.Second)
	for {
		var pending int
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM outbox) + (SELECT count(*) FROM mail)`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if order, _ := hooks.registered(); pending == 0 && len(order) >= len(addrs) {
			break
		}
		if time.Now().After(settled) {
			t.Fatalf("deliveries and mail still pending 30 s after the sign-ups: %d rows", pending)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// kill -9 of the lease holder: its leases run out (2 s), a survivor
	// takes each over and the work resumes.
	holder.kill()
	killed := time.Now()
	taken := map[string]time.Duration{}
	for len(taken) < 3 {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("leases not taken over within 30 s of kill -9: held %v, taken %v", holders(), taken)
		}
		for name, h := range holders() {
			if _, done := taken[name]; !done && byPID(pidOf(h)) != nil && byPID(pidOf(h)) != holder &&
				(name == leaseSweep || name == leaseMail || name == leaseWebhooks) {
				taken[name] = time.Since(killed)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("after kill -9 of %s, the leases were taken over in: sweep %v, mail %v, webhooks %v (TTL 2 s)",
		holder.name, taken[leaseSweep], taken[leaseMail], taken[leaseWebhooks])
	// The lease's row changes before its taker logs it: the log is
	// waited for (a few milliseconds; at most 5 s).
	logged := func(name string) bool {
		for _, r := range survivors {
			if strings.Contains(r.logs(), `msg="lease acquired: this replica runs the task" lease=`+name) {
				return true
			}
		}
		return false
	}
	for _, name := range []string{leaseSweep, leaseMail, leaseWebhooks} {
		for wait := time.Now().Add(5 * time.Second); !logged(name) && time.Now().Before(wait); {
			time.Sleep(20 * time.Millisecond)
		}
		if !logged(name) {
			t.Errorf("no survivor logged taking over the %s lease", name)
		}
	}
	for range 3 {
		a, _ := signUp(survivors)
		addrs = append(addrs, a)
	}

	// Every event delivered once, in sign-up order; every address mailed
	// once. A second sender or deliverer would show within the wait.
	deadline := time.Now().Add(30 * time.Second)
	for {
		order, _ := hooks.registered()
		if len(order) >= len(addrs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate would arrive meanwhile
	order, twice := hooks.registered()
	if len(twice) > 0 {
		t.Errorf("webhook events delivered more than once: %v", twice)
	}
	if strings.Join(order, " ") != strings.Join(addrs, " ") {
		t.Errorf("user.registered delivered for %v, want %v in that order", order, addrs)
	}
	perAddr := map[string]int{}
	for _, m := range smtp.Messages() {
		perAddr[m.To]++
	}
	for _, a := range addrs {
		if perAddr[a] != 1 {
			t.Errorf("%s was mailed %d times, want once", a, perAddr[a])
		}
	}
	if t.Failed() {
		for _, r := range rs {
			t.Logf("log of %s:\n%s", r.name, r.logs())
		}
	}
}
