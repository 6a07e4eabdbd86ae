package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Tests of the replica services on real PostgreSQL: two or more DBs
// opened on one database are two replicas. The feed's poll interval is
// shortened by store.Options (the only waits are for it); leases use
// the database's clock, so their expiry is waited for in real time with
// TTLs of milliseconds.

// replicaDatabase returns the URL of a new database with the whole
// schema, dropped at cleanup (NewTestDatabase). Every internal test's
// database.
func replicaDatabase(t *testing.T) string { return NewTestDatabase(t, true) }

// fastFeed reads the feed every 10 ms.
var fastFeed = store.Options{FeedInterval: 10 * time.Millisecond}

// openReplica opens a replica on the database at u, closed at cleanup.
func openReplica(t *testing.T, u string, opt store.Options) *DB {
	t.Helper()
	db, _, err := store.Open(context.Background(), u, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.(*DB)
}

// within waits until cond holds and returns how long that took; after
// limit it fails t, saying what.
func within(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// watcher records the changes a DB's Watch tells.
type watcher struct {
	mu  sync.Mutex
	got []store.Change
}

func watch(db store.DB) *watcher {
	w := &watcher{}
	db.Watch(func(c store.Change) {
		w.mu.Lock()
		w.got = append(w.got, c)
		w.mu.Unlock()
	})
	return w
}

func (w *watcher) saw(c store.Change) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.got, c)
}

func (w *watcher) kinds() []store.ChangeKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []store.ChangeKind
	for _, c := range w.got {
		out = append(out, c.Kind)
	}
	return out
}

var bg = context.Background()

func mustUpdate(t *testing.T, db store.DB, fn func(store.Tx) error) {
	t.Helper()
	if err := db.Update(bg, fn); err != nil {
		t.Fatal(err)
	}
}

