// Package bolt is latchkey's default backend: the store.DB and store.Tx
// contract (package store's doc comments) on one data file through
// go.etcd.io/bbolt, owned by one latchkey process.
//
// Importing the package registers the "bolt" driver, which store.Open
// uses for a DSN that is not a database URL: the path of a data file.
// What only a file can do is reached through store.File (Check, Space,
// WriteTo...), and through this package's CheckFile and Compact, which
// take a path.
//
// Values are JSON (the hot records and the authentication events, the
// bulkiest rows, a compact binary record: codec.go, records.go,
// authevent_codec.go); keys are UUIDs, big-endian sequence numbers or
// keyed hashes, never raw secrets. The file holds one bucket per kind
// of row and one per index (bolt.go), among them an expiry index per
// expiring kind (expiry.go) and the authentication events' index and
// counters (authevent.go, eventcount.go). A file of an older
// SchemaVersion is upgraded at Open (migrate.go). Batch calls share
// commits (batch.go); SessionState answers from a cache
// (sessioncache.go); Export and Import carry a copy (move.go).
package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"latchkey/store"
)

func init() { store.Register("bolt", Open) }

// SchemaVersion is the version of the data layout this binary writes.
// Opening a file with a newer version fails; an older one is migrated.
// Version 2 indexes and counts authentication events; version 3 indexes
// every expiring row by its expiry; version 4 keeps pending codes apart
// from the send histories (codeKey); version 5 keeps sign-ins with
// providers in flight apart from the WebAuthn challenges
// (bucketOAuthFlows); version 6 indexes the OpenID grants by session
// (bucketOIDCSessionGrants); version 7 writes refresh tokens in the
// compact encoding (encodeRefresh), which a version 6 binary cannot read,
// so it must refuse the file.
const SchemaVersion = 7

