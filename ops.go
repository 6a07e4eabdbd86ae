package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"latchkey/internal/cli"
	"latchkey/store"
	"latchkey/store/bolt"
	"latchkey/store/postgres"
)

// runMigrate is `latchkey migrate --database-url URL`: it applies the
// schema migrations the database lacks, as `latchkey serve` does at start
// (one replica at a time, under a row lock), and prints the versions.
// Exit codes: 0 done, 1 refused or failed, 2 bad usage.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("latchkey migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("database-url", getenv("LATCHKEY_DATABASE_URL"), "")
	help := func(w io.Writer) {
		fmt.Fprintf(w, `Usage: latchkey migrate --database-url URL

Bring the PostgreSQL database's schema up to date (latchkey serve does the
same at start) and print its version before and after. Run it before
starting the replicas of a new latchkey version; a database newer than this
binary is refused.

Flags:
  --database-url URL   postgres://... (env LATCHKEY_DATABASE_URL)
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "latchkey migrate: %v\n", cli.FlagError(err))
		help(stderr)
		return 2
	}
	if *url == "" || fs.NArg() > 0 || !store.IsURL(*url) {
		fmt.Fprintln(stderr, "latchkey migrate: --database-url postgres://... is required (and nothing else)")
		help(stderr)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	before, after, err := postgres.Migrate(ctx, *url, log)
	if err != nil {
		fmt.Fprintf(stderr, "latchkey migrate: %s\n", oneLine(err))
		return 1
	}
	if before == after {
		fmt.Fprintf(stdout, "Schema version %d: up to date (%s).\n", after, redactURL(*url))
	} else {
		fmt.Fprintf(stdout, "Schema version %d, was %d (%s).\n", after, before, redactURL(*url))
	}
	return 0
}

// runCopy is `latchkey copy --from FILE_OR_URL --to FILE_OR_URL`: it
// copies every record of a store (a bbolt data file or a PostgreSQL
// database) into an empty one, with the same master key. Exit codes: 0
// done, 1 refused or failed, 2 bad usage.
func runCopy(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("latchkey copy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "")
	to := fs.String("to", "", "")
	masterKey := fs.String("master-key", getenv("LATCHKEY_MASTER_KEY"), "")
	help := func(w io.Writer) {
		fmt.Fprint(w, `Usage: latchkey copy --from FILE_OR_URL --to FILE_OR_URL

Copy everything a store holds (projects, keys, users, sessions, factors,
passkeys, mail templates, webhooks, queued mail and deliveries, events and
their counters) into an empty store: from a bbolt data file into a PostgreSQL database
(postgres://...) or back, or between two of either. Secrets stay encrypted
under the master key, so the copy is read with the same key. Stop the
servers that write to the source first; a target that holds data is
refused, and a failed copy leaves a database target empty (one
transaction) and removes a file target it created.

Flags:
  --from FILE_OR_URL   the source: a data file, or postgres://...
  --to FILE_OR_URL     the target: a new data file, or an empty database
  --master-key KEY     the master key (env LATCHKEY_MASTER_KEY); default:
                       the source data file's FILE.key
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "latchkey copy: %v\n", cli.FlagError(err))
		help(stderr)
		return 2
	}
	if *from == "" || *to == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "latchkey copy: --from and --to are required (and nothing else)")
		help(stderr)
		return 2
	}
	if *from == *to {
		fmt.Fprintln(stderr, "latchkey copy: --from and --to name the same store")
		return 2
	}
	if err := copyStore(ctx, *from, *to, *masterKey, stdout); err != nil {
		fmt.Fprintf(stderr, "latchkey copy: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// copyStore copies from into to (see runCopy).
func copyStore(ctx context.Context, from, to, masterKey string, stdout io.Writer) (err error) {
	start := time.Now()
	// The master key: given, or the source file's.
	keyFile := ""
	if masterKey == "" {
		if store.IsURL(from) {
			return errors.New("--master-key (or LATCHKEY_MASTER_KEY) is required to copy from a database: the key its replicas run with")
		}
		keyFile = from + ".key"
		if _, err := os.Stat(keyFile); err != nil {
			return fmt.Errorf("master key file %s: %w (or pass --master-key)", keyFile, err)
		}
	}
	key, _, err := store.LoadMasterKey(masterKey, keyFile)
	if err != nil {
		return fmt.Errorf("master key: %w", err)
	}
	keys, err := store.NewKeyring(key)
	if err != nil {
		return err
	}
	// The source must exist: a file is never created by reading it.
	if !store.IsURL(from) {
		fresh, err := bolt.CheckFile(from, time.Second)
		if err != nil {
			return err
		}
		if fresh {
			return fmt.Errorf("%s does not exist", from)
		}
	}
	src, _, err := store.Open(ctx, from, store.Options{LockTimeout: time.Second})
	if errors.Is(err, store.ErrInUse) {
		return fmt.Errorf("%s: %w: stop the server first", from, err)
	} else if err != nil {
		return fmt.Errorf("%s: %w", describe(from), err)
	}
	defer src.Close()
	if err := store.VerifyKeyring(ctx, src, keys); err != nil {
		return fmt.Errorf("%s: %w", describe(from), err)
	}

	// The target: an empty database, or a data file (created here, and
	// removed again when the copy fails).
	created := false
	if !store.IsURL(to) {
		fresh, err := bolt.CheckFile(to, time.Second)
		if err != nil {
			return err
		}
		created = fresh
		if err := checkKeyFile(to+".key", key); err != nil {
			return err
		}
	}
	dst, _, err := store.Open(ctx, to, store.Options{LockTimeout: time.Second})
	if errors.Is(err, store.ErrInUse) {
		return fmt.Errorf("%s: %w: stop the server first", to, err)
	} else if err != nil {
		return fmt.Errorf("%s: %w", describe(to), err)
	}
	defer func() {
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil && created {
			os.Remove(to)
		}
	}()
	counts, err := store.Copy(ctx, src, dst)
	if errors.Is(err, store.ErrNotEmpty) {
		return fmt.Errorf("%s holds data: %w; copy into a new file or an empty database", describe(to), err)
	} else if err != nil {
		return err
	}
	if !store.IsURL(to) {
		if err := writeKeyFile(to+".key", key); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Copied %s into %s in %v:\n", describe(from), describe(to), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "  %s\n", countText(counts))
	if store.IsURL(to) {
		src := "the master key"
		if keyFile != "" {
			src = "the key in " + keyFile
		}
		fmt.Fprintf(stdout, "Run every replica with --database-url and LATCHKEY_MASTER_KEY set to %s (the same on each).\n", src)
	} else {
		fmt.Fprintf(stdout, "The master key is in %s.key: start latchkey serve --data %s.\n", to, to)
	}
	return nil
}

// describe names a store for messages: a file's path, or a URL without
// its password.
func describe(dsn string) string {
	if store.IsURL(dsn) {
		return redactURL(dsn)
	}
	return dsn
}

// checkKeyFile refuses a key file that exists and holds another key.
func checkKeyFile(file string, key []byte) error {
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	other, _, err := store.LoadMasterKey("", file)
	if err != nil {
		return fmt.Errorf("key file %s: %w", file, err)
	}
	if string(other) != string(key) {
		return fmt.Errorf("key file %s holds another master key than the one given: remove that file, or choose another target file", file)
	}
	return nil
}

// writeKeyFile writes key to file (0600) unless it is there already.
func writeKeyFile(file string, key []byte) error {
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	return store.WriteSecretFile(file, base64.StdEncoding.EncodeToString(key)+"\n")
}

// countText lists the records copied by kind: "Project: 1, User: 3, ...".
func countText(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s: %d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "nothing (the source is empty)"
	}
	return strings.Join(parts, ", ")
}

// runCompact is `latchkey compact --data FILE --out FILE`: it writes a
// compacted copy of the data file of a stopped server (bolt.Compact)
// and prints both sizes. Exit codes: 0 done, 1 refused or failed, 2 bad
// usage.
func runCompact(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("latchkey compact", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	data := fs.String("data", os.Getenv("LATCHKEY_DATA"), "")
	out := fs.String("out", "", "")
	help := func(w io.Writer) {
		fmt.Fprint(w, `Usage: latchkey compact --data FILE --out FILE

Write a compacted copy of the data file to a new file: every row, in pages
filled completely, without the free pages the file keeps once it has grown.
Stop the server first; a file in use is refused. The copy is read with the
same master key: move it over the data file (FILE.key stays valid), or copy
FILE.key to OUT.key.

Flags:
  --data FILE   the data file (env LATCHKEY_DATA; default ./latchkey.db)
  --out FILE    the new file (must not exist)
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "latchkey compact: %v\n", cli.FlagError(err))
		help(stderr)
		return 2
	}
	if *data == "" {
		*data = "./latchkey.db"
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "latchkey compact: --out FILE is required (and nothing else)")
		help(stderr)
		return 2
	}
	start := time.Now()
	before, after, err := bolt.Compact(*data, *out, time.Second)
	if errors.Is(err, store.ErrInUse) {
		fmt.Fprintf(stderr, "latchkey compact: %s: %v: stop the server first\n", *data, err)
		return 1
	} else if err != nil {
		fmt.Fprintf(stderr, "latchkey compact: %s\n", oneLine(err))
		return 1
	}
	fmt.Fprintf(stdout, "Compacted %s (%s) into %s (%s, %.1f%% of it) in %v.\n", *data, sizeText(before), *out, sizeText(after),
		100*float64(after)/float64(max(before, 1)), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "The copy needs the same master key: move it over %s, or copy %s.key to %s.key.\n", *data, *data, *out)
	return 0
}

// sizeText writes n bytes for people: "1.46 GB", "812 KB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
