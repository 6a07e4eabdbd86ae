package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/store/storetest"
)

// smallFS mounts a tmpfs of size bytes in a new directory and returns
// it; it is unmounted at the end of the test. It skips the test, saying
// why, when it cannot mount one (not root, or no mount permission).
func smallFS(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("SKIPPED: cannot make a small filesystem for the disk-full test (mounting a tmpfs needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill appends to the file filler in dir until the filesystem is full
// and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last partial pages too.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// rawDo sends a request and returns the response with its body decoded.
func rawDo(t *testing.T, method, url, auth string, body any) (*http.Response, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res, out
}

// TestDiskFull: with the data file on a filesystem that fills up, a call
// that writes answers 503 SERVICE_UNAVAILABLE with Retry-After, reads
// keep working, GET /ready answers 503 (GET /health, liveness, stays
// 200), the log gets one line about it (not one per request), and once
// space is freed writes succeed again and /ready is 200 without a
// restart, nothing lost.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: a data file on a full file system.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	dir := smallFS(t, 16<<20)
	data := filepath.Join(dir, "latchkey.db")
	var logs testkit.Buffer
	m, out := startMain(t, Config{Data: data, AdminToken: "adm_diskfulldiskfulldiskfull"}, &logs)
	base := "http://" + m.Addr()
	key := keyLine.FindStringSubmatch(out.String())[1]
	c := client{t, base}
	if st, _ := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "before@example.com"}); st != 200 {
		t.Fatalf("send before the disk filled: %d", st)
	}
	code := waitForCode(t, data+".outbox")
	st, login := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "before@example.com", "code": code})
	if st != 200 {
		t.Fatalf("login before the disk filled: %d %v", st, login)
	}
	token := login["token"].(string)

	filler := fill(t, dir)
	var res *http.Response
	var body map[string]any
	sent := 0
	for i := 0; i < 5000; i++ {
		res, body = rawDo(t, "POST", base+"/api/v1/otp/send", key, map[string]any{"email": fmt.Sprintf("full%d@example.com", i)})
		if res.StatusCode != 200 {
			break
		}
		sent++
	}
	if res.StatusCode != 503 || body["code"] != "SERVICE_UNAVAILABLE" || body["success"] != false {
		t.Fatalf("a write on a full disk: %d %v, want 503 SERVICE_UNAVAILABLE", res.StatusCode, body)
	}
	if ra := res.Header.Get("Retry-After"); ra == "" {
		t.Fatal("503 without Retry-After")
	}
	t.Logf("%d sends fit in the pages already allocated before the first 503", sent)
	// A write that fits in pages earlier transactions freed needs no
	// disk space and may succeed; every other one answers 503.
	failed := 0
	for i := range 20 {
		// Take what the server freed meanwhile (the mail queue's
		// temporary files that could not be written, say).
		fill(t, dir)
		res, body = rawDo(t, "POST", base+"/api/v1/otp/send", key, map[string]any{"email": fmt.Sprintf("more%d@example.com", i)})
		if res.StatusCode == 200 {
			continue
		}
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || body["code"] != "SERVICE_UNAVAILABLE" {
			t.Fatalf("write %d on the full disk: %d %v", i, res.StatusCode, body)
		}
		failed++
	}
	if failed < 10 {
		t.Fatalf("%d of 20 writes on the full disk failed, want most", failed)
	}
	// The last write failed (a background write, or one that reused free
	// pages, could have succeeded meanwhile: write until one fails).
	for i := 0; ; i++ {
		fill(t, dir)
		res, _ := rawDo(t, "POST", base+"/api/v1/otp/send", key, map[string]any{"email": fmt.Sprintf("last%d@example.com", i)})
		if res.StatusCode == 503 {
			break
		}
		if res.StatusCode != 200 || i == 50 {
			t.Fatalf("write on the full disk: %d after %d tries", res.StatusCode, i+1)
		}
	}
	if err := m.DB.(store.File).WriteError(); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteError()=%v, want ENOSPC", err)
	}
	if st, body := c.do("GET", "/api/v1/ready", "", nil); st != 503 || !strings.Contains(fmt.Sprint(body["error"]), "last write failed") {
		t.Fatalf("GET /ready on a full disk: %d %v, want 503 naming the failed write", st, body)
	}
	if st, _ := c.do("GET", "/api/v1/health", "", nil); st != 200 {
		t.Fatalf("GET /health (liveness) on a full disk: %d, want 200", st)
	}
	// Reads keep working.
	if st, body := c.do("GET", "/api/v1/session", token, nil); st != 200 {
		t.Fatalf("GET /session on a full disk: %d %v", st, body)
	}
	if st, body := c.do("GET", "/api/v1/admin/projects", "adm_diskfulldiskfulldiskfull", nil); st != 200 {
		t.Fatalf("admin project list on a full disk: %d %v", st, body)
	}
	if n := strings.Count(logs.String(), "data file writes are failing"); n != 1 {
		t.Fatalf("%d log lines about failing writes, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "request failed") {
		t.Fatalf("failed writes logged per request:\n%s", logs.String())
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "after@example.com"}); st != 200 {
		t.Fatalf("send after space came back: %d %v", st, body)
	}
	if err := m.DB.(store.File).WriteError(); err != nil {
		t.Fatalf("WriteError()=%v after a write succeeded", err)
	}
	if st, body := c.do("GET", "/api/v1/ready", "", nil); st != 200 {
		t.Fatalf("GET /ready after space came back: %d %v", st, body)
	}
	if !strings.Contains(logs.String(), "data file writes succeed again") {
		t.Fatalf("no recovery line:\n%s", logs.String())
	}
	if st, _ := c.do("GET", "/api/v1/session", token, nil); st != 200 {
		t.Fatalf("the session before the disk filled: %d", st)
	}
	m.Close()
	db, _, err := store.Open(ctx, data, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.(store.File).Check(); err != nil {
		t.Fatalf("data file after the full disk: %v", err)
	}
}
