package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/store"
)

// The invalidation feed (docs/replicas.md, "Consistency across
// replicas"): every transaction that
// changes what replicas cache (an API key, a project, a user, a deleted
// session) or that queues work for the replica doing a background task
// (mail, an outbox event) writes a row to changes (txn.changed), in the
// same transaction as the change. Every replica reads the rows that are
// new every Options.FeedInterval and tells its subscribers (DB.Watch)
// and its session cache.
//
// seq comes from a sequence, taken when the row is inserted; rows become
// visible when their transactions commit, which need not be in seq
// order. So a read notes the numbers it skipped (holes: sequence values
// of transactions not yet committed, or rolled back) and asks for them
// again with the next reads, until feedHoleTimeout: a change whose
// transaction commits more than that after writing its row is missed
// (writers call changed at the end of long transactions). Rows are
// deleted feedRetention after they were written, by one replica at a
// time (the lease feedSweepLease).
//
// When the feed cannot be read for longer than Options.FeedStaleAfter,
// subscribers are told store.ChangeStale (and ChangeFresh once it can),
// and the session cache is bypassed meanwhile.

const (
	// feedBatch bounds the rows one read returns (another read follows
	// at once when it is full).
	feedBatch = 1000
	// feedHoleTimeout is how long a skipped sequence number is asked for
	// again.
	feedHoleTimeout = time.Minute
	// feedMaxHoles bounds the skipped numbers remembered (the newest are
	// kept).
	feedMaxHoles = 4096
	// feedStartWindow is how far back from the newest row a replica
	// starts reading: changes of transactions in flight at its start.
	feedStartWindow = 256
	// feedRetention is how long rows are kept: well beyond the hole
	// timeout.
	feedRetention = 10 * time.Minute
	// feedSweepEvery is how often the replica holding feedSweepLease
	// deletes old rows (in chunks of feedBatch).
	feedSweepEvery = 30 * time.Second
	// feedSweepLease is the lease of the feed's sweep.
	feedSweepLease = "changes-sweep"
)

// changed writes change (kind, id) to the feed in this transaction, and
// has this replica's session cache apply it as soon as it commits (other
// replicas apply it when they read it). Call it in every write method
// whose change caches must see (see store.ChangeKind), near the end of
// the method.
func (tx *txn) changed(kind store.ChangeKind, id string) error {
	return tx.changes(store.Change{Kind: kind, ID: id})
}

// changedAll is changed for many ids of one kind.
func (tx *txn) changedAll(kind store.ChangeKind, ids []string) error {
	cs := make([]store.Change, len(ids))
	for i, id := range ids {
		cs[i] = store.Change{Kind: kind, ID: id}
	}
	return tx.changes(cs...)
}

// changes writes cs to the feed (see changed). The transaction's rows go
// in one statement with its COMMIT (writeFeed): nothing reads the feed
// inside the transaction that writes it.
func (tx *txn) changes(cs ...store.Change) error {
	if len(cs) == 0 {
		return nil
	}
	tx.feedRows = append(tx.feedRows, cs...)
	cs = slices.Clone(cs)
	tx.OnCommit(func() {
		for _, c := range cs {
			tx.db.sessions.apply(c)
		}
	})
	return nil
}

// writeFeed queues the transaction's feed rows, in one statement, with
// its other writes; the commit calls it. A wake-up left out because this
// replica's own task did the work (wake) is written after all when that
// no longer holds: the lease may have been released (a shutdown) or have
// run low while the transaction ran.
func (tx *txn) writeFeed() {
	for _, kind := range tx.wokeHere {
		if !tx.db.wakesHere(kind) {
			tx.feedRows = append(tx.feedRows, store.Change{Kind: kind})
		}
	}
	tx.wokeHere = nil
	cs := tx.feedRows
	tx.feedRows = nil
	switch len(cs) {
	case 0:
	case 1:
		tx.later(`INSERT INTO changes (kind, id) VALUES ($1, $2)`, string(cs[0].Kind), cs[0].ID)
	default:
		kinds, ids := make([]string, len(cs)), make([]string, len(cs))
		for i, c := range cs {
			kinds[i], ids[i] = string(c.Kind), c.ID
		}
		tx.later(`INSERT INTO changes (kind, id) SELECT kind, id FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS c(kind, id, n) ORDER BY n`, kinds, ids)
	}
}