// Bucket names. Open creates them all in one transaction.
var (
	bucketMeta         = []byte("meta")
	bucketProjects     = []byte("projects")
	bucketKeys         = []byte("keys")
	bucketUsers        = []byte("users")
	bucketUsersByEmail = []byte("users_by_email")
	bucketUsersByExt   = []byte("users_by_external_id")
	bucketSessions     = []byte("sessions")
	bucketUserSessions = []byte("sessions_by_user")
	bucketRefresh      = []byte("refresh_tokens") // by (session id, hash): refresh.go
	bucketCodes        = []byte("codes")
	bucketThrottles    = bucketCodes // send histories share the codes' bucket and expiry index
	bucketMagic        = []byte("magic_links")
	bucketDevices      = []byte("devices")
	bucketFactors      = []byte("factors")
	bucketBackupCodes  = []byte("backup_codes")
	bucketPasskeys     = []byte("passkeys")
	bucketChallenges   = []byte("challenges")
	bucketWebhooks     = []byte("webhooks")
	bucketDeliveries   = []byte("deliveries")
	bucketOutbox       = []byte("outbox")
	bucketEvents       = []byte("events")
	bucketMethods      = []byte("external_methods")
	bucketGrants       = []byte("grants")
	bucketMail         = []byte("mail")
	bucketJobs         = []byte("delivery_queue")
	bucketUserPasskeys = []byte("passkeys_by_user")
	bucketTemplates    = []byte("mail_templates")
	// Sign-in provider links (identity.go): by (project, issuer,
	// subject), and listed under their user.
	bucketIdentities     = []byte("identities")
	bucketUserIdentities = []byte("identities_by_user")
	// Sign-ins with providers in flight (oauthflow.go).
	bucketOAuthFlows = []byte("oauth_flows")
	// The projects' OpenID providers (oidc.go): signing keys by
	// (project, kid), clients by (project, id).
	bucketOIDCKeys    = []byte("oidc_keys")
	bucketOIDCClients = []byte("oidc_clients")
	// Their authorization code flow (oidcflow.go): authorization
	// requests and grants, by (project, id).
	bucketOIDCAuthRequests = []byte("oidc_auth_requests")
	bucketOIDCGrants       = []byte("oidc_grants")
	// The grants by session: (project, session, grant id), no value.
	bucketOIDCSessionGrants = []byte("oidc_grants_by_session")
	// Their tokens (oidctoken.go): refresh tokens by (project, keyed
	// hash), revoked access tokens by (project, jti).
	bucketOIDCRefresh = []byte("oidc_refresh_tokens")
	bucketOIDCRevoked = []byte("oidc_revoked_tokens")
	// The cache of automatic HTTPS: tlscache.go.
	bucketTLSCache = []byte("tls_cache")
	// Their grants by user (oidcflow.go): (project, user, grant id).
	bucketOIDCUserGrants = []byte("oidc_grants_by_user")
	// The users' consents (oidcconsent.go): by (project, user, client),
	// and listed under their client (project, client, user).
	bucketOIDCConsents       = []byte("oidc_consents")
	bucketOIDCClientConsents = []byte("oidc_consents_by_client")
	// Their device authorizations (oidcdevice.go): by (project, keyed
	// hash of the device code), and the index of their user codes.
	bucketOIDCDevices     = []byte("oidc_device_auths")
	bucketOIDCDeviceCodes = []byte("oidc_device_auths_by_user_code")
	// The grants by client (oidcflow.go): (project, client, grant id).
	bucketOIDCClientGrants = []byte("oidc_grants_by_client")
	// Authentication events: their index, hourly counters and suppressed
	// failures (authevent.go, eventcount.go).
	bucketEventIndex      = []byte("events_by_scope")
	bucketEventCounts     = []byte("event_counts")
	bucketEventSuppressed = []byte("events_suppressed")
	// Expiry indexes: rows by the time the sweep deletes them
	// (expiry.go).
	bucketSessionsExpiry    = []byte("sessions_by_expiry")
	bucketCodesExpiry       = []byte("codes_by_expiry")
	bucketMagicExpiry       = []byte("magic_links_by_expiry")
	bucketChallengesExpiry  = []byte("challenges_by_expiry")
	bucketGrantsExpiry      = []byte("grants_by_expiry")
	bucketDevicesExpiry     = []byte("devices_by_expiry")
	bucketDeliveriesExpiry  = []byte("deliveries_by_expiry")
	bucketOAuthFlowsExpiry  = []byte("oauth_flows_by_expiry")
	bucketRefreshExpiry     = []byte("refresh_tokens_by_expiry")
	bucketOIDCAuthExpiry    = []byte("oidc_auth_requests_by_expiry")
	bucketOIDCGrantsExpiry  = []byte("oidc_grants_by_expiry")
	bucketOIDCRefreshExpiry = []byte("oidc_refresh_tokens_by_expiry")
	bucketOIDCRevokedExpiry = []byte("oidc_revoked_tokens_by_expiry")
	bucketOIDCDevicesExpiry = []byte("oidc_device_auths_by_expiry")

	allBuckets = [][]byte{
		bucketMeta, bucketProjects, bucketKeys, bucketUsers, bucketUsersByEmail,
		bucketUsersByExt, bucketSessions, bucketUserSessions, bucketCodes,
		bucketMagic, bucketDevices, bucketFactors,
		bucketBackupCodes, bucketPasskeys, bucketChallenges, bucketWebhooks,
		bucketDeliveries, bucketOutbox, bucketEvents, bucketMethods, bucketGrants,
		bucketMail, bucketJobs, bucketUserPasskeys, bucketTemplates,
		bucketIdentities, bucketUserIdentities, bucketOAuthFlows, bucketOIDCKeys, bucketOIDCClients, bucketRefresh,
		bucketOIDCAuthRequests, bucketOIDCGrants, bucketOIDCSessionGrants, bucketOIDCRefresh, bucketOIDCRevoked, bucketTLSCache,
		bucketOIDCUserGrants, bucketOIDCConsents, bucketOIDCClientConsents,
		bucketOIDCDevices, bucketOIDCDeviceCodes, bucketOIDCClientGrants,
		bucketEventIndex, bucketEventCounts, bucketEventSuppressed,
		bucketSessionsExpiry, bucketCodesExpiry, bucketMagicExpiry, bucketChallengesExpiry,
		bucketGrantsExpiry, bucketDevicesExpiry, bucketDeliveriesExpiry, bucketOAuthFlowsExpiry, bucketRefreshExpiry,
		bucketOIDCAuthExpiry, bucketOIDCGrantsExpiry, bucketOIDCRefreshExpiry, bucketOIDCRevokedExpiry, bucketOIDCDevicesExpiry,
	}

	keySchema      = []byte("schema_version")
	keyAdminToken  = []byte("admin_token_hash")
	keyInitialized = []byte("initialized")
	keyKeyCheck    = []byte("master_key_check")
)

