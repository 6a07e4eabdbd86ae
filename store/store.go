// Package store holds latchkey's state: projects, API keys, users, codes,
// sessions, factors, passkeys, sign-ins with providers in flight,
// webhooks, the event outbox and the mail queue.
//
// Callers see two interfaces, DB and Tx (tx.go), and the record types
// (User, Session, Project...). One use case is one transaction: DB.View,
// DB.Update or DB.Batch hands its function a Tx with typed methods. The
// interfaces are what every backend implements: their doc
// comments say what each method does, in what order it returns rows and
// what it returns when nothing matches, so that a second backend can be
// written from them alone.
//
// A backend registers itself with Register, the way a database/sql
// driver does, and Open picks one by the DSN: a postgres:// or
// postgresql:// URL opens the "postgres" driver (package
// latchkey/store/postgres), anything else is the path of a data file,
// opened by the "bolt" driver (package latchkey/store/bolt, on bbolt).
// Each registers itself when imported: main imports both. This package
// holds no backend: the records, the interfaces, their errors and
// Options, Register and Open, the Keyring, Copy between backends
// (Mover, move.go) and the small types both backends share. What only a
// data file can do (Check, Space, WriteTo...) is reached through the
// File interface; checking and compacting a file by its path are
// package bolt's CheckFile and Compact.
//
// The json tags of the record types name the fields of the bbolt
// backend's JSON rows, and Provider's those of PostgreSQL's providers
// column: renaming one changes a stored format.
//
// Secrets never reach the store in the clear: auth hands it keyed hashes
// (Keyring.Hash) and AES-GCM ciphertexts (Keyring.Seal). The store
// imports nothing of latchkey's own.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Errors of every backend. Callers test them with errors.Is: a backend
// may wrap them with detail.
var (
	// ErrNotFound is returned by lookups of one row that find nothing,
	// and by DeleteProject for an unknown project. Methods that list
	// rows return an empty result instead; methods that delete rows
	// return nil for a row that is already gone.
	ErrNotFound = errors.New("not found")

	// ErrConflict is returned when a unique index already holds another
	// owner (PutUser: the project's email or external id).
	ErrConflict = errors.New("conflict")

	// ErrInUse is returned by Open when another process holds the data
	// file.
	ErrInUse = errors.New("data file is in use by another process")

	// ErrClosed is returned by View, Update and Batch after Close.
	ErrClosed = errors.New("store: closed")

	// ErrNotSupported is returned by an operation the backend does not
	// have: Backup on PostgreSQL (use pg_dump).
	ErrNotSupported = errors.New("store: not supported by this backend")

	// ErrWriteFailed is wrapped around the error of a write transaction
	// whose commit failed for a reason of the store's own, not the
	// transaction function's: the disk is full (ENOSPC), the device fails
	// (EIO), the file cannot grow. Nothing of the transaction was written;
	// the same write may succeed later. errors.Is finds the cause too.
	ErrWriteFailed = errors.New("store: write failed")

	// ErrUnavailable is wrapped around the error of a call that could
	// not reach the database (PostgreSQL down, unreachable, or out of
	// connections): nothing was written, and the same call may succeed
	// later. Callers answer it as they answer ErrWriteFailed (503).
	ErrUnavailable = errors.New("store: database unavailable")
)

// WriteFailed reports whether err is (or wraps) ErrWriteFailed: a write
// the store could not commit, which it logs itself once a minute.
func WriteFailed(err error) bool { return errors.Is(err, ErrWriteFailed) }