// wake writes a wake-up of kind (store.ChangeMail, store.ChangeOutbox)
// to the feed, once per transaction: the replica that holds the task's
// lease runs it when it reads the row, wherever the work was queued.
// While this replica's own task does kind's work (WakeHere), no row is
// written: the task is woken here after the commit.
func (tx *txn) wake(kind store.ChangeKind) error {
	if tx.woke[kind] {
		return nil
	}
	if tx.db.wakesHere(kind) {
		tx.wokeHere = append(tx.wokeHere, kind) // checked again at the commit
	} else if err := tx.changed(kind, ""); err != nil {
		return err
	}
	if tx.woke == nil {
		tx.woke = map[store.ChangeKind]bool{}
	}
	tx.woke[kind] = true
	return nil
}

// wakesHere reports whether this replica's own task does kind's work now
// (WakeHere).
func (db *DB) wakesHere(kind store.ChangeKind) bool {
	here, ok := db.wakeHere.Load(kind)
	return ok && here.(func() bool)()
}

// WakeHere tells the store that this replica's own task does the work
// of kind while here reports true (see store.Shared).
func (db *DB) WakeHere(kind store.ChangeKind, here func() bool) {
	if here == nil {
		db.wakeHere.Delete(kind)
		return
	}
	db.wakeHere.Store(kind, here)
}

// feed reads the changes table for one DB.
type feed struct {
	db                   *DB
	interval, staleAfter time.Duration
	holder               string    // this replica's name in leases
	epoch                time.Time // origin of mono

	subMu   sync.Mutex
	subs    map[uint64]func(store.Change)
	nextSub uint64

	// lastOK is when (mono) the newest successful read began; stale is
	// set while subscribers were told ChangeStale. staleMu orders the
	// two tellings (the reader's ChangeFresh, the watchdog's or the
	// reader's ChangeStale).
	lastOK  atomic.Int64
	stale   atomic.Bool
	staleMu sync.Mutex

	// The reader's position, used by the reading goroutine only: the
	// highest seq read, and the skipped numbers with when (mono) each
	// was first skipped.
	last  int64
	holes map[int64]int64

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// mono returns the time since the feed began, by the monotonic clock.
func (f *feed) mono() int64 { return int64(time.Since(f.epoch)) }

// trusted reports whether the feed was read within staleAfter: cached
// copies it keeps coherent may be used.
func (f *feed) trusted() bool {
	return f != nil && !f.stale.Load() && f.mono()-f.lastOK.Load() <= int64(f.staleAfter)
}

// holderName returns a name for this replica in leases: host, process
// and a random part (two processes of one host, or a restarted one, are
// different holders).
func holderName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b)
}

// startFeed finds where the feed stands and starts the goroutines that
// read it and sweep it.
func (db *DB) startFeed(ctx context.Context) error {
	interval, staleAfter := db.opt.FeedTiming()
	f := &feed{db: db, interval: interval, staleAfter: staleAfter, holder: holderName(), epoch: time.Now(),
		subs: map[uint64]func(store.Change){}, holes: map[int64]int64{}}
	db.feed, db.sessions = f, newSessionCache(sessionCacheSize)
	// The newest row, or the sequence when the table is empty (rows
	// swept): reading starts feedStartWindow numbers before it, so that
	// changes of transactions in flight now are not missed.
	var newest int64
	if err := db.pool.QueryRow(ctx, `SELECT coalesce((SELECT max(seq) FROM changes),
		(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM changes_seq_seq))`).Scan(&newest); err != nil {
		return unavailable(err)
	}
	f.last = max(0, newest-feedStartWindow)
	f.lastOK.Store(f.mono())
	loop, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.wg.Add(3)
	go func() {
		defer f.wg.Done()
		f.readLoop(loop)
	}()
	go func() {
		defer f.wg.Done()
		f.watchLoop(loop)
	}()
	go func() {
		defer f.wg.Done()
		f.sweepLoop(loop)
	}()
	return nil
}