// DB is an open data file. It is safe for concurrent use.
type DB struct {
	bolt       *bbolt.DB
	path       string
	group      groupCommit
	health     writeHealth
	maxEvents  int
	observe    func(time.Duration)                   // Options.ObserveCommit
	batchWait  func(durable, answered time.Duration) // Options.ObserveBatch
	sessions   *sessionCache                         // SessionState's cache (sessioncache.go)
	closed     atomic.Bool                           // Close was called
	dashMemory                                       // the dashboard's sessions (Dashboard), in memory
}

// Compile-time checks: the bbolt types implement the interfaces.
var (
	_ store.DB   = (*DB)(nil)
	_ store.File = (*DB)(nil)
	_ store.Tx   = txn{}
)

// Open is the "bolt" driver: it opens or creates the data file at path,
// creates every bucket and checks the schema version (a file of an
// older one is upgraded); a file that needs none of that is only read.
// created reports whether the file was new. A bbolt file of another
// program is ErrNotLatchkey, as in CheckFile; it, a newer schema and a
// damaged page are refused before anything is written. Call CheckHeader
// (or CheckFile) first: bbolt crashes the process on a truncated file.
// Opening waits at most opt.LockTimeout for the file's lock
// (store.ErrInUse). ctx is not used.
func Open(_ context.Context, path string, opt store.Options) (store.DB, bool, error) {
	db, created, err := openDB(path, opt)
	if err != nil {
		return nil, false, err
	}
	return db, created, nil
}

// openDB is Open, returning the DB itself.
func openDB(path string, opt store.Options) (db *DB, created bool, err error) {
	if opt.LockTimeout == 0 {
		opt.LockTimeout = 2 * time.Second
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	_, statErr := os.Stat(path)
	created = errors.Is(statErr, os.ErrNotExist)
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: opt.LockTimeout,
		// The freelist is written at every commit (NoFreelistSync false),
		// so that opening reads it instead of walking every page of the
		// file to rebuild it: a 1.3 GB file opened in 20 s with a cold
		// page cache, reading 1.2 GB, and now opens in a few
		// milliseconds. Writing it costs each commit about 0.1 ms with
		// ten thousand free pages; the array type keeps it sorted, which
		// made commits of a fragmented file (140,000 free pages) faster
		// than the hash-map type (0.8 ms against 2 ms). A file last
		// written without a freelist is walked once at its first open.
		NoFreelistSync: false,
		FreelistType:   bbolt.FreelistArrayType,
		// Reserve address space so a growing file rarely remaps: a remap
		// waits for every reader and blocks every transaction while the
		// old mapping is torn down (0.4-0.6 s for a 2 GB file in page
		// cache), and bbolt remaps at every further gigabyte. Four times
		// the file's size (at least 1 GB) is only address space: it costs
		// no memory and the file does not grow to it.
		InitialMmapSize: mmapReserve(path),
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, false, store.ErrInUse
	} else if err != nil {
		return nil, false, fmt.Errorf("open data file: %w", err)
	}
	// A start on a file that needs no change writes nothing: a read
	// transaction checks the file first, and only a new file or one that
	// lacks a bucket (an older version's) takes the write transaction,
	// whose commit costs two fdatasyncs even when it changes nothing.
	version, ready, err := checkOpened(b, path)
	if err == nil && !ready {
		version, err = prepareFile(b, path)
	}
	if err == nil && version < 2 {
		err = migrateEvents(b)
	}
	if err == nil && version < 3 {
		err = migrateExpiry(b, log)
	}
	if err == nil && version < 4 {
		err = migrateCodes(b, log)
	}
	if err == nil && version < 5 {
		err = migrateOAuthFlows(b, log)
	}
	if err == nil && version < 6 {
		err = migrateOIDCSessionGrants(b, log)
	}
	if err == nil && version < 7 {
		err = migrateRefreshEncoding(b, log)
	}
	if err != nil {
		b.Close()
		return nil, false, err
	}
	db = &DB{bolt: b, path: path, maxEvents: maxEventsPerProject(opt), observe: opt.ObserveCommit, batchWait: opt.ObserveBatch,
		sessions: newSessionCache(sessionCacheSize)}
	db.health.log, db.health.now = log, opt.Now
	if db.health.now == nil {
		db.health.now = time.Now
	}
	openFiles.Store(b, db)
	db.startCommitter()
	return db, created, nil
}

