package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/store/storetest"
)

// TestCompact: `latchkey compact` refuses the file of a running server
// and an existing --out, then writes a smaller copy of a stopped
// server's file that holds every row, prints both sizes, and starts.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: compact rewrites a data file.
func TestCompact(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if _, usage, _, _ := child(t, nil, ""); !strings.Contains(usage, "latchkey compact --data FILE --out FILE") {
		t.Fatalf("usage does not name compact:\n%s", usage)
	}
	dir := t.TempDir()
	data, out := filepath.Join(dir, "latchkey.db"), filepath.Join(dir, "compact.db")
	// The server's clock stands still: the send history must still
	// throttle a second send after the restart, however long the
	// compaction took.
	clock := testkit.NewClock(time.Now())
	m, printed := startMainAt(t, Config{Data: data, AdminToken: "adm_compactcompactcompact"}, clock.Now)
	key := keyLine.FindStringSubmatch(printed.String())[1]
	c := client{t, "http://" + m.Addr()}
	if st, _ := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "kept@example.com"}); st != 200 {
		t.Fatal("send")
	}
	code := waitForCode(t, data+".outbox")
	if st, _ := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "kept@example.com", "code": code}); st != 200 {
		t.Fatal("verify")
	}
	exit, _, stderr, took := child(t, nil, "compact --data "+data+" --out "+out)
	if exit != 1 || !strings.Contains(stderr, "in use") || !strings.Contains(stderr, "stop the server") {
		t.Fatalf("compact of a running server's file: exit %d, %q", exit, stderr)
	}
	t.Logf("refused in %v", took)
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused compaction left --out behind")
	}
	m.Close()

	// Grow the file, then delete most of it: the free pages stay.
	db, _, err := store.Open(ctx, data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var project string
	db.View(ctx, func(tx store.Tx) error {
		u, err := tx.UserByEmail(firstProject(t, tx), "kept@example.com")
		if err != nil {
			t.Fatal(err)
		}
		project = u.ProjectID
		return nil
	})
	for i := range 4 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for j := range 5000 {
				u := &store.User{ID: fmt.Sprintf("u%d-%d", i, j), ProjectID: project, Email: fmt.Sprintf("gone%d-%d@example.com", i, j)}
				if err := tx.PutUser(u); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		err := db.Update(ctx, func(tx store.Tx) error {
			for j := range 5000 {
				if err := tx.DeleteUser(&store.User{ID: fmt.Sprintf("u%d-%d", i, j), ProjectID: project, Email: fmt.Sprintf("gone%d-%d@example.com", i, j)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	if err := os.WriteFile(out, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if exit, _, stderr, _ := child(t, nil, "compact --data "+data+" --out "+out); exit != 1 || !strings.Contains(stderr, "exists") {
		t.Fatalf("compact over an existing file: exit %d, %q", exit, stderr)
	}
	os.Remove(out)
	if exit, _, stderr, _ := child(t, nil, "compact --data "+data); exit != 2 || !strings.Contains(stderr, "--out") {
		t.Fatalf("compact without --out: exit %d, %q", exit, stderr)
	}
	exit, stdout, stderr, _ := child(t, nil, "compact --data "+data+" --out "+out)
	if exit != 0 {
		t.Fatalf("compact: exit %d, %s", exit, stderr)
	}
	sizes := regexp.MustCompile(`\(([\d.]+ [KMG]?B|\d+ bytes)\).*\(([\d.]+ [KMG]?B|\d+ bytes), ([\d.]+)% of it\)`).FindStringSubmatch(stdout)
	if sizes == nil {
		t.Fatalf("compact printed %q, want both sizes", stdout)
	}
	before, _ := os.Stat(data)
	after, _ := os.Stat(out)
	t.Logf("%s", strings.TrimSpace(stdout))
	if after.Size() >= before.Size() {
		t.Fatalf("compacted %d bytes into %d", before.Size(), after.Size())
	}
	if after.Mode().Perm() != 0o600 {
		t.Fatalf("compacted file mode %v, want 0600", after.Mode().Perm())
	}
	// The copy serves with the same master key.
	if err := os.Rename(out, data); err != nil {
		t.Fatal(err)
	}
	m, _ = startMainAt(t, Config{Data: data, AdminToken: "adm_compactcompactcompact"}, clock.Now)
	c = client{t, "http://" + m.Addr()}
	// The send history came along (a second send within 30 s is
	// throttled); a new address is served.
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "kept@example.com"}); st != 429 {
		t.Fatalf("second send on the compacted file: %d %v, want 429", st, body)
	}
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "new@example.com"}); st != 200 {
		t.Fatalf("send on the compacted file: %d %v", st, body)
	}
	m.Close()
	db, _, err = store.Open(ctx, data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.(store.File).Check(); err != nil {
		t.Fatal(err)
	}
}

// firstProject returns the id of the file's only project.
func firstProject(t *testing.T, tx store.Tx) string {
	t.Helper()
	ps, err := tx.Projects()
	if err != nil || len(ps) != 1 {
		t.Fatalf("projects %v, %v", ps, err)
	}
	return ps[0].ID
}
