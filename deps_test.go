package main

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDependencyDirection: the packages import one another one way
// (docs/development.md, "Layout"): main → httpapi → auth, mail, webhook → store; store (and
// internal/background, which runs background tasks for main, mail and
// webhook) and internal/netguard (the private-address guard shared by
// webhook and auth/social), internal/cli (the admin CLI, a client of the
// admin API over HTTP) and internal/testkit (the tests' clock and buffer)
// import none of ours; store's backends and
// test helpers (store/postgres, store/storetest, store/pgtest) import only store and
// one another; store is the only one to import bbolt, and only they
// import pgx;
// webhook and auth never import each other; httpapi is the only one that
// serves HTTP or knows statuses (auth imports neither net/http nor
// httprouter).
// Non-test files only.
func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	// refused lists, per package (a path prefix of ours), the imports it
	// must not have; a refused entry ending in "/" is a prefix.
	refused := map[string][]string{
		"latchkey/store":               {"latchkey/"},
		"latchkey/store/postgres":      {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "latchkey/internal/"},
		"latchkey/store/storetest":     {"latchkey/auth", "latchkey/httpapi", "latchkey/webhook", "latchkey/mail", "latchkey/internal/"},
		"latchkey/internal/background": {"latchkey/"},
		"latchkey/internal/netguard":   {"latchkey/"},
		"latchkey/internal/cli":        {"latchkey/"},
		"latchkey/internal/testkit":    {"latchkey/"},
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
			if imp == "go.etcd.io/bbolt" && ip != "latchkey/store" {
				t.Errorf("%s imports bbolt: only store may", ip)
			}
			if strings.HasPrefix(imp, "github.com/jackc/pgx") && !strings.HasPrefix(ip, "latchkey/store/") {
				t.Errorf("%s imports pgx: only store's backends may", ip)
			}
			for owner, bad := range refused {
				if ip != owner && !strings.HasPrefix(ip, owner+"/") {
					continue
				}
				if owner == "latchkey/store" && ip != owner && (imp == "latchkey/store" || strings.HasPrefix(imp, "latchkey/store/")) {
					continue // a backend or helper of store may use store
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