// checkOpened reads the opened file without writing: it refuses
// another program's file, a newer schema and a damaged page, and reports
// the file's schema version and whether every bucket is there (ready);
// a file that is not ready needs prepareFile.
func checkOpened(b *bbolt.DB, path string) (version uint64, ready bool, err error) {
	err = b.View(func(tx *bbolt.Tx) (err error) {
		defer func() {
			if r := recover(); r != nil { // a page that is not what its parent says
				err = fmt.Errorf("data file %s is damaged (%v): restore it from a backup", path, r)
			}
		}()
		// Never turn another program's bbolt file into ours.
		if err := checkBuckets(tx, path); err != nil {
			return err
		}
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				return nil
			}
		}
		// checkBuckets made sure the schema version is there and not
		// newer than this binary's.
		version, ready = binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keySchema)), true
		return nil
	})
	return version, ready, err
}

// prepareFile creates the buckets a new file or an older version's
// lacks, in one write transaction, and returns the schema version (this
// binary's for a new file).
func prepareFile(b *bbolt.DB, path string) (version uint64, err error) {
	err = b.Update(func(tx *bbolt.Tx) error {
		if err := checkBuckets(tx, path); err != nil {
			return err
		}
		freshUser, freshClient := tx.Bucket(bucketOIDCUserGrants) == nil, tx.Bucket(bucketOIDCClientGrants) == nil
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := indexGrants(txn{tx}, freshUser, bucketOIDCUserGrants, userGrantKey); err != nil {
			return err
		}
		if err := indexGrants(txn{tx}, freshClient, bucketOIDCClientGrants, clientGrantKey); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		v := meta.Get(keySchema)
		if v == nil {
			version = SchemaVersion
			return meta.Put(keySchema, u64(SchemaVersion))
		}
		version = binary.BigEndian.Uint64(v) // checkBuckets refused a newer one
		return nil
	})
	return version, err
}

// mmapReserve is the address space Open maps for the file at path: four
// times its size, at least 1 GB, at most 1 TB (1 GB where int has 32
// bits).
func mmapReserve(path string) int {
	size := int64(0)
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	limit := int64(1 << 40)
	if strconv.IntSize == 32 {
		limit = 1 << 30
	}
	return int(min(max(4*size, 1<<30), limit))
}

// Path returns the data file's path.
func (db *DB) Path() string { return db.path }

// Close stops the group commit (committing the Batch calls already
// queued; later ones get ErrClosed) and closes the data file.
func (db *DB) Close() error {
	db.closed.Store(true)
	db.stopCommitter()
	openFiles.Delete(db.bolt)
	return db.bolt.Close()
}

// closedErr turns bbolt's error for a closed file into ErrClosed. It
// runs only on the error path.
func closedErr(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// View runs fn in a read-only transaction. ctx is not used: a read
// transaction of bbolt cannot block and is not interrupted.
func (db *DB) View(_ context.Context, fn func(store.Tx) error) error {
	began := false
	err := db.bolt.View(func(btx *bbolt.Tx) error {
		began = true
		return fn(txn{btx})
	})
	if err != nil && !began {
		return closedErr(err)
	}
	return err
}

// Update runs fn in a read-write transaction and commits it (with fsync)
// when fn returns nil. Functions registered with Tx.OnCommit run after.
// It returns fn's error as is; when the transaction cannot begin or
// commit (disk full, I/O error) it returns an error wrapping
// ErrWriteFailed and its cause, and the store notes the failure
// (WriteError, one log line per minute). A ctx already done refuses the
// write before it begins; once begun, the transaction is not
// interrupted.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err, storeErr := db.update(fn)
	if storeErr {
		db.health.failed(err, 1)
		return fmt.Errorf("%w: %w", store.ErrWriteFailed, err)
	}
	return err
}

// update runs fn in a read-write transaction, which commits when fn
// returns nil and rolls back otherwise, or when fn panics; the commit is
// timed for ObserveCommit. storeErr reports that err is the store's (the
// open file could not begin or commit the transaction), not fn's, nor
// that of a file already closed (ErrClosed). A committed transaction
// clears the failed state.
func (db *DB) update(fn func(store.Tx) error) (err error, storeErr bool) {
	btx, err := db.bolt.Begin(true)
	if err != nil {
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			return store.ErrClosed, false
		}
		return err, true
	}
	done := false
	defer func() {
		if !done {
			btx.Rollback()
		}
	}()
	if err := fn(txn{btx}); err != nil {
		return err, false
	}
	start := time.Now()
	done = true // Commit rolls back itself when it fails
	if err := btx.Commit(); err != nil {
		return err, true
	}
	if db.observe != nil {
		db.observe(time.Since(start))
	}
	db.health.succeeded()
	return nil, false
}

