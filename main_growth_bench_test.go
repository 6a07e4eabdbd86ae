package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/internal/testkit"
	"latchkey/mail/mailtest"
	"latchkey/store"
	"latchkey/store/storetest"
)

// The growth benchmark's data: what the product is built for, a million
// users on one small VM.
const (
	growthUsers  = 1_000_000
	growthEvents = 2_000_000
)

var (
	growthAdmin     = "adm_growthgrowthgrowthgrowth"
	growthMasterKey = base64.StdEncoding.EncodeToString([]byte("growth-benchmark-master-key-32by"))
)

// growthMeta is what the loaded file's first start printed.
type growthMeta struct {
	ProjectID string `json:"projectId"`
	APIKey    string `json:"apiKey"`
	Users     int    `json:"users"`
}

// growthFile returns a data file holding growthUsers users, each with a
// live session and a remembered device, and growthEvents events, made
// once in dir (LATCHKEY_BENCH_DIR keeps it between runs) and copied to a
// fresh file for each run.
func growthFile(b *testing.B, dir string) (path string, meta growthMeta) {
	b.Helper()
	pristine := filepath.Join(dir, "growth.db")
	metaFile := pristine + ".json"
	if raw, err := os.ReadFile(metaFile); err == nil && json.Unmarshal(raw, &meta) == nil && meta.Users == growthUsers {
		b.Logf("reusing %s", pristine)
	} else {
		meta = loadGrowth(b, pristine)
		raw, _ := json.Marshal(meta)
		if err := os.WriteFile(metaFile, raw, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	path = filepath.Join(dir, "run.db")
	if out, err := exec.Command("cp", "--sparse=never", pristine, path).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	return path, meta
}

// loadGrowth makes the file: a real first start (the default project,
// its test key), then the rows, straight through the store.
func loadGrowth(b *testing.B, path string) growthMeta {
	b.Helper()
	os.Remove(path)
	m := NewMain()
	var out strings.Builder
	m.Stdout = &out
	if err := m.ParseFlags(nil, func(string) string { return "" }); err != nil {
		b.Fatal(err)
	}
	m.Config.Addr, m.Config.Data = "127.0.0.1:0", path
	m.Config.AdminToken, m.Config.MasterKey = growthAdmin, growthMasterKey
	m.Logger = discardLogger()
	if err := m.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	// Nine more projects for the events (each project keeps at most a
	// million).
	var projects []string
	for i := 1; i < 10; i++ {
		raw, _ := json.Marshal(map[string]any{"name": fmt.Sprint("p", i)})
		req, _ := http.NewRequest("POST", "http://"+m.Addr()+"/api/v1/admin/projects", bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+growthAdmin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var out struct {
			Project struct{ ID string } `json:"project"`
		}
		json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if out.Project.ID == "" {
			b.Fatalf("create project: %d", res.StatusCode)
		}
		projects = append(projects, out.Project.ID)
	}
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	meta := growthMeta{Users: growthUsers}
	meta.APIKey = regexp.MustCompile(`test API key \(shown once\): (\S+)`).FindStringSubmatch(out.String())[1]
	meta.ProjectID = regexp.MustCompile(`created project "default" \((\S+)\)`).FindStringSubmatch(out.String())[1]
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	last := time.Now()
	_, err = storetest.Load(db, storetest.Growth{ProjectID: meta.ProjectID, EventProjects: append([]string{meta.ProjectID}, projects...),
		Users: growthUsers, Sessions: true, Devices: true,
		Events: growthEvents, EventsOverdue: time.Hour,
		Progress: func(what string, done, total int) {
			if time.Since(last) > 10*time.Second || done == total {
				b.Logf("loaded %d/%d %s (%v)", done, total, what, time.Since(start).Round(time.Second))
				last = time.Now()
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded in %v: file %d MB", time.Since(start).Round(time.Second), db.(store.File).Space().FileSize>>20)
	return meta
}

// dropPageCache writes dirty pages back and empties the kernel's page
// cache (root only), so the next read of the data file comes from disk.
func dropPageCache() error {
	if err := exec.Command("sync").Run(); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
}

// readBytes returns the bytes this process has read from storage.
func readBytes() int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	var n int64
	if m := regexp.MustCompile(`(?m)^read_bytes: (\d+)`).FindSubmatch(raw); m != nil {
		fmt.Sscan(string(m[1]), &n)
	}
	return n
}

// BenchmarkGrowth is the growth benchmark (docs/performance.md): on a file
// holding growthUsers users, each with a live session and a remembered
// device, and growthEvents events in ten projects, loaded straight
// through the store, it measures through real HTTP:
//
//   - cold start: the server started as its own process after the kernel's
//     page cache was dropped, until it answers GET /ready (three times),
//     with what it read and its memory;
//   - login writes: 64 clients sign new users in by email OTP (send, verify,
//     then GET /session with the new token) for LATCHKEY_BENCH_SECONDS
//     (default 150: at least two runs of the minute sweep, at its real
//     period, deleting the sessions, devices and events that fall due),
//     timing every call and every store write (Batch, from the call to its
//     answer), and the file's growth per login (not compacted);
//   - admin pages: users at several depths, events queries, dashboard pages.
//
// It needs root (to drop the page cache), about 3 GB of disk and some
// minutes:
//
//	LATCHKEY_BENCH_GROWTH=1 LATCHKEY_BENCH_DIR=/var/tmp/latchkey-growth \
//	  go test -run XXX -bench Growth -benchtime 1x -timeout 60m .
func BenchmarkGrowth(b *testing.B) {
	if os.Getenv("LATCHKEY_BENCH_GROWTH") == "" {
		b.Skip("set LATCHKEY_BENCH_GROWTH=1 (and LATCHKEY_BENCH_DIR to keep the loaded file between runs)")
	}
	dir := os.Getenv("LATCHKEY_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	seconds := 150
	if v := os.Getenv("LATCHKEY_BENCH_SECONDS"); v != "" {
		fmt.Sscan(v, &seconds)
	}
	report("machine: %s", loadAverage())
	path, meta := growthFile(b, dir)
	fi, _ := os.Stat(path)
	report("data file: %d MB (%d users with a session and a device each, %d events)", fi.Size()>>20, growthUsers, growthEvents)
	for i := range 3 {
		coldStart(b, path, i)
	}
	for range b.N {
		growthRun(b, path, meta, time.Duration(seconds)*time.Second)
	}
}

// report prints one line of the benchmark's results.
func report(format string, args ...any) {
	fmt.Printf("growth: "+format+"\n", args...)
}

// loadAverage returns the machine's load averages (1, 5, 15 minutes).
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(raw))
	return "load average " + strings.Join(f[:3], " ")
}

// coldStart starts `latchkey serve` on path as a child process with an
// empty page cache and reports how long it took to answer GET /ready,
// what it read from disk and its memory then.
func coldStart(b *testing.B, path string, run int) {
	b.Helper()
	if err := dropPageCache(); err != nil {
		b.Fatalf("drop the page cache (needs root): %v", err)
	}
	load := loadAverage()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LATCHKEY_TEST_ARGS=serve --addr 127.0.0.1:0 --data "+path,
		"LATCHKEY_MASTER_KEY="+growthMasterKey, "LATCHKEY_ADMIN_TOKEN="+growthAdmin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stderr)
	var addr string
	for lines.Scan() {
		if m := regexp.MustCompile(`msg="latchkey listening" addr=(\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	listening := time.Since(start)
	go io.Copy(io.Discard, stderr)
	if addr == "" {
		b.Fatal("the server never listened")
	}
	for {
		res, err := http.Get("http://" + addr + "/api/v1/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Since(start) > time.Minute {
			b.Fatal("not ready within a minute")
		}
		time.Sleep(time.Millisecond)
	}
	ready := time.Since(start)
	pid := cmd.Process.Pid
	report("cold start %d: listening after %v, ready after %v; read %.1f MB from disk; RSS %d MB (%s)",
		run+1, listening.Round(time.Millisecond), ready.Round(time.Millisecond),
		float64(procField(pid, "io", "read_bytes"))/(1<<20), procField(pid, "status", "VmRSS")>>10, load)
}

// procField reads a number from /proc/<pid>/<file> ("read_bytes: 123",
// "VmRSS:  456 kB").
func procField(pid int, file, name string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`(?m)^` + name + `:\s+(\d+)`).FindSubmatch(raw)
	if m == nil {
		return -1
	}
	var n int64
	fmt.Sscan(string(m[1]), &n)
	return n
}

// latencies collects durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

func (l *latencies) reset() {
	l.mu.Lock()
	l.d = l.d[:0]
	l.mu.Unlock()
}

// summary is "n, p50, p99, p99.9, max" of l.
func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := slices.Clone(l.d)
	slices.Sort(d)
	if len(d) == 0 {
		return "none"
	}
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(float64(len(d))*p))] }
	r := func(x time.Duration) string { return fmt.Sprintf("%.2f ms", float64(x.Microseconds())/1000) }
	return fmt.Sprintf("n %d, p50 %s, p99 %s, p99.9 %s, max %s", len(d), r(q(.5)), r(q(.99)), r(q(.999)), r(d[len(d)-1]))
}

// stallCommit is how long a commit must take to count as a stall of the
// disk: commits take about 1 ms and their p99.9 about 10 ms under the
// login load, and no wait for a CPU comes near this.
const stallCommit = 100 * time.Millisecond

// slowCommits notes the commits that took over 20 ms, with the file's
// size then, and when the stalls (stallCommit or more) were.
type slowCommits struct {
	mu     sync.Mutex
	list   []string
	stalls []interval
}

func (s *slowCommits) add(d time.Duration, db store.DB) {
	if d < 20*time.Millisecond {
		return
	}
	now := time.Now()
	size := int64(-1)
	if db != nil {
		size = db.(store.File).Space().FileSize >> 20
	}
	s.mu.Lock()
	s.list = append(s.list, fmt.Sprintf("%v at %s (file %d MB)", d.Round(time.Millisecond), now.Format("15:04:05.000"), size))
	if d >= stallCommit {
		s.stalls = append(s.stalls, interval{now.Add(-d), now})
	}
	s.mu.Unlock()
}

func (s *slowCommits) reset() {
	s.mu.Lock()
	s.list, s.stalls = nil, nil
	s.mu.Unlock()
}

// stalled reports writes split by whether they overlapped a stall of the
// disk: the disk, not latchkey, decides the first group.
func (s *slowCommits) stalled(writes *timedWrites) {
	s.mu.Lock()
	stalls := slices.Clone(s.stalls)
	s.mu.Unlock()
	during, outside := writes.split(stalls)
	report("  store writes that overlapped one of %d commits of %v or more (stalls of the disk): %s", len(stalls), stallCommit, during.summary())
	report("  store writes that overlapped none: %s", outside.summary())
}

func (s *slowCommits) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%s)", len(s.list), strings.Join(s.list, "; "))
}

// interval is a span of time.
type interval struct{ from, to time.Time }

// timedWrites collects store writes with the time they were durable.
type timedWrites struct {
	mu sync.Mutex
	w  []timedWrite
}

type timedWrite struct {
	end time.Time
	d   time.Duration
}

// add notes a write that began at start and was durable d later.
func (t *timedWrites) add(start time.Time, d time.Duration) {
	t.mu.Lock()
	t.w = append(t.w, timedWrite{start.Add(d), d})
	t.mu.Unlock()
}

// split sorts the writes into those that overlapped one of busy and the
// others.
func (t *timedWrites) split(busy []interval) (during, outside *latencies) {
	during, outside = &latencies{}, &latencies{}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.w {
		start, hit := w.end.Add(-w.d), false
		for _, b := range busy {
			if start.Before(b.to) && w.end.After(b.from) {
				hit = true
				break
			}
		}
		if hit {
			during.d = append(during.d, w.d)
		} else {
			outside.d = append(outside.d, w.d)
		}
	}
	return during, outside
}

// growthRun serves path in this process (warm) and measures the login
// load and the admin pages.
func growthRun(b *testing.B, path string, meta growthMeta, d time.Duration) {
	b.Helper()
	var batch, answered, commits latencies
	var writes timedWrites
	var slow slowCommits
	box := &mailtest.Codes{}
	var logs testkit.Buffer
	m := NewMain()
	m.Stdout = io.Discard
	if err := m.ParseFlags(nil, func(string) string { return "" }); err != nil {
		b.Fatal(err)
	}
	m.Config.Addr, m.Config.Data = "127.0.0.1:0", path
	m.Config.AdminToken, m.Config.MasterKey = growthAdmin, growthMasterKey
	m.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m.mailOverride = box
	m.observeCommit = func(d time.Duration) {
		commits.add(d)
		slow.add(d, m.DB)
	}
	m.observeBatch = func(durable, ans time.Duration) {
		batch.add(durable)
		answered.add(ans)
		writes.add(time.Now().Add(-ans), durable)
	}
	if err := m.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	base := "http://" + m.Addr()
	tr := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	call := func(method, path, auth string, body any) (map[string]any, time.Duration, error) {
		var rd io.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			rd = bytes.NewReader(raw)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer res.Body.Close()
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		took := time.Since(start)
		if res.StatusCode != 200 {
			return out, took, fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, out)
		}
		return out, took, nil
	}
	if _, _, err := call("PATCH", "/api/v1/admin/projects/"+meta.ProjectID, growthAdmin, map[string]any{"rateLimitPerMinute": 1_000_000_000}); err != nil {
		b.Fatal(err)
	}

	pages(b, call, base, meta, "before the load")

	const clients = 64
	var sends, verifies, sessions latencies
	before := m.DB.(store.File).Space()
	batch.reset()
	answered.reset()
	commits.reset()
	slow.reset()
	writes.mu.Lock()
	writes.w = writes.w[:0]
	writes.mu.Unlock()
	mark := len(logs.String())
	load := loadAverage()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var logins atomic.Int64
	var failed atomic.Value
	start := time.Now()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				addr := fmt.Sprintf("growth-%d-%d-%d@example.com", start.UnixNano(), w, i)
				_, took, err := call("POST", "/api/v1/otp/send", meta.APIKey, map[string]any{"email": addr})
				if err != nil {
					failed.Store(err)
					return
				}
				sends.add(took)
				code, err := box.Take(addr, 30*time.Second)
				if err != nil {
					failed.Store(err)
					return
				}
				out, took, err := call("POST", "/api/v1/otp/verify", meta.APIKey, map[string]any{"email": addr, "code": code})
				if err != nil {
					failed.Store(err)
					return
				}
				verifies.add(took)
				_, took, err = call("GET", "/api/v1/session", out["token"].(string), nil)
				if err != nil {
					failed.Store(err)
					return
				}
				sessions.add(took)
				logins.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	after := m.DB.(store.File).Space()
	n := logins.Load()
	report("login load: %d clients for %v (%s at start, %s at end): %d logins, %.0f logins/s",
		clients, elapsed.Round(time.Second), load, loadAverage(), n, float64(n)/elapsed.Seconds())
	report("  store writes (Batch, from the call until durable): %s", batch.summary())
	report("  store writes (Batch, from the call until the caller ran again): %s", answered.summary())
	report("  commits (pages and fsync): %s; over 20 ms: %s", commits.summary(), slow.String())
	report("  POST /otp/send: %s", sends.summary())
	report("  POST /otp/verify: %s", verifies.summary())
	report("  GET /session: %s", sessions.summary())
	var busy []interval // when a sweep or a last-seen flush ran
	for _, task := range []string{"sweep", "last-seen"} {
		var took []string
		for _, m := range regexp.MustCompile(`time=(\S+) level=DEBUG msg="background task ran" task=`+task+` took=(\S+)`).FindAllStringSubmatch(logs.String()[mark:], -1) {
			took = append(took, m[2])
			end, err1 := time.Parse(time.RFC3339Nano, m[1])
			d, err2 := time.ParseDuration(m[2])
			if err1 == nil && err2 == nil {
				// The log's time has milliseconds: widen by one.
				busy = append(busy, interval{end.Add(-d - time.Millisecond), end.Add(time.Millisecond)})
			}
		}
		report("  %s runs during the load: %d (%s)", task, len(took), strings.Join(took, ", "))
	}
	during, outside := writes.split(busy)
	report("  store writes while a sweep or flush ran: %s", during.summary())
	report("  store writes while none ran: %s", outside.summary())
	report("  file growth per login (not compacted): %.0f bytes of file, %.0f bytes of pages in use",
		float64(after.FileSize-before.FileSize)/float64(n), float64(after.InUse()-before.InUse())/float64(n))
	reportPages(before, after, n, commits.len())
	slow.stalled(&writes)
	pages(b, call, base, meta, "after the load")
	commits.reset()
	slow.reset()
	serviceLoad(b, m, box, meta, d, &batch, &answered, &commits, &writes, &logs)
	report("  commits (pages and fsync): %s; over 20 ms: %s", commits.summary(), slow.String())
	slow.stalled(&writes)
}

// serviceLoad is the login load without HTTP: 64 goroutines call the
// sign-in use cases themselves (send a code, verify it, check the new
// session), so that the CPU left to the store is not taken by HTTP, JSON
// and the load's own clients, while the scheduler's sweep and last-seen
// flush run at their real period. It reports every store write.
func serviceLoad(b *testing.B, m *Main, box *mailtest.Codes, meta growthMeta, d time.Duration, batch, answered, commits *latencies, writes *timedWrites, logs *testkit.Buffer) {
	b.Helper()
	p, err := m.Service.Project(ctx, meta.ProjectID)
	if err != nil {
		b.Fatal(err)
	}
	batch.reset()
	answered.reset()
	writes.mu.Lock()
	writes.w = writes.w[:0]
	writes.mu.Unlock()
	mark := len(logs.String())
	load := loadAverage()
	before := m.DB.(store.File).Space()
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var logins atomic.Int64
	var failed atomic.Value
	start := time.Now()
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				addr := fmt.Sprintf("direct-%d-%d-%d@example.com", start.UnixNano(), w, i)
				if err := m.Service.SendOTP(ctx, p, addr, auth.Meta{}); err != nil {
					failed.Store(err)
					return
				}
				code, err := box.Take(addr, 30*time.Second)
				if err != nil {
					failed.Store(err)
					return
				}
				l, err := m.Service.VerifyOTP(ctx, p, auth.OTPInput{Email: addr, Code: code}, auth.Meta{})
				if err != nil {
					failed.Store(err)
					return
				}
				if _, err := m.Service.AuthenticateSession(ctx, "Bearer "+l.Token); err != nil {
					failed.Store(err)
					return
				}
				logins.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	n := logins.Load()
	report("login writes without HTTP: 64 goroutines calling the sign-in use cases for %v (%s at start, %s at end): %d logins, %.0f logins/s",
		elapsed.Round(time.Second), load, loadAverage(), n, float64(n)/elapsed.Seconds())
	reportPages(before, m.DB.(store.File).Space(), n, commits.len())
	report("  store writes (Batch, from the call until durable): %s", batch.summary())
	report("  store writes (Batch, from the call until the caller ran again): %s", answered.summary())
	var busy []interval
	for _, task := range []string{"sweep", "last-seen"} {
		var took []string
		for _, m := range regexp.MustCompile(`time=(\S+) level=DEBUG msg="background task ran" task=`+task+` took=(\S+)`).FindAllStringSubmatch(logs.String()[mark:], -1) {
			took = append(took, m[2])
			end, err1 := time.Parse(time.RFC3339Nano, m[1])
			d, err2 := time.ParseDuration(m[2])
			if err1 == nil && err2 == nil {
				busy = append(busy, interval{end.Add(-d - time.Millisecond), end.Add(time.Millisecond)})
			}
		}
		report("  %s runs: %d (%s)", task, len(took), strings.Join(took, ", "))
	}
	during, outside := writes.split(busy)
	report("  store writes while a sweep or flush ran: %s", during.summary())
	report("  store writes while none ran: %s", outside.summary())
}

// reportPages reports the pages the commits between two readings of the
// file wrote, per login and per commit: what the writes cost whatever
// the disk's speed, so that a slower write p99.9 can be told apart from
// a slower disk.
func reportPages(before, after store.Space, logins int64, commits int) {
	w := float64(after.PagesWritten - before.PagesWritten)
	report("  pages written: %.1f per login, %.1f per commit (%d commits, %.1f logins each)",
		w/float64(max(logins, 1)), w/float64(max(commits, 1)), commits, float64(logins)/float64(max(commits, 1)))
}

// pages times the admin pages at this size, one request at a time.
func pages(b *testing.B, call func(method, path, auth string, body any) (map[string]any, time.Duration, error), base string, meta growthMeta, when string) {
	b.Helper()
	// A cursor names the last address of the previous page; addresses
	// start with eight hex digits of a hash, so "7fffffff" is half way
	// through the users and "fff00000" near the end.
	cursor := func(after string) string { return base64.RawURLEncoding.EncodeToString([]byte(after)) }
	cases := []struct{ name, path string }{
		{"users, first page", "/api/v1/admin/users?projectId=" + meta.ProjectID},
		{"users, half way", "/api/v1/admin/users?projectId=" + meta.ProjectID + "&cursor=" + cursor("7fffffff")},
		{"users, near the end", "/api/v1/admin/users?projectId=" + meta.ProjectID + "&cursor=" + cursor("fff00000")},
		{"users, 1,000 half way", "/api/v1/admin/users?projectId=" + meta.ProjectID + "&limit=1000&cursor=" + cursor("7fffffff")},
		{"users, email prefix", "/api/v1/admin/users?projectId=" + meta.ProjectID + "&email=7f"},
		{"events, newest", "/api/v1/admin/events"},
		{"events, project", "/api/v1/admin/events?projectId=" + meta.ProjectID},
		{"events, project and failure", "/api/v1/admin/events?projectId=" + meta.ProjectID + "&failureCode=invalid_code"},
		{"events, matching nothing", "/api/v1/admin/events?failureCode=risk_blocked"},
	}
	report("admin pages %s (%s; the first request, then 50 more):", when, loadAverage())
	for _, c := range cases {
		_, first, err := call("GET", c.path, growthAdmin, nil)
		if err != nil {
			b.Fatal(err)
		}
		var l latencies
		for range 50 {
			_, took, err := call("GET", c.path, growthAdmin, nil)
			if err != nil {
				b.Fatal(err)
			}
			l.add(took)
		}
		report("  %s: first %.2f ms; %s", c.name, float64(first.Microseconds())/1000, l.summary())
	}
}
