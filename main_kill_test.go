package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"latchkey/store/storetest"
)

// TestKill9KeepsAcknowledgedWrites: while clients write through both
// commit paths (OTP sends through the group commit, project creation
// through a plain transaction), the server process is killed with
// SIGKILL. After a restart every write that was answered 200 is there:
// each acknowledged send's throttle row refuses a second send (429), and
// each acknowledged project reads back. (A killed process keeps what it
// wrote to the page cache, so this proves that no answer precedes its
// commit; surviving power loss rests on bbolt's fsync per commit, which
// the group commit keeps.)
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: kill -9 of a child process serving a data file.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	data := filepath.Join(t.TempDir(), "latchkey.db")
	p := spawn(t, data)
	key, admin := p.printed(keyLine), p.printed(adminLine)
	c := client{t, p.base}
	_, body := c.do("GET", "/api/v1/admin/projects", admin, nil)
	project := body["projects"].([]any)[0].(map[string]any)["id"].(string)
	if st, body := c.do("PATCH", "/api/v1/admin/projects/"+project, admin, map[string]any{"rateLimitPerMinute": 100000}); st != 200 {
		t.Fatalf("raise rate: %d %v", st, body)
	}

	hc := &http.Client{Timeout: 5 * time.Second}
	post := func(path, token string, in any) (int, map[string]any, error) {
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest("POST", p.base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			return 0, nil, err // cut mid-answer: not acknowledged
		}
		return res.StatusCode, out, nil
	}
	var (
		mu       sync.Mutex
		sent     []string // addresses whose send was answered 200
		projects []string // projects whose creation was answered 200
		wg       sync.WaitGroup
		started  = make(chan struct{}, 64)
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if w%4 == 3 {
					st, out, err := post("/api/v1/admin/projects", admin, map[string]any{"name": fmt.Sprintf("kill-%d-%d", w, i)})
					if err != nil {
						return
					}
					if st == 200 {
						mu.Lock()
						projects = append(projects, out["project"].(map[string]any)["id"].(string))
						mu.Unlock()
					}
				} else {
					addr := fmt.Sprintf("kill-%d-%d@example.com", w, i)
					st, _, err := post("/api/v1/otp/send", key, map[string]any{"email": addr})
					if err != nil {
						return
					}
					if st == 200 {
						mu.Lock()
						sent = append(sent, addr)
						mu.Unlock()
					}
				}
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}()
	}
	// Kill once a good number of writes has been answered, with the
	// writers still running.
	for n := 0; n < 200; n++ {
		<-started
	}
	p.kill()
	wg.Wait()
	if len(sent) == 0 || len(projects) == 0 {
		t.Fatalf("acknowledged %d sends and %d projects before the kill; want some of each", len(sent), len(projects))
	}

	p2 := spawn(t, data)
	c2 := client{t, p2.base}
	for _, addr := range sent {
		st, body := c2.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr})
		if st != 429 || body["code"] != "TOO_MANY_REQUESTS" {
			t.Fatalf("resend to %s after the kill: %d %v, want 429 TOO_MANY_REQUESTS (the acknowledged send's throttle row is lost)", addr, st, body)
		}
	}
	for _, id := range projects {
		if st, body := c2.do("GET", "/api/v1/admin/projects/"+id, admin, nil); st != 200 {
			t.Fatalf("project %s acknowledged before the kill: %d %v", id, st, body)
		}
	}
	t.Logf("kill -9 with writers running: %d acknowledged sends and %d projects all survived", len(sent), len(projects))
}