// WriteTo writes a consistent copy of the whole data file to w without
// blocking writers (a hot backup).
func (db *DB) WriteTo(w io.Writer) (int64, error) {
	return db.Backup(context.Background(), w, func(int64) {})
}

// Backup is WriteTo that first tells before the copy's size (for a
// Content-Length), from the same transaction. ctx is not used.
func (db *DB) Backup(_ context.Context, w io.Writer, before func(size int64)) (int64, error) {
	var n int64
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		before(tx.Size())
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// Usable returns nil when the data file can serve reads and writes: it
// is open, not read-only, still at its path (a file deleted or moved
// under a running server takes every later write with it), and its last
// write did not fail (WriteError: a full disk, say; the next write that
// succeeds clears it). It writes nothing, so readiness probes may call it
// as often as they like.
func (db *DB) Usable(context.Context) error {
	if db.bolt.IsReadOnly() {
		return errors.New("data file is open read-only")
	}
	if err := db.bolt.View(func(*bbolt.Tx) error { return nil }); err != nil {
		return errors.New("data file is not open")
	}
	if _, err := os.Stat(db.path); err != nil {
		return fmt.Errorf("data file %s is gone", db.path)
	}
	return db.WriteError()
}

// Check verifies the file's page structure, that every expiring row and
// its expiry index entry go together, and that the authentication
// events, their index and their counts agree; tests call it after each
// run. It reads the whole file.
func (db *DB) Check() error {
	return db.bolt.View(func(btx *bbolt.Tx) error {
		var first error
		for err := range btx.Check() {
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
		tx := txn{btx}
		if err := tx.checkExpiries(); err != nil {
			return err
		}
		if err := tx.checkRefresh(); err != nil {
			return err
		}
		if err := tx.checkOIDCIndexes(); err != nil {
			return err
		}
		return tx.checkEvents()
	})
}

// CommitID returns the id of the newest committed write transaction: it
// grows by one with every commit, so a test can tell whether a call
// wrote.
func (db *DB) CommitID() int {
	var id int
	db.bolt.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// txn is one transaction of a DB. Byte slices read inside it are
// copied or decoded before it ends; a txn is not safe for concurrent
// use. It is one pointer, so that handing it to a transaction function
// as a Tx allocates nothing (GET /session's read transaction is on the
// path of every user call); the few methods that need the DB find
// it with db.
type txn struct {
	tx *bbolt.Tx
}

// Lock does nothing: bbolt runs one write transaction at a time.
func (tx txn) Lock(name string) error { return nil }

// openFiles maps each open bbolt file to its DB, for txn.db.
var openFiles sync.Map // *bbolt.DB → *DB

// db returns the DB of tx's file (nil for a file opened by a
// migration or a test without openDB).
func (tx txn) db() *DB {
	if v, ok := openFiles.Load(tx.tx.DB()); ok {
		return v.(*DB)
	}
	return nil
}

// Size returns the size in bytes of the data file as tx sees it.
func (tx txn) Size() int64 { return tx.tx.Size() }

// OnCommit registers fn to run after the transaction commits.
func (tx txn) OnCommit(fn func()) { tx.tx.OnCommit(fn) }

// bucket returns the named bucket; in a write transaction with its
// FillPercent set (fillPercent).
func (tx txn) bucket(name []byte) *bbolt.Bucket {
	b := tx.tx.Bucket(name)
	if b != nil && tx.tx.Writable() {
		if f := fillPercent[string(name)]; f != 0 {
			b.FillPercent = f
		}
	}
	return b
}

// fillPercent is the FillPercent of the buckets that do not split at
// bbolt's default half. A page that overflows is split into pages filled
// up to FillPercent. At one half, pages that only ever receive keys at
// their end stay half empty for good, so buckets whose keys grow at the
// end (of the bucket, or of each of a few prefixes) split nearly full
// (appendFill): time-ordered UUIDs (users, sessions and their user
// index, devices), sequence numbers (outbox, mail, events, delivery
// records) and times (the event and expiry indexes, queued deliveries).
// Buckets keyed by address (and refresh tokens, below) take new keys
// anywhere; they split at
// randomFill, which leaves room for a page's next inserts, but less than
// half (their pages were 47-53% full, now about 68%).
var fillPercent = map[string]float64{}

// randomFill is the FillPercent of buckets whose new keys land anywhere.
const randomFill = 0.75

func init() {
	for _, b := range [][]byte{
		bucketUsers, bucketSessions, bucketUserSessions, bucketDevices, bucketOutbox, bucketMail,
		bucketEvents, bucketEventIndex, bucketDeliveries, bucketJobs,
		bucketSessionsExpiry, bucketCodesExpiry, bucketMagicExpiry, bucketChallengesExpiry,
		bucketGrantsExpiry, bucketDevicesExpiry, bucketDeliveriesExpiry, bucketOAuthFlowsExpiry, bucketRefreshExpiry,
		bucketOIDCAuthExpiry, bucketOIDCGrantsExpiry, bucketOIDCRefreshExpiry, bucketOIDCRevokedExpiry, bucketOIDCDevicesExpiry,
	} {
		fillPercent[string(b)] = appendFill
	}
	// Refresh tokens: a new session's token lands at the end (its id is
	// time-ordered), but each rotation inserts its next token under the
	// session's older id, anywhere in the bucket.
	for _, b := range [][]byte{bucketUsersByEmail, bucketUsersByExt, bucketCodes, bucketRefresh} {
		fillPercent[string(b)] = randomFill
	}
}

// get decodes the JSON value at key into v; ErrNotFound when absent.
func (tx txn) get(bucket, key []byte, v any) error {
	data := tx.bucket(bucket).Get(key)
	if data == nil {
		return store.ErrNotFound
	}
	return json.Unmarshal(data, v)
}

// put encodes v as JSON at key.
func (tx txn) put(bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.bucket(bucket).Put(key, data)
}

func (tx txn) del(bucket, key []byte) error { return tx.bucket(bucket).Delete(key) }

// keyCount returns how many keys b holds. Bucket.Stats counts the pages
// as last committed, so in a write transaction, which may have changed
// them, the keys are walked instead.
func keyCount(b *bbolt.Bucket) int {
	if !b.Tx().Writable() {
		return b.Stats().KeyN
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// nextSeq returns the bucket's next sequence number as an 8-byte key.
func (tx txn) nextSeq(bucket []byte) ([]byte, uint64, error) {
	n, err := tx.bucket(bucket).NextSequence()
	if err != nil {
		return nil, 0, err
	}
	return u64(n), n, nil
}

// AdminTokenHash returns the stored keyed hash of the admin token, or nil.
func (tx txn) AdminTokenHash() ([]byte, error) {
	return clone(tx.bucket(bucketMeta).Get(keyAdminToken)), nil
}

// SetAdminTokenHash stores the keyed hash of the admin token.
func (tx txn) SetAdminTokenHash(h []byte) error {
	return tx.bucket(bucketMeta).Put(keyAdminToken, h)
}

// Initialized reports whether the first-start state (default project, test
// key, admin token) was committed.
func (tx txn) Initialized() (bool, error) {
	return tx.bucket(bucketMeta).Get(keyInitialized) != nil, nil
}

// SetInitialized records that the first-start state is committed; call it
// in the transaction that creates that state.
func (tx txn) SetInitialized() error {
	return tx.bucket(bucketMeta).Put(keyInitialized, []byte{1})
}

// MasterKeyCheck returns the stored check value of the master key, or
// nil.
func (tx txn) MasterKeyCheck() ([]byte, error) {
	return clone(tx.bucket(bucketMeta).Get(keyKeyCheck)), nil
}

// SetMasterKeyCheck stores the check value of the master key.
func (tx txn) SetMasterKeyCheck(v []byte) error {
	return tx.bucket(bucketMeta).Put(keyKeyCheck, v)
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// compound joins parts with a NUL byte into one index key.
func compound(parts ...string) []byte {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	}
	return b
}

func jsonDecode(data []byte, v any) error { return json.Unmarshal(data, v) }

// maxEventsPerProject returns the cap opt sets, or the default.
func maxEventsPerProject(opt store.Options) int {
	if opt.MaxEventsPerProject <= 0 {
		return store.DefaultMaxEventsPerProject
	}
	return opt.MaxEventsPerProject
}