// DB is an open store. Every implementation is safe for concurrent use.
//
// A transaction function (View, Update, Batch) gets a Tx that is valid
// only until the function returns and is not safe for concurrent use.
// Its error is returned as is (unwrapped), so callers may return their
// own errors from it and test them after.
//
// A function passed to Update or Batch may run more than once: Batch
// shares a transaction with other callers and reruns a function on its
// own when another in the same transaction failed, and a backend with
// optimistic concurrency (PostgreSQL's SERIALIZABLE) reruns a function
// whose transaction lost a conflict. So a function's every effect stays
// inside the Tx: it may set variables of its caller only by assignments
// that a rerun repeats (reset them at its start), and anything that must
// happen once, after the data is durable (waking a worker, counting a
// metric), goes in Tx.OnCommit.
//
// Update and Batch are serializable: their functions behave as if no
// other write transaction ran at the same time, so a read-modify-write
// inside one (counting a failed try, consuming a code) never loses an
// update. A View sees one consistent snapshot of committed data.
type DB interface {
	// View runs fn in a read-only transaction. A write method called in
	// it returns an error. It returns fn's error, or the store's (then
	// fn may not have run), ErrClosed after Close.
	View(ctx context.Context, fn func(Tx) error) error

	// Update runs fn in a read-write transaction and commits it when fn
	// returns nil, durably (fsync on bbolt; a synchronous commit on
	// PostgreSQL) before it returns; the functions fn registered with
	// Tx.OnCommit then run. When fn returns an error nothing fn wrote is
	// kept and the error is returned as is. When the transaction cannot
	// begin or commit for a reason of the store's own (disk full, I/O
	// error) the error wraps ErrWriteFailed; when the database cannot be
	// reached, ErrUnavailable. fn may run more than once (see DB).
	// When ctx is done before the transaction begins, Update returns
	// ctx's error and writes nothing.
	Update(ctx context.Context, fn func(Tx) error) error

	// Batch is Update for many concurrent small writers: fn may share one
	// transaction and one commit with other Batch calls (group commit).
	// When fn fails, it is rerun alone so that its error is its own, and
	// the others commit without it: fn must have no effect outside tx
	// (see DB). It returns once the commit holding fn is durable, with
	// Update's errors.
	Batch(ctx context.Context, fn func(Tx) error) error

	// SessionState returns what the session check needs of session id
	// (SessionState), as Tx.SessionEnrolled in a View would read it, or
	// ErrNotFound when no session row has id (expired rows are found:
	// the sweep deletes them). It is the check of every call with a
	// user's token and the answer of GET /session, so a backend answers
	// it from memory for a session it knows, without a transaction and
	// without a lock that every session shares. A change committed by
	// this process shows once its commit returns: the session row
	// deleted or rewritten (PutSession of an existing session: a
	// step-up's proof), a TOTP or SMS factor of its user written or
	// deleted. One committed by another process sharing the store shows
	// once its invalidation feed tells (Watch). The state returned is
	// shared with the store's cache and with other callers: read it,
	// never change it.
	SessionState(ctx context.Context, id string) (*SessionState, error)

	// Close stops the store's own goroutines (Batch calls already
	// queued are committed first) and releases the file or the
	// connections. Calls after Close return ErrClosed.
	Close() error

	// Usable returns nil when the store can serve reads and writes now,
	// else why not in words safe to show an operator (readiness probes:
	// GET /api/v1/ready). It writes nothing and is cheap enough to call
	// for every probe: a backend may answer from what its recent calls
	// saw rather than with a round trip.
	Usable(ctx context.Context) error

	// Stats reads the sizes of the queues and of the store (metrics, at
	// scrape time; not for every request).
	Stats(ctx context.Context) (Stats, error)

	// Backup writes a consistent copy of the whole store to w without
	// blocking writers (a hot backup) and returns the bytes written,
	// calling before with the copy's size first (for a Content-Length).
	// A backend that cannot (PostgreSQL: pg_dump is the tool) returns
	// ErrNotSupported without calling before or writing to w.
	Backup(ctx context.Context, w io.Writer, before func(size int64)) (int64, error)

	// Dashboard keeps the operator dashboard's sessions.
	Dashboard

	// Mover streams the store's records out and into an empty store
	// (latchkey copy; move.go).
	Mover

	// Watch registers fn to be told of the changes other processes
	// sharing the store commit (replicas on one PostgreSQL database), so
	// that copies cached outside the store follow them: a backend with
	// an invalidation feed (PostgreSQL) reads it every
	// Options.FeedInterval and calls fn for each change, in commit order
	// as far as the feed can tell, this process's own changes included
	// (its callers drop their copies at once after their commit; the
	// feed tells them again). When the feed cannot be read for longer
	// than Options.FeedStaleAfter, fn is told ChangeStale, then
	// ChangeFresh once it can. fn runs on the feed's goroutine, one call
	// at a time: it must be quick and must not call the store. cancel
	// stops the calls (after cancel returns, fn is not called again). A
	// bbolt file, which one process owns, never calls fn.
	Watch(fn func(Change)) (cancel func())

	// Lease acquires or renews the lease name for holder, for ttl from
	// now by the database's clock, and reports whether holder holds it:
	// it does when nobody held it, when the holder's lease ran out, or
	// when holder already held it (renewed). It is one conditional
	// write, atomic among every process sharing the store, so at most
	// one holder holds a name at any time. A ttl of 0 or less releases
	// the lease if holder holds it (another may take it at once) and
	// reports false. Background tasks that must run on one replica at a
	// time run while their replica holds their lease. A bbolt file,
	// which one process owns, holds every lease.
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, err error)
}

