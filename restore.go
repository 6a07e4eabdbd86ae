package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"latchkey/internal/cli"
	"latchkey/internal/offsite"
	"latchkey/store"
	"latchkey/store/bolt"
)

// runRestore is `latchkey restore --from s3://... [--name NAME] --data
// NEW_FILE`: it fetches the newest backup (or the one named) from the
// bucket into a new data file, after checking that it is a latchkey data
// file written under the master key given; --list lists the backups.
// Exit codes: 0 done, 1 refused or failed, 2 bad usage.
func runRestore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("latchkey restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", getenv("LATCHKEY_BACKUP_TO"), "")
	name := fs.String("name", "", "")
	list := fs.Bool("list", false, "")
	data := fs.String("data", "", "")
	masterKey := fs.String("master-key", getenv("LATCHKEY_MASTER_KEY"), "")
	help := func(w io.Writer) {
		fmt.Fprint(w, `Usage: latchkey restore --from s3://bucket/prefix?... [--name NAME] --data NEW_FILE
       latchkey restore --from s3://bucket/prefix?... --list

Fetch an off-site backup (latchkey serve --backup-to) into a new data file:
the newest, or the one --name gives. The file is downloaded beside
NEW_FILE, checked (a latchkey data file, written under the master key
given) and only then moved into place; a file that is not latchkey's, or
that another master key wrote, is refused and nothing is left behind. An
existing NEW_FILE is never overwritten. Credentials come from
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.

Flags:
  --from URL         the bucket and prefix, as --backup-to takes them (env
                     LATCHKEY_BACKUP_TO)
  --name NAME        the backup to fetch (latchkey-20260301T120000Z.db);
                     default: the newest
  --list             list the backups, newest first, and fetch nothing
  --data NEW_FILE    the data file to create (must not exist)
  --master-key KEY   the master key the server used (env
                     LATCHKEY_MASTER_KEY); default: the key file
                     NEW_FILE.key, put there beforehand
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "latchkey restore: %v\n", cli.FlagError(err))
		help(stderr)
		return 2
	}
	if *from == "" || fs.NArg() > 0 || (*data == "") != *list || (*list && *name != "") {
		fmt.Fprintln(stderr, "latchkey restore: --from and --data are required (or --from and --list), and nothing else")
		help(stderr)
		return 2
	}
	var err error
	if *list {
		err = listBackups(ctx, *from, getenv, stdout)
	} else {
		keyFrom := "--master-key"
		if !flagSet(fs, "master-key") && *masterKey != "" {
			keyFrom = "LATCHKEY_MASTER_KEY"
		}
		err = restore(ctx, *from, *name, *data, *masterKey, keyFrom, getenv, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "latchkey restore: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// dialBackups opens the bucket an s3:// URL names, with the credentials
// of the environment.
func dialBackups(from string, getenv func(string) string) (*offsite.Bucket, error) {
	t, err := offsite.ParseURL(from)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	cred, err := offsite.CredentialsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	// Three tries: a command run by hand fails soon rather than waiting
	// out ten.
	return offsite.Dial(t, cred, offsite.Options{MaxRetries: 3})
}

// listBackups prints the backups under from, newest first.
func listBackups(ctx context.Context, from string, getenv func(string) string, stdout io.Writer) error {
	b, err := dialBackups(from, getenv)
	if err != nil {
		return err
	}
	list, err := b.List(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "No backups under %s.\n", b.Target())
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTAKEN\tSIZE")
	for _, o := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Name, o.Time.Format(time.RFC3339), sizeText(o.Size))
	}
	return tw.Flush()
}

// restore fetches the backup name (default: the newest) under from into
// the new data file target (see runRestore).
func restore(ctx context.Context, from, name, target, masterKey, masterKeyFrom string, getenv func(string) string, stdout io.Writer) (err error) {
	start := time.Now()
	if store.IsURL(target) {
		return errors.New("--data must name a file: a backup restores into a data file (latchkey copy moves it into a database afterwards)")
	}
	if _, ok := offsite.NameTime(name); name != "" && !ok {
		shown := fmt.Sprintf("%.64q", name)
		if utf8.RuneCountInString(name) > 64 {
			shown += "…"
		}
		return fmt.Errorf("--name %s is not a backup's name (latchkey-YYYYMMDDTHHMMSSZ.db; --list lists them)", shown)
	}
	if _, err := os.Lstat(target); err == nil {
		return fmt.Errorf("%s exists: restore into a new file (restore never overwrites one)", target)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--data: %w", err)
	}
	// The key first: without it the download could not be checked.
	keyFile, keyFrom := "", masterKeyFrom
	if masterKey == "" {
		keyFile, keyFrom = target+".key", target+".key"
		if _, err := os.Stat(keyFile); err != nil {
			return fmt.Errorf("the master key the server used is needed to check the backup: set --master-key (or LATCHKEY_MASTER_KEY), or put its key file at %s", keyFile)
		}
	} else if err := checkKeyFileFor(target+".key", masterKey); err != nil {
		return err
	}
	key, _, err := store.LoadMasterKey(masterKey, keyFile)
	if err != nil {
		return fmt.Errorf("master key (%s): %w", keyFrom, err)
	}
	keys, err := store.NewKeyring(key)
	if err != nil {
		return err
	}
	b, err := dialBackups(from, getenv)
	if err != nil {
		return err
	}
	if name == "" {
		list, err := b.List(ctx)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("no backups under %s (latchkey-YYYYMMDDTHHMMSSZ.db)", b.Target())
		}
		name = list[0].Name
	}
	src := b.Target().String() + name

	// Download beside the target (same file system: the move is a
	// rename), removed again unless it is moved into place.
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".restore-*")
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	tmpName := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
		}
		if tmpName != "" {
			os.Remove(tmpName)
		}
	}()
	n, err := b.Download(ctx, name, tmp)
	if errors.Is(err, offsite.ErrNoBackup) {
		return fmt.Errorf("no backup named %s under %s (--list lists them)", name, b.Target())
	} else if err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	tmp = nil
	if err := checkRestored(ctx, tmpName, src, keys, keyFrom); err != nil {
		return err
	}
	if err := moveNew(tmpName, target); err != nil {
		return err
	}
	tmpName = ""
	taken := ""
	if t, ok := offsite.NameTime(name); ok {
		taken = ", taken " + t.Format(time.RFC3339)
	}
	fmt.Fprintf(stdout, "Restored %s (%s%s) into %s in %v.\n", src, sizeText(n), taken, target, time.Since(start).Round(time.Millisecond))
	if keyFile != "" {
		fmt.Fprintf(stdout, "Start it with latchkey serve --data %s: the master key is in %s.\n", target, keyFile)
	} else {
		fmt.Fprintf(stdout, "Start it with latchkey serve --data %s and the same master key (LATCHKEY_MASTER_KEY, or write it to %s.key).\n", target, target)
	}
	fmt.Fprintln(stdout, "The admin token is the one the server had; its file (<data>.admin-token) is not in a backup.")
	return nil
}

// checkKeyFileFor refuses a key file beside the target that holds
// another key than the one given (base64), which serve would read.
func checkKeyFileFor(file, masterKey string) error {
	key, _, err := store.LoadMasterKey(masterKey, "")
	if err != nil {
		return fmt.Errorf("--master-key: %w", err)
	}
	return checkKeyFile(file, key)
}

// checkRestored checks the downloaded file at path (src names it in
// messages): a latchkey data file that bbolt opens, whose pages are all
// there, holding latchkey's data written under keys.
func checkRestored(ctx context.Context, path, src string, keys *store.Keyring, keyFrom string) error {
	notOurs := func(why string) error {
		return fmt.Errorf("%s is not a latchkey data file%s: nothing restored", src, why)
	}
	fresh, err := bolt.CheckFile(path, time.Second)
	switch {
	case fresh:
		return notOurs(" (it is empty)")
	case errors.Is(err, bolt.ErrNotLatchkey):
		return notOurs("")
	case err != nil:
		// Truncated, damaged, or of a newer latchkey.
		return fmt.Errorf("%s: %s: nothing restored", src, strings.ReplaceAll(err.Error(), "data file "+path, "the backup"))
	}
	db, _, err := store.Open(ctx, path, store.Options{LockTimeout: time.Second})
	if err != nil {
		return fmt.Errorf("%s: %s: nothing restored", src, strings.ReplaceAll(err.Error(), path, "the backup"))
	}
	err = checkKeyCheck(ctx, db, keys)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%v: nothing restored", cerr)
	}
	switch {
	case errors.Is(err, errNoKeyCheck):
		return notOurs(" (it holds no latchkey data)")
	case errors.Is(err, store.ErrWrongMasterKey):
		return fmt.Errorf("%s was written under another master key than %s's: nothing restored (give the key the server used)", src, keyFrom)
	case err != nil:
		return fmt.Errorf("%s: %v: nothing restored", src, err)
	}
	return nil
}

// errNoKeyCheck: the store holds no master-key check value, which every
// server writes at its start: it holds no latchkey data.
var errNoKeyCheck = errors.New("no master key check")

// checkKeyCheck returns nil when db holds the check value of keys,
// store.ErrWrongMasterKey when it holds another's, errNoKeyCheck when
// none.
func checkKeyCheck(ctx context.Context, db store.DB, keys *store.Keyring) error {
	var check []byte
	if err := db.View(ctx, func(tx store.Tx) (err error) {
		check, err = tx.MasterKeyCheck()
		return err
	}); err != nil {
		return err
	}
	if check == nil {
		return errNoKeyCheck
	}
	return store.VerifyKeyring(ctx, db, keys)
}

// moveNew moves the file at from to to, which must not exist: a hard
// link (which fails if to appeared meanwhile) and the removal of from,
// or a rename where the file system has no hard links. The directory is
// synced so the new name survives a crash.
func moveNew(from, to string) error {
	if err := os.Link(from, to); err != nil {
		if _, serr := os.Lstat(to); serr == nil {
			return fmt.Errorf("%s exists: restore into a new file (restore never overwrites one)", to)
		}
		if err := os.Rename(from, to); err != nil {
			return err
		}
	} else if err := os.Remove(from); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(to)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