// exists asks db whether session id exists, in a View (as GET /session
// does).
func exists(t *testing.T, db store.DB, id string) bool {
	t.Helper()
	var ok bool
	if err := db.View(bg, func(tx store.Tx) (err error) {
		ok, err = tx.SessionExists(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestFeedAcrossReplicas: every change that caches follow, committed on
// one replica, is told to another's subscribers within a second (with
// a 10 ms poll interval: in practice within a few of them); the
// backend's own notes (sessions swept) are not told.
func TestFeedAcrossReplicas(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a, b := openReplica(t, u, fastFeed), openReplica(t, u, fastFeed)
	w := watch(b)
	now := time.Now().UTC()
	var worst time.Duration
	for _, c := range []struct {
		name string
		fn   func(store.Tx) error
		want store.Change
	}{
		{"project", func(tx store.Tx) error {
			return tx.PutProject(&store.Project{ID: "p1", Name: "P", SigningKeyID: "k", EmailChange: "verify"})
		}, store.Change{Kind: store.ChangeProject, ID: "p1"}},
		{"api key", func(tx store.Tx) error {
			return tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_abcdefgh", ProjectID: "p1", Mode: "test", Revoked: true})
		}, store.Change{Kind: store.ChangeAPIKey, ID: "sk_test_abcdefgh"}},
		{"user", func(tx store.Tx) error {
			return tx.PutUser(&store.User{ID: "u1", ProjectID: "p1", Email: "a@example.com", Disabled: true})
		}, store.Change{Kind: store.ChangeUser, ID: "u1"}},
		{"session", func(tx store.Tx) error {
			s := &store.Session{ID: "s1", UserID: "u1", ProjectID: "p1", Method: "otp", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := tx.PutSession(s); err != nil {
				return err
			}
			return tx.DeleteSession(s)
		}, store.Change{Kind: store.ChangeSession, ID: "s1"}},
		{"user's sessions", func(tx store.Tx) error {
			s := &store.Session{ID: "s2", UserID: "u1", ProjectID: "p1", Method: "otp", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := tx.PutSession(s); err != nil {
				return err
			}
			return tx.DeleteUserSessions("u1")
		}, store.Change{Kind: store.ChangeUserSessions, ID: "u1"}},
	} {
		start := time.Now()
		mustUpdate(t, a, c.fn)
		within(t, time.Second, c.name+": told to the other replica", func() bool { return w.saw(c.want) })
		worst = max(worst, time.Since(start))
	}
	t.Logf("worst lag from commit on one replica to the other's subscriber: %v (poll interval 10 ms)", worst)

	// Expired sessions swept: the session caches follow, subscribers are
	// not told.
	mustUpdate(t, a, func(tx store.Tx) error {
		return tx.PutSession(&store.Session{ID: "old", UserID: "u9", ProjectID: "p1", Method: "otp", IssuedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)})
	})
	mustUpdate(t, a, func(tx store.Tx) error {
		n, err := tx.SweepExpired(store.ExpiringSessions, now, 10)
		if err == nil && n != 1 {
			err = fmt.Errorf("swept %d sessions, want 1", n)
		}
		return err
	})
	mustUpdate(t, a, func(tx store.Tx) error {
		return tx.PutProject(&store.Project{ID: "p2", SigningKeyID: "k", EmailChange: "verify"})
	})
	within(t, time.Second, "a later change told", func() bool { return w.saw(store.Change{Kind: store.ChangeProject, ID: "p2"}) })
	if slices.Contains(w.kinds(), kindSessionsSwept) {
		t.Fatal("subscribers were told of the backend's own note of a sweep")
	}

	// Deleting a user, and a project (with its detached keys), needs
	// the other domains' tables.
	mustUpdate(t, a, func(tx store.Tx) error { return tx.DeleteUser(&store.User{ID: "u1", ProjectID: "p1"}) })
	within(t, time.Second, "user deleted: its sessions", func() bool {
		return w.saw(store.Change{Kind: store.ChangeUserSessions, ID: "u1"}) && w.saw(store.Change{Kind: store.ChangeUser, ID: "u1"})
	})
	mustUpdate(t, a, func(tx store.Tx) error { _, err := tx.DeleteProject("p1"); return err })
	within(t, time.Second, "project deleted, its key detached", func() bool {
		return w.saw(store.Change{Kind: store.ChangeProject, ID: "p1"}) && w.saw(store.Change{Kind: store.ChangeAPIKey, ID: "sk_test_abcdefgh"})
	})
}

// TestSessionCacheRoundTrips: in a read-only transaction a session known
// to exist costs no round trip (GET /session); a write transaction
// always reads the row; this replica's own deletion drops the entry as
// it commits.
func TestSessionCacheRoundTrips(t *testing.T) {
	t.Parallel()
	tr := openTraced(t)
	tr.db.opt.FeedInterval = time.Hour // the feed's reads would count as round trips
	if err := tr.db.startFeed(bg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.db.stopFeed)
	now := time.Now().UTC()
	s := &store.Session{ID: "s1", UserID: "u1", ProjectID: "p1", Method: "otp", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	mustUpdate(t, tr.db, func(tx store.Tx) error { return tx.PutSession(s) })
	trips := func(what string, want int64, fn func()) {
		t.Helper()
		before := tr.trips.Load()
		fn()
		if got := tr.trips.Load() - before; got != want {
			t.Fatalf("%s: %d round trips, want %d", what, got, want)
		}
	}
	if !exists(t, tr.db, "s1") { // BEGIN, SELECT (prepared), COMMIT: fills
		t.Fatal("s1 does not exist")
	}
	trips("cached session in a View", 0, func() {
		if !exists(t, tr.db, "s1") {
			t.Fatal("s1 does not exist")
		}
	})
	trips("session in an Update (BEGIN with SELECT, COMMIT)", 2, func() {
		mustUpdate(t, tr.db, func(tx store.Tx) error {
			ok, err := tx.SessionExists("s1")
			if err == nil && !ok {
				err = errors.New("s1 does not exist")
			}
			return err
		})
	})
	mustUpdate(t, tr.db, func(tx store.Tx) error { return tx.DeleteSession(s) })
	if tr.db.sessions.has("s1") {
		t.Fatal("a deleted session is still cached after its commit")
	}
	if exists(t, tr.db, "s1") {
		t.Fatal("a deleted session exists")
	}
	// A miss is never cached (a positive cache), and a read that did not
	// begin its transaction fills nothing.
	if tr.db.sessions.has("s1") {
		t.Fatal("a missing session was cached")
	}
	mustUpdate(t, tr.db, func(tx store.Tx) error { return tx.PutSession(s) })
	if err := tr.db.View(bg, func(tx store.Tx) error {
		if _, err := tx.AdminTokenHash(); err != nil { // takes the snapshot
			return err
		}
		_, err := tx.SessionExists("s1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if tr.db.sessions.has("s1") {
		t.Fatal("a session read on an older snapshot than the cache's generation was cached")
	}
}

// TestSessionCacheAcrossReplicas: a session cached by one replica and
// deleted by another (logout, every session of a user, the user, its
// project, or the sweep of expired sessions) is refused by the first
// within a second.
func TestSessionCacheAcrossReplicas(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a, b := openReplica(t, u, fastFeed), openReplica(t, u, fastFeed)
	now := time.Now().UTC()
	put := func(id, user, project string, expires time.Time) *store.Session {
		s := &store.Session{ID: id, UserID: user, ProjectID: project, Method: "otp", IssuedAt: now.Add(-2 * time.Hour), ExpiresAt: expires}
		mustUpdate(t, b, func(tx store.Tx) error { return tx.PutSession(s) })
		for range 2 {
			if !exists(t, a, id) {
				t.Fatalf("%s does not exist", id)
			}
		}
		if !a.sessions.has(id) {
			t.Fatalf("%s is not cached", id)
		}
		return s
	}
	var worst time.Duration
	gone := func(what, id string) {
		t.Helper()
		worst = max(worst, within(t, time.Second, what+": refused by the other replica", func() bool { return !exists(t, a, id) }))
	}
	s1 := put("s1", "u1", "p1", now.Add(time.Hour))
	mustUpdate(t, b, func(tx store.Tx) error { return tx.DeleteSession(s1) })
	gone("logout", "s1")

	put("s2", "u2", "p1", now.Add(time.Hour))
	put("s3", "u2", "p1", now.Add(time.Hour))
	mustUpdate(t, b, func(tx store.Tx) error { return tx.DeleteUserSessions("u2") })
	gone("every session of the user", "s2")
	gone("every session of the user", "s3")

	put("s4", "u4", "p1", now.Add(-time.Minute)) // expired, not swept yet: exists
	mustUpdate(t, b, func(tx store.Tx) error { _, err := tx.SweepExpired(store.ExpiringSessions, now, 100); return err })
	gone("swept", "s4")
	t.Logf("worst lag from a deletion on one replica to its refusal by the other: %v (poll interval 10 ms)", worst)

	mustUpdate(t, b, func(tx store.Tx) error {
		if err := tx.PutProject(&store.Project{ID: "p1", SigningKeyID: "k", EmailChange: "verify"}); err != nil {
			return err
		}
		return tx.PutUser(&store.User{ID: "u5", ProjectID: "p1", Email: "u5@example.com"})
	})
	put("s5", "u5", "p1", now.Add(time.Hour))
	put("s6", "u6", "p1", now.Add(time.Hour))
	mustUpdate(t, b, func(tx store.Tx) error { _, err := tx.DeleteProject("p1"); return err })
	gone("project deleted", "s5")
	mustUpdate(t, b, func(tx store.Tx) error {
		return tx.PutUser(&store.User{ID: "u6", ProjectID: "p2", Email: "u6@example.com"})
	})
	put("s7", "u6", "p2", now.Add(time.Hour))
	mustUpdate(t, b, func(tx store.Tx) error { return tx.DeleteUser(&store.User{ID: "u6", ProjectID: "p2"}) })
	gone("user deleted", "s7")
}

// TestFeedCommitOrder: a change whose transaction took its sequence
// number before another's but commits after it is still told (the
// number skipped at the first read is asked for again).
func TestFeedCommitOrder(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a := openReplica(t, u, fastFeed)
	w := watch(a)
	slow, err := a.pool.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(bg)
	if _, err := slow.Exec(bg, `INSERT INTO changes (kind, id) VALUES ('api_key', 'late')`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(bg, `INSERT INTO changes (kind, id) VALUES ('api_key', 'early')`); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "the change committed first", func() bool { return w.saw(store.Change{Kind: store.ChangeAPIKey, ID: "early"}) })
	time.Sleep(50 * time.Millisecond) // five reads pass the late one's number
	if err := slow.Commit(bg); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "the change with the lower number, committed later", func() bool {
		return w.saw(store.Change{Kind: store.ChangeAPIKey, ID: "late"})
	})
}

// proxy forwards TCP connections to a server until cut: then it closes
// them and refuses new ones until restored (a replica losing its
// database).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// TestFeedStale: a replica that cannot read the feed for longer than
// FeedStaleAfter tells its subscribers ChangeStale and stops answering
// from its session cache (the database's answer, here unreachable,
// decides); once it reads the feed again, ChangeFresh, and the cache is
// used again.
func TestFeedStale(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, pu.Host)
	pu.Host = p.ln.Addr().String()
	b := openReplica(t, pu.String(), store.Options{FeedInterval: 10 * time.Millisecond, FeedStaleAfter: 100 * time.Millisecond})
	w := watch(b)
	now := time.Now().UTC()
	mustUpdate(t, b, func(tx store.Tx) error {
		return tx.PutSession(&store.Session{ID: "s1", UserID: "u1", ProjectID: "p1", Method: "otp", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	})
	// The cache fills while the feed is fresh (read within 100 ms: on a
	// loaded machine a read can be late, so this may take a few tries).
	within(t, 2*time.Second, "s1 cached", func() bool { return exists(t, b, "s1") && b.sessions.has("s1") })
	// On a loaded machine the feed may have gone stale (and fresh again)
	// before the cut: wait for a telling after it, or for the feed to be
	// stale still.
	told := func(k store.ChangeKind) int {
		n := 0
		for _, got := range w.kinds() {
			if got == k {
				n++
			}
		}
		return n
	}
	stale, fresh := told(store.ChangeStale), told(store.ChangeFresh)
	p.setCut(true)
	took := within(t, 2*time.Second, "ChangeStale", func() bool { return told(store.ChangeStale) > stale || b.feed.stale.Load() })
	t.Logf("feed unreadable: subscribers told after %v (stale after 100 ms)", took)
	err = b.View(bg, func(tx store.Tx) error { _, err := tx.SessionExists("s1"); return err })
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("SessionExists of a cached session while the feed is stale and the database unreachable: %v, want ErrUnavailable", err)
	}
	p.setCut(false)
	within(t, 5*time.Second, "ChangeFresh", func() bool { return told(store.ChangeFresh) > fresh })
	within(t, 2*time.Second, "the session cache used again once the feed is read", func() bool {
		return exists(t, b, "s1") && b.sessions.has("s1")
	})
}

// TestLease: a lease is held by one holder at a time: the first to ask
// gets it and renews it; another gets it once it runs out (by the
// database's clock) or is released; of many asking at once for a free
// lease, exactly one gets it.
func TestLease(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a, b := openReplica(t, u, store.Options{}), openReplica(t, u, store.Options{})
	lease := func(db *DB, name, holder string, ttl time.Duration) bool {
		t.Helper()
		held, err := db.Lease(bg, name, holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	if !lease(a, "mail", "a", time.Minute) {
		t.Fatal("a free lease was refused")
	}
	if lease(b, "mail", "b", time.Minute) {
		t.Fatal("b got the lease a holds")
	}
	renewed := time.Now() // before the renewal: a's lease runs out 50 ms after a time past this
	if !lease(a, "mail", "a", 50*time.Millisecond) {
		t.Fatal("a could not renew its lease")
	}
	if !lease(b, "sweep", "b", time.Minute) {
		t.Fatal("another name is another lease")
	}
	within(t, 5*time.Second, "b takes the lease once a's runs out", func() bool { return lease(b, "mail", "b", time.Minute) })
	if took := time.Since(renewed); took < 40*time.Millisecond {
		t.Fatalf("b got the lease %v after a renewed it, before a's 50 ms ran out", took)
	}
	if lease(a, "mail", "a", time.Minute) {
		t.Fatal("a got back a lease b holds")
	}
	if lease(b, "mail", "b", 0) {
		t.Fatal("a release reported the lease held")
	}
	if !lease(a, "mail", "a", time.Minute) {
		t.Fatal("a could not take a released lease at once")
	}
	lease(a, "mail", "b", 0) // b does not hold it: releases nothing
	if lease(b, "mail", "b", time.Minute) {
		t.Fatal("a release by a non-holder freed the lease")
	}

	var won sync.Map
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := []*DB{a, b}[i%2]
			held, err := db.Lease(bg, "webhooks", fmt.Sprint("r", i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if held {
				won.Store(i, true)
			}
		}()
	}
	wg.Wait()
	n := 0
	won.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d of 8 replicas asking at once got a free lease, want 1", n)
	}
}

// TestFeedSweep: rows older than the retention are deleted, younger
// ones kept; a replica that starts reads only the last feedStartWindow
// numbers back, not the whole feed.
func TestFeedSweep(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a := openReplica(t, u, fastFeed)
	if _, err := a.pool.Exec(bg, `INSERT INTO changes (kind, id, at)
		SELECT 'user', 'old' || i, now() - interval '1 hour' FROM generate_series(1, 2500) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(bg, `INSERT INTO changes (kind, id) VALUES ('user', 'new')`); err != nil {
		t.Fatal(err)
	}
	b := openReplica(t, u, fastFeed)
	w := watch(b)
	mustUpdate(t, a, func(tx store.Tx) error {
		return tx.PutUser(&store.User{ID: "u1", ProjectID: "p", Email: "x@example.com"})
	})
	within(t, time.Second, "a change after the start", func() bool { return w.saw(store.Change{Kind: store.ChangeUser, ID: "u1"}) })
	if w.saw(store.Change{Kind: store.ChangeUser, ID: "old1"}) {
		t.Fatal("a replica starting read the feed from its beginning")
	}
	n, err := a.sweepFeed(bg, feedRetention)
	if err != nil || n != 2500 {
		t.Fatalf("swept %d rows (%v), want the 2500 older than the retention", n, err)
	}
	var left int
	if err := a.pool.QueryRow(bg, `SELECT count(*) FROM changes`).Scan(&left); err != nil || left != 2 {
		t.Fatalf("%d rows left (%v), want the 2 recent ones", left, err)
	}
}

// TestFeedReadHoles: a read of the feed visits the rows past its
// position and the holes it asks for again, never the rows before its
// position through a filter. With 100 000 rows and feedMaxHoles holes
// (numbers of writers that rolled back: serialization retries leave
// them under load, and they are asked for during feedHoleTimeout), every
// read stays well within the staleness bound, the sixth and later ones
// too (PostgreSQL's generic plan of the prepared statement); before,
// such a read took seconds and the feed went stale. A hole that commits,
// and a new row, are still told.
func TestFeedReadHoles(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a := openReplica(t, u, store.Options{FeedInterval: time.Hour}) // its own reader idle
	const rows = 100_000
	// One number in 20 of the last feedMaxHoles*20 is missing: a hole.
	if _, err := a.pool.Exec(bg, `INSERT INTO changes (seq, kind, id)
		SELECT i, 'user', 'u' || i FROM generate_series(1, $1::bigint) i
		WHERE i <= $1 - $2 * 20 OR i % 20 <> 10`, rows, feedMaxHoles); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(bg, `SELECT setval('changes_seq_seq', $1)`, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(bg, `ANALYZE changes`); err != nil {
		t.Fatal(err)
	}
	var told []store.Change
	f := &feed{db: a, interval: time.Hour, staleAfter: time.Second, epoch: time.Now(), last: rows,
		holes: map[int64]int64{}, subs: map[uint64]func(store.Change){0: func(c store.Change) { told = append(told, c) }}}
	for s := int64(rows - feedMaxHoles*20 + 1); s <= rows; s++ {
		if s%20 == 10 {
			f.holes[s] = f.mono()
		}
	}
	for i := range 12 {
		start := time.Now()
		n, err := f.readOnce(bg)
		if err != nil || n != 0 {
			t.Fatalf("read %d: %d rows %v, %v; want none", i+1, n, told, err)
		}
		if took := time.Since(start); took > f.staleAfter/2 {
			t.Fatalf("read %d of an idle feed with %d holes took %v, want well within the staleness bound %v", i+1, len(f.holes), took, f.staleAfter)
		}
	}
	// The generic plan, which PostgreSQL uses for a prepared statement
	// after five runs: the array is a parameter there, never hashed, so a
	// filter would compare each row it passes with every hole.
	conn, err := a.pool.Acquire(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	holes := slices.Sorted(maps.Keys(f.holes))
	list := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(holes)), ","), "[]")
	plan := ""
	for _, sql := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE feed_read (bigint, bigint[], int) AS ` + feedReadSQL,
		fmt.Sprintf(`EXPLAIN ANALYZE EXECUTE feed_read (%d, '{%s}', %d)`, f.last, list, feedBatch),
		`DEALLOCATE feed_read`,
		`RESET plan_cache_mode`,
	} {
		res, err := conn.Query(bg, sql)
		if err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
		for res.Next() {
			var l string
			res.Scan(&l)
			plan += l + "\n"
		}
		if err := res.Err(); err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
	}
	if strings.Contains(plan, "Rows Removed by Filter") {
		t.Errorf("the feed's read, generic plan, filters rows it does not return:\n%s", plan)
	}

	hole := int64(rows - 10)
	if _, err := a.pool.Exec(bg, `INSERT INTO changes (seq, kind, id) VALUES ($1, 'api_key', 'late')`, hole); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(bg, `INSERT INTO changes (kind, id) VALUES ('api_key', 'new')`); err != nil {
		t.Fatal(err)
	}
	if n, err := f.readOnce(bg); err != nil || n != 2 {
		t.Fatalf("read after a hole committed and a new row: %d rows, %v; want 2", n, err)
	}
	want := []store.Change{{Kind: store.ChangeAPIKey, ID: "late"}, {Kind: store.ChangeAPIKey, ID: "new"}}
	if !slices.Equal(told, want) {
		t.Errorf("told %v, want %v", told, want)
	}
	if _, still := f.holes[hole]; still {
		t.Errorf("hole %d still asked for after it was read", hole)
	}
}

// TestFeedStaleWhileSlow: a feed read that does not fail but hangs (here
// on a lock of the changes table) still tells ChangeStale within
// FeedStaleAfter of the last read that succeeded: the caches outside the
// store (auth's keys and projects) then hold nothing older than that,
// as the session cache does.
func TestFeedStaleWhileSlow(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	const staleAfter = 400 * time.Millisecond
	b := openReplica(t, u, store.Options{FeedInterval: 100 * time.Millisecond, FeedStaleAfter: staleAfter})
	w := watch(b)
	// How long after the last good read ChangeStale was told, taken as
	// it is told (the test's polling below comes later, and under load
	// much later).
	var late atomic.Int64
	b.Watch(func(c store.Change) {
		if c.Kind == store.ChangeStale && late.Load() == 0 {
			late.Store(b.feed.mono() - b.feed.lastOK.Load())
		}
	})
	lock, err := pgx.Connect(bg, u)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(bg)
	tx, err := lock.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(bg, `LOCK TABLE changes IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	within(t, 2*time.Second, "ChangeStale", func() bool { return slices.Contains(w.kinds(), store.ChangeStale) })
	// The watcher acts one check (20 ms) early; the slack is for its
	// goroutine being scheduled late on a busy machine.
	if late := time.Duration(late.Load()); late > staleAfter+50*time.Millisecond {
		t.Errorf("ChangeStale told %v after the last good read, want within %v", late, staleAfter)
	}
	tx.Rollback(bg)
	within(t, 2*time.Second, "ChangeFresh", func() bool { return slices.Contains(w.kinds(), store.ChangeFresh) })
}