// stopFeed stops the goroutines and releases the sweep's lease.
func (db *DB) stopFeed() {
	f := db.feed
	if f == nil {
		return
	}
	f.stopOnce.Do(func() {
		f.cancel()
		f.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		db.Lease(ctx, feedSweepLease, f.holder, 0)
	})
}

// Watch registers fn for the changes the feed tells (see store.DB).
func (db *DB) Watch(fn func(store.Change)) (cancel func()) {
	f := db.feed
	f.subMu.Lock()
	id := f.nextSub
	f.nextSub++
	f.subs[id] = fn
	f.subMu.Unlock()
	return func() {
		f.subMu.Lock()
		delete(f.subs, id)
		f.subMu.Unlock()
	}
}

// tell gives c to the session cache and, unless it is the backend's own,
// to the subscribers.
func (f *feed) tell(c store.Change) {
	f.db.sessions.apply(c)
	if c.Kind == kindSessionsSwept || c.Kind == kindFactors {
		return
	}
	f.subMu.Lock()
	defer f.subMu.Unlock()
	for _, fn := range f.subs {
		fn(c)
	}
}

// readLoop reads the feed every interval until ctx is done.
func (f *feed) readLoop(ctx context.Context) {
	every(ctx, f.interval, func() { f.read(ctx) })
}

// every calls fn every d until ctx is done.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}

// read reads every new row (and the holes), tells each, and keeps the
// feed's trust: a failure that leaves it unread for longer than
// staleAfter tells ChangeStale, the next success ChangeFresh.
func (f *feed) read(ctx context.Context) {
	for {
		n, err := f.readOnce(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if f.mono()-f.lastOK.Load() > int64(f.staleAfter) {
				f.goStale("invalidation feed unreadable: cached keys, projects and sessions are bypassed until it is read again", "err", err)
			}
			return
		}
		f.staleMu.Lock()
		if f.stale.Load() {
			f.stale.Store(false)
			f.db.log.Info("invalidation feed read again: caches in use")
			f.tell(store.Change{Kind: store.ChangeFresh})
		}
		f.staleMu.Unlock()
		if n < feedBatch {
			return
		}
	}
}

// goStale tells ChangeStale (and logs msg) unless it was told already.
func (f *feed) goStale(msg string, args ...any) {
	f.staleMu.Lock()
	defer f.staleMu.Unlock()
	if f.stale.Load() {
		return
	}
	f.stale.Store(true)
	f.db.log.Warn(msg, args...)
	f.tell(store.Change{Kind: store.ChangeStale})
}

// watchLoop tells ChangeStale as soon as no read has succeeded for
// nearly staleAfter, whether the read in progress is failing or only
// slow: every subscriber's cached copies are then at most staleAfter
// old (the reader, blocked in a slow read, cannot tell it in time). It
// checks every interval/5 and acts one check early.
func (f *feed) watchLoop(ctx context.Context) {
	tick := f.interval / 5
	every(ctx, tick, func() {
		if !f.stale.Load() && f.mono()-f.lastOK.Load() > int64(f.staleAfter-tick) {
			f.goStale("invalidation feed not read within its staleness bound: cached keys, projects and sessions are bypassed until it is read again")
		}
	})
}

// feedRow is one row of changes.
type feedRow struct {
	seq  int64
	kind string
	id   string
}