// File is implemented by the DB of a bbolt data file (Open with a path;
// package latchkey/store/bolt): what only a single file has. Reach it with a type assertion:
//
//	if f, ok := db.(store.File); ok { ... }
type File interface {
	// Path returns the data file's path.
	Path() string
	// Check verifies the file's page structure and its indexes (every
	// expiring row and its expiry index entry, every authentication
	// event and its index entry and count); tests call it after each
	// run. It reads the whole file.
	Check() error
	// Space reports how the file's pages are used, as of the last write
	// transaction. It reads no page.
	Space() Space
	// WriteTo writes a consistent copy of the file to w (Backup without
	// the size first).
	WriteTo(w io.Writer) (int64, error)
	// WriteError returns the error of the last write transaction while
	// it failed and none has succeeded since, else nil.
	WriteError() error
	// CommitID returns the id of the newest committed write transaction:
	// it grows by one with every commit, so a test can tell whether a
	// call wrote.
	CommitID() int
}

// Options tune Open. The zero value is fine. Fields that do not apply to
// a backend are ignored by it.
type Options struct {
	// LockTimeout bounds the wait for another process's file lock
	// (bbolt; default 2 s).
	LockTimeout time.Duration
	// ObserveCommit, when set, is told how long each commit of a
	// read-write transaction took: writing the pages, the fsyncs and the
	// OnCommit functions, not the transaction's own function. It runs
	// on the committing goroutine with the writer lock held: it must be
	// quick.
	ObserveCommit func(time.Duration)
	// ObserveBatch, when set, is told for each Batch call how long it
	// took from the call until the commit that held its function was
	// done (durable: its wait for the committer, behind other
	// transactions, and that commit), and until the caller ran again
	// (answered: durable plus the wait for a CPU). It runs on the
	// caller's goroutine, after the call.
	ObserveBatch func(durable, answered time.Duration)
	// ObserveRoundTrip, when set, is told of each round trip to a
	// database server (PostgreSQL) with the number of statements it
	// carried (more than one for a batch), for benchmarks that count
	// them. It runs on the calling goroutine: it must be quick. A bbolt
	// file has no round trips.
	ObserveRoundTrip func(statements int)
	// MaxEventsPerProject caps the authentication events a project keeps
	// (default DefaultMaxEventsPerProject); tests lower it.
	MaxEventsPerProject int
	// Logger receives what Open does that takes long (upgrading an older
	// file or schema) and the store's write failures (default:
	// discarded).
	Logger *slog.Logger
	// Now is the clock of the write-failure log's interval (default
	// time.Now).
	Now func() time.Time
	// FeedInterval is how often a replica reads the invalidation feed
	// (PostgreSQL; default DefaultFeedInterval, 250 ms); tests and
	// tuning shorten or lengthen it.
	FeedInterval time.Duration
	// FeedStaleAfter is how long the feed may go unread before cached
	// copies stop being trusted (ChangeStale; PostgreSQL; default
	// DefaultFeedStaleAfter, 1 s, and at least four FeedIntervals).
	FeedStaleAfter time.Duration
}

