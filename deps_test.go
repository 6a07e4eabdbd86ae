package main

import (
	"go/build"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// TestDependencyDirection: the packages import one another one way
// (docs/development.md, "Layout"): main → httpapi → auth, mail, webhook → store; store (and
// internal/background, which runs background tasks for main, mail and
// webhook) and internal/netguard (the private-address guard shared by
// webhook and auth/social), internal/cli (the admin CLI, a client of the
// admin API over HTTP), internal/offsite (the scheduled backups to a
// bucket, fed the store's Backup by main) and internal/testkit (the
// tests' clock and buffer) import none of ours; internal/autotls (the
// HTTPS certificates, cached in the store) imports only store; store's backends and
// test helpers (store/bolt, store/postgres, store/storetest,
// store/pgtest) import only store and one another (and store/storetest
// internal/testkit, for the engine-free marker), and neither backend
// the other; store/bolt is the only one to import bbolt, store/postgres
// and store/pgtest the only ones to import pgx (store itself imports
// neither: TestStoreImportsNoEngine);
// webhook and auth never import each other; httpapi is the only one that
// serves HTTP or knows statuses (auth imports neither net/http nor
// httprouter).
// Non-test files only.
func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the imports")
	// refused lists, per package (a path prefix of ours), the imports it
	// must not have; a refused entry ending in "/" is a prefix.
	refused := map[string][]string{
		"latchkey/store":               {"latchkey/"},
		"latchkey/store/bolt":          {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "latchkey/internal/", "latchkey/store/postgres", "latchkey/store/storetest", "latchkey/store/pgtest"},
		"latchkey/store/postgres":      {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "latchkey/internal/", "latchkey/store/bolt", "latchkey/store/storetest"},
		"latchkey/store/storetest":     {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "latchkey/internal/"},
		"latchkey/internal/background": {"latchkey/"},
		"latchkey/internal/netguard":   {"latchkey/"},
		"latchkey/internal/cli":        {"latchkey/"},
		"latchkey/internal/testkit":    {"latchkey/"},
		"latchkey/internal/offsite":    {"latchkey/"},
		"latchkey/internal/autotls":    {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "latchkey/internal/"},
		"latchkey/internal/promtext":   {"latchkey/"},
		"latchkey/auth":                {"latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "github.com/julienschmidt/httprouter"},
		"latchkey/webhook":             {"latchkey/auth", "latchkey/httpapi", "latchkey/mail", "github.com/julienschmidt/httprouter"},
		"latchkey/mail":                {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "github.com/julienschmidt/httprouter"},
	}
	// exact lists imports refused to one package only, not its children
	// (auth/sms is an HTTP client of its provider, as webhook is).
	exact := map[string][]string{
		"latchkey/auth": {"net/http"},
	}
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "docs") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		} else if err != nil {
			return err
		}
		ip := "latchkey"
		if path != "." {
			ip += "/" + filepath.ToSlash(path)
		}
		seen++
		for _, imp := range pkg.Imports {
			if isBbolt(imp) && ip != "latchkey/store/bolt" {
				t.Errorf("%s imports %s: only store/bolt may", ip, imp)
			}
			if isPgx(imp) && ip != "latchkey/store/postgres" && ip != "latchkey/store/pgtest" {
				t.Errorf("%s imports %s: only store/postgres and store/pgtest may", ip, imp)
			}
			for owner, bad := range refused {
				if ip != owner && !strings.HasPrefix(ip, owner+"/") {
					continue
				}
				if owner == "latchkey/store" && ip != owner && (imp == "latchkey/store" || strings.HasPrefix(imp, "latchkey/store/")) {
					continue // a backend or helper of store may use store
				}
				if ip == "latchkey/store/storetest" && imp == "latchkey/internal/testkit" {
					continue // the tests' kit, standard library only
				}
				for _, b := range bad {
					if imp == b || strings.HasSuffix(b, "/") && strings.HasPrefix(imp, b) {
						t.Errorf("%s imports %s", ip, imp)
					}
				}
			}
			if slices.Contains(exact[ip], imp) {
				t.Errorf("%s imports %s", ip, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 8 {
		t.Fatalf("found %d packages; the walk is broken", seen)
	}
}

// isBbolt and isPgx report whether an import path is of an engine's
// client: bbolt's or pgx's packages.
func isBbolt(imp string) bool {
	return imp == "go.etcd.io/bbolt" || strings.HasPrefix(imp, "go.etcd.io/bbolt/")
}

func isPgx(imp string) bool {
	return imp == "github.com/jackc/pgx" || strings.HasPrefix(imp, "github.com/jackc/pgx/")
}

// TestStoreImportsNoEngine: package store (the records and interfaces)
// depends on no backend, directly or through another package: what `go
// list -deps ./store` lists names neither bbolt nor pgx, nor store/bolt
// nor store/postgres, so a program links an engine only by importing its
// backend. Non-test files only.
func TestStoreImportsNoEngine(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the imports")
	seen := map[string]bool{}
	var walk func(path, from string)
	walk = func(path, from string) {
		if seen[path] {
			return
		}
		seen[path] = true
		if isBbolt(path) || isPgx(path) || path == "latchkey/store/bolt" || path == "latchkey/store/postgres" {
			t.Errorf("latchkey/store depends on %s (imported by %s)", path, from)
		}
		var pkg *build.Package
		var err error
		switch first, _, _ := strings.Cut(path, "/"); {
		case path == "latchkey" || first == "latchkey":
			pkg, err = build.ImportDir("."+strings.TrimPrefix(path, "latchkey"), 0)
		case !strings.Contains(first, "."):
			return // the standard library, which imports no engine
		default:
			pkg, err = build.Import(path, ".", 0)
		}
		if err != nil {
			t.Fatalf("%s (imported by %s): %v", path, from, err)
		}
		for _, imp := range pkg.Imports {
			walk(imp, path)
		}
	}
	walk("latchkey/store", "the test")
	if len(seen) < 10 {
		t.Fatalf("latchkey/store has %d dependencies: the walk is broken", len(seen))
	}
}

// TestBinaryLinksNoPrometheusClient: the binary writes its metrics with
// internal/promtext; neither the Prometheus Go client nor the protocol
// buffers it needs (3 MB of the stripped binary) come back through a
// dependency. Tests may use them (the exposition is checked against the
// client's).
func TestBinaryLinksNoPrometheusClient(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "lists the binary's dependencies")
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "latchkey/internal/promtext") {
		t.Fatalf("go list -deps lists no latchkey/internal/promtext: %v", deps)
	}
	for _, d := range deps {
		for _, bad := range []string{"github.com/prometheus/", "google.golang.org/protobuf/"} {
			if strings.HasPrefix(d, bad) {
				t.Errorf("the binary links %s", d)
			}
		}
	}
}
