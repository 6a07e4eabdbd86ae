package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/store"
)

// benchEnv is the real server over loopback on a real bbolt file, plus a
// trivial JSON route on the same stack (the floor).
type benchEnv struct {
	url     string
	svc     *auth.Service
	db      *store.DB
	keys    *store.Keyring
	key     string
	project *store.Project
	client  *http.Client
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	db, _, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	keys, _ := store.NewKeyring(bytes.Repeat([]byte{1}, 32))
	hs := httptest.NewUnstartedServer(nil)
	url := "http://" + hs.Listener.Addr().String()
	svc, err := auth.New(db, keys, auth.Config{BaseURL: url, AdminToken: "adm_benchbenchbenchbenchbench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	boot, err := svc.Init()
	if err != nil {
		b.Fatal(err)
	}
	// Raise the project's rate out of the way; the limiter still runs.
	rate := auth.MaxRateLimit
	if _, err := svc.UpdateProject(boot.Project.ID, auth.ProjectInput{RateLimitPerMinute: &rate}); err != nil {
		b.Fatal(err)
	}
	s := New(svc, Config{Logger: slog.New(slog.DiscardHandler)})
	s.router.GET("/bench/floor", s.handle(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		return ok(w, struct {
			Success bool   `json:"success"`
			Value   string `json:"value"`
		}{true, "floor"})
	}))
	hs.Config.Handler = s
	hs.Start()
	b.Cleanup(hs.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchEnv{url: url, svc: svc, db: db, keys: keys, key: boot.APIKey, project: boot.Project, client: &http.Client{Transport: tr}}
}

// load runs b.N requests from conc goroutines and reports req/s and p99.
func (e *benchEnv) load(b *testing.B, conc int, do func(worker, i int) error) {
	b.Helper()
	lat := make([][]time.Duration, conc)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t := time.Now()
				if err := do(w, i); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

func (e *benchEnv) get(path, token string) error {
	req, _ := http.NewRequest("GET", e.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("GET %s: status %d", path, res.StatusCode)
	}
	return nil
}

func (e *benchEnv) post(path, token string, body any) (map[string]any, error) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", e.url+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("POST %s: status %d %v", path, res.StatusCode, out)
	}
	return out, nil
}

const benchConc = 32

// BenchmarkFloor is (a): a trivial JSON handler on the same stack.
func BenchmarkFloor(b *testing.B) {
	e := newBenchEnv(b)
	e.load(b, benchConc, func(int, int) error { return e.get("/bench/floor", "") })
}

// BenchmarkMeAPIKey is (b): GET /me with an API key; the limiter runs.
func BenchmarkMeAPIKey(b *testing.B) {
	e := newBenchEnv(b)
	e.load(b, benchConc, func(int, int) error { return e.get("/api/v1/me", e.key) })
}

// BenchmarkSession is (c): GET /session with a valid JWT.
func BenchmarkSession(b *testing.B) {
	e := newBenchEnv(b)
	tokens := make([]string, benchConc)
	for i := range tokens {
		tokens[i] = e.loginDirect(b, fmt.Sprintf("bench%d@example.com", i))
	}
	e.load(b, benchConc, func(w, _ int) error { return e.get("/api/v1/session", tokens[w]) })
}

// loginDirect signs a user in through the service, reading the code from
// the queued mail.
func (e *benchEnv) loginDirect(b *testing.B, email string) string {
	b.Helper()
	if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
		b.Fatal(err)
	}
	out, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
	if err != nil {
		b.Fatal(err)
	}
	return out["token"].(string)
}

// code reads the newest queued mail to email and returns its code (the
// mail worker, which would delete it, is not running).
func (e *benchEnv) code(email string) string {
	var found *store.Mail
	e.db.View(func(tx *store.Tx) error {
		return tx.RecentMail(func(m *store.Mail) bool {
			if m.To == email {
				found = m
			}
			return found == nil
		})
	})
	if found == nil {
		return ""
	}
	var content store.MailContent
	body, _ := e.keys.Open(found.Body, store.MailAAD)
	json.Unmarshal(body, &content)
	return content.Code
}

// BenchmarkOTPLogin is (d): the full email OTP login (send, then verify
// with the emailed code) from 64 concurrent clients; one op is one login.
func BenchmarkOTPLogin(b *testing.B) {
	e := newBenchEnv(b)
	e.load(b, 64, func(w, i int) error {
		email := fmt.Sprintf("u%d-%d@example.com", w, i)
		if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
			return err
		}
		_, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
		return err
	})
}

// BenchmarkStoreCommit is the baseline for (d): one bbolt commit (with
// fsync) per write, 64 concurrent writers, no group commit.
func BenchmarkStoreCommit(b *testing.B) {
	e := newBenchEnv(b)
	e.load(b, 64, func(w, i int) error {
		return e.db.Update(func(tx *store.Tx) error {
			return tx.AddAuthEvent(&store.AuthEvent{ID: fmt.Sprint(w, i), CreatedAt: time.Now()})
		})
	})
}

// BenchmarkStoreBatch is BenchmarkStoreCommit through DB.Batch (group
// commit): what the login paths use.
func BenchmarkStoreBatch(b *testing.B) {
	e := newBenchEnv(b)
	e.load(b, 64, func(w, i int) error {
		return e.db.Batch(func(tx *store.Tx) error {
			return tx.AddAuthEvent(&store.AuthEvent{ID: fmt.Sprint(w, i), CreatedAt: time.Now()})
		})
	})
}