// Driver opens a store for a DSN: it connects, brings the schema up to
// date and returns the DB. created reports that the store held no
// latchkey data before (a new file, an empty database): the first
// start. An unreachable database is an error naming it, wrapping
// ErrUnavailable. ctx bounds the opening only: the DB lives until Close.
type Driver func(ctx context.Context, dsn string, opt Options) (db DB, created bool, err error)

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// Register makes a driver available to Open under name. A backend calls
// it from its package's init. It panics when name is registered twice or
// d is nil.
func Register(name string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d == nil {
		panic("store: Register driver is nil")
	}
	if _, dup := drivers[name]; dup {
		panic("store: Register called twice for driver " + name)
	}
	drivers[name] = d
}

// driverName returns the name of the driver Open uses for dsn: "postgres"
// for a postgres:// or postgresql:// URL, else "bolt" (dsn is the path of
// a data file).
func driverName(dsn string) string {
	if IsURL(dsn) {
		return "postgres"
	}
	return "bolt"
}

// IsURL reports whether dsn is a database URL (postgres:// or
// postgresql://) rather than the path of a data file.
func IsURL(dsn string) bool {
	l := strings.ToLower(dsn)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Open opens the store dsn names with the driver its form picks (see
// IsURL). A path is a bbolt data file, created when missing (call
// bolt.CheckFile first: see there). created reports that the store held
// no latchkey data before. A DSN whose driver is not registered (its
// package not imported) is an error naming the package to import.
func Open(ctx context.Context, dsn string, opt Options) (db DB, created bool, err error) {
	name := driverName(dsn)
	driversMu.RLock()
	d := drivers[name]
	driversMu.RUnlock()
	if d == nil {
		return nil, false, fmt.Errorf("store: no %q driver is registered (import latchkey/store/%s)", name, name)
	}
	return d(ctx, dsn, opt)
}

// ErrWrongMasterKey is returned by CheckKeyring when the store was
// written under another master key.
var ErrWrongMasterKey = errors.New("the master key does not match this data file: use the key it was created with (the <data>.key file or LATCHKEY_MASTER_KEY)")

// VerifyKeyring is CheckKeyring without its write: it returns
// ErrWrongMasterKey when db holds the check value of another key, and nil
// when it holds k's or none (latchkey copy reads a source with it).
func VerifyKeyring(ctx context.Context, db DB, k *Keyring) error {
	check := k.HashString("master-key-check", "latchkey")
	var stored []byte
	err := db.View(ctx, func(tx Tx) (err error) {
		stored, err = tx.MasterKeyCheck()
		return err
	})
	if err == nil && stored != nil && !Equal(stored, check[:]) {
		err = ErrWrongMasterKey
	}
	return err
}

// CheckKeyring makes sure k is the keyring db was written with: the first
// call stores a keyed check value (Tx.SetMasterKeyCheck), later calls
// compare against it. A mismatch is ErrWrongMasterKey, so a lost or
// swapped key fails at start instead of as HASH_MISMATCH on every call.
func CheckKeyring(ctx context.Context, db DB, k *Keyring) error {
	check := k.HashString("master-key-check", "latchkey")
	var stored []byte
	err := db.View(ctx, func(tx Tx) (err error) {
		stored, err = tx.MasterKeyCheck()
		return err
	})
	if err != nil || stored != nil {
		if err == nil && !Equal(stored, check[:]) {
			err = ErrWrongMasterKey
		}
		return err
	}
	return db.Update(ctx, func(tx Tx) error {
		stored, err := tx.MasterKeyCheck()
		switch {
		case err != nil:
			return err
		case stored == nil:
			return tx.SetMasterKeyCheck(check[:])
		case !Equal(stored, check[:]):
			return ErrWrongMasterKey
		}
		return nil
	})
}
