package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store/pgtest"
	"latchkey/store/storetest"
)

// TestPostgresRestartAnswers503: while the database restarts (a fast
// shutdown ends the sessions with 57P01, connecting is refused while it
// is down and answered 57P03 while it starts), every call that needs it
// answers 503 SERVICE_UNAVAILABLE with Retry-After, never 500, writes
// and reads alike; once it is back, the same calls succeed again
// without restarting latchkey.
func TestPostgresRestartAnswers503(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("restarts a PostgreSQL cluster")
	}
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("restarts a PostgreSQL cluster of its own: runs with LATCHKEY_TEST_STORE=postgres (skipped on bolt)")
	}
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("restarts a PostgreSQL cluster of its own: not with " + pgtest.EnvURL)
	}
	cluster, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoPostgres) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Stop() })
	dsn, _, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const admin = "adm_postgres_restart_test_0123456789"
	m := NewMain()
	var out bytes.Buffer
	m.Stdout, m.outbox = &out, filepath.Join(t.TempDir(), "outbox")
	if err := m.ParseFlags([]string{"--addr", "127.0.0.1:0", "--database-url", dsn, "--master-key", testMasterKey, "--admin-token", admin}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	m.Logger = discardLogger()
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	key, base := match(t, keyLine, out.String()), "http://"+m.Addr()
	c := client{t, base}
	_, projects := c.do("GET", "/api/v1/admin/projects", admin, nil)
	project := projects["projects"].([]any)[0].(map[string]any)["id"].(string)
	if st, body := c.do("PATCH", "/api/v1/admin/projects/"+project, admin, map[string]any{"rateLimitPerMinute": 100000}); st != 200 {
		t.Fatalf("raise the rate limit: %d %v", st, body)
	}

	// The calls: a write (a code sent to a new address each time) and a
	// read of the database.
	type answer struct {
		what, code, retry string
		status            int
	}
	var n atomic.Int64
	call := func(what string) answer {
		var req *http.Request
		if what == "write" {
			b, _ := json.Marshal(map[string]any{"email": fmt.Sprintf("restart-%d@example.com", n.Add(1))})
			req, _ = http.NewRequest("POST", base+"/api/v1/otp/send", bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
		} else {
			req, _ = http.NewRequest("GET", base+"/api/v1/admin/users?projectId="+project, nil)
			req.Header.Set("Authorization", "Bearer "+admin)
		}
		hc := &http.Client{Timeout: 20 * time.Second}
		res, err := hc.Do(req)
		if err != nil {
			return answer{what: what, code: err.Error()}
		}
		defer res.Body.Close()
		var env struct {
			Code string `json:"code"`
		}
		json.NewDecoder(res.Body).Decode(&env)
		return answer{what: what, status: res.StatusCode, code: env.Code, retry: res.Header.Get("Retry-After")}
	}
	var (
		mu      sync.Mutex
		answers []answer
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			what := []string{"write", "read"}[i%2]
			for !stop.Load() {
				a := call(what)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if err := cluster.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	// Back: both kinds of call succeed again within a few seconds.
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		okAfter := map[string]bool{}
		for i := len(answers) - 1; i >= 0 && i >= len(answers)-8; i-- {
			if answers[i].status == 200 {
				okAfter[answers[i].what] = true
			}
		}
		mu.Unlock()
		if okAfter["write"] && okAfter["read"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls do not succeed again after the database came back: %+v", okAfter)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	count := map[string]int{}
	for _, a := range answers {
		switch {
		case a.status == 200:
			count["200"]++
		case a.status == 503 && a.code == "SERVICE_UNAVAILABLE" && a.retry != "":
			count["503"]++
		default:
			t.Errorf("%s during the restart: %d %s (Retry-After %q); want 200, or 503 SERVICE_UNAVAILABLE with Retry-After", a.what, a.status, a.code, a.retry)
		}
	}
	t.Logf("answers during and around the restart: %v", count)
	if count["503"] == 0 {
		t.Fatal("no call met the restart: the test saw no outage")
	}
}