// feedReadSQL reads the rows past the position ($1) and the holes ($2),
// up to $3 of them in seq order. The two parts are two index scans of
// changes_pkey, each bounded by its own condition: as one condition
// (seq > $1 OR seq = ANY($2)) PostgreSQL walks the whole index through a
// filter, every row compared with every hole once the prepared statement
// gets its generic plan (the array is a parameter, so not hashed): on
// minutes of rows and the holes that rolled-back writers leave under
// load, a read took seconds, past the staleness bound, and the feed went
// stale (TestFeedReadHoles).
const feedReadSQL = `SELECT seq, kind, id FROM (
	(SELECT seq, kind, id FROM changes WHERE seq > $1 ORDER BY seq LIMIT $3)
	UNION ALL
	(SELECT seq, kind, id FROM changes WHERE seq = ANY($2))
) c ORDER BY seq LIMIT $3`

// readOnce reads up to feedBatch rows past the position and the holes,
// in seq order, and tells each. It returns how many it read.
func (f *feed) readOnce(ctx context.Context) (int, error) {
	start := f.mono()
	holes := make([]int64, 0, len(f.holes))
	for s := range f.holes {
		holes = append(holes, s)
	}
	qctx, cancel := context.WithTimeout(ctx, f.staleAfter)
	defer cancel()
	rows, err := f.db.pool.Query(qctx, feedReadSQL, f.last, holes, feedBatch)
	if err != nil {
		return 0, unavailable(err)
	}
	var got []feedRow
	for rows.Next() {
		var r feedRow
		if err := rows.Scan(&r.seq, &r.kind, &r.id); err != nil {
			rows.Close()
			return 0, err
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return 0, unavailable(err)
	}
	for _, r := range got {
		if r.seq > f.last {
			// Skipped numbers: transactions in flight (or rolled back).
			// Past feedMaxHoles of them, the newest are kept.
			for s := max(f.last+1, r.seq-feedMaxHoles); s < r.seq; s++ {
				f.holes[s] = start
			}
			f.last = r.seq
		} else {
			delete(f.holes, r.seq)
		}
		f.tell(store.Change{Kind: store.ChangeKind(r.kind), ID: r.id})
	}
	f.lastOK.Store(start)
	f.trimHoles(start)
	return len(got), nil
}

// trimHoles forgets holes older than feedHoleTimeout, and the oldest
// beyond feedMaxHoles.
func (f *feed) trimHoles(now int64) {
	for s, at := range f.holes {
		if now-at > int64(feedHoleTimeout) {
			delete(f.holes, s)
		}
	}
	if len(f.holes) <= feedMaxHoles {
		return
	}
	seqs := make([]int64, 0, len(f.holes))
	for s := range f.holes {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for _, s := range seqs[:len(seqs)-feedMaxHoles] {
		delete(f.holes, s)
	}
}

// sweepLoop deletes old rows every feedSweepEvery while this replica
// holds the sweep's lease.
func (f *feed) sweepLoop(ctx context.Context) {
	every(ctx, feedSweepEvery, func() {
		held, err := f.db.Lease(ctx, feedSweepLease, f.holder, 3*feedSweepEvery)
		if err == nil && held {
			_, err = f.db.sweepFeed(ctx, feedRetention)
		}
		if err != nil && ctx.Err() == nil {
			f.db.log.Warn("sweep of the invalidation feed failed", "err", err)
		}
	})
}

// sweepFeed deletes the feed's rows written more than retention ago, in
// chunks of feedBatch, and returns how many it deleted.
func (db *DB) sweepFeed(ctx context.Context, retention time.Duration) (int, error) {
	total := 0
	for {
		tag, err := db.pool.Exec(ctx, `DELETE FROM changes WHERE seq = ANY (ARRAY(
			SELECT seq FROM changes WHERE at < now() - make_interval(secs => $1) ORDER BY at LIMIT $2))`,
			retention.Seconds(), feedBatch)
		if err != nil {
			return total, unavailable(err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < feedBatch {
			return total, nil
		}
	}
}
