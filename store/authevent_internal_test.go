package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func openTestDB(t *testing.T, opt Options) *boltDB {
	t.Helper()
	db, _, err := openBolt(filepath.Join(t.TempDir(), "ev.db"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Check(); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	return db
}

// checkEventIndex fails unless every event has exactly its index entry
// and every scope's total equals its events.
func checkEventIndex(t *testing.T, db *boltDB) {
	t.Helper()
	db.viewTx(func(tx *boltTx) error {
		want := map[string]bool{}
		per := map[string]uint64{}
		tx.bucket(bucketEvents).ForEach(func(k, v []byte) error {
			scope, kind, err := eventHead(v)
			if err != nil {
				t.Fatal(err)
			}
			want[string(append(indexPrefix(scope, kind), k...))] = true
			per[scope]++
			return nil
		})
		n := 0
		tx.bucket(bucketEventIndex).ForEach(func(k, _ []byte) error {
			if !want[string(k)] {
				t.Fatalf("index key %q has no event", k)
			}
			n++
			return nil
		})
		if n != len(want) {
			t.Fatalf("%d index keys for %d events", n, len(want))
		}
		for scope, c := range per {
			if got := must(tx.AuthEventCount(scope)); got != int(c) {
				t.Fatalf("scope %q: total %d, holds %d", scope, got, c)
			}
		}
		for _, st := range tx.totals() {
			if per[st.scope] != st.n {
				t.Fatalf("scope %q: total %d, holds %d", st.scope, st.n, per[st.scope])
			}
		}
		return nil
	})
}

func TestAuthEventEncoding(t *testing.T) {
	tests := []AuthEvent{
		{},
		{ID: "0b6f3f4e-9d7a-4c1e-8f00-123456789abc", ProjectID: "5c1e0a4e-0000-4000-8000-00000000beef", UserID: "f47ac10b-58cc-4372-a567-0e02b2c3d479",
			Email: "ada@example.com", Method: "email_otp", Action: "verify", Success: true, IP: "203.0.113.5", UserAgent: "Mozilla/5.0 (X11; Linux x86_64)"},
		{ID: "0B6F3F4E-9D7A-4C1E-8F00-123456789ABC", ProjectID: "p-doomed", UserID: "u\x00x", Method: "magic_link", Action: "verify",
			FailureCode: "invalid_code", IP: "2001:db8::7", UserAgent: "é"},
		{ID: "x", IP: "::ffff:203.0.113.6"},
		{ID: "y", IP: "fe80::1%eth0"},
		{ID: "z", IP: "010.1.2.3"},
		{ID: "w", IP: "nope"},
	}
	for i, e := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e.CreatedAt = t0.Add(time.Duration(i) * time.Microsecond)
			e.Pos = EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: uint64(i + 1)}
			v := encodeAuthEvent(&e)
			got, err := decodeAuthEvent(e.Pos.key(), v)
			if err != nil {
				t.Fatal(err)
			}
			if *got != e {
				t.Fatalf("decoded %+v, want %+v", *got, e)
			}
			scope, kind, err := eventHead(v)
			if err != nil || scope != e.ProjectID || kind != e.kind() {
				t.Fatalf("head %q %q %v, want %q %q", scope, kind, err, e.ProjectID, e.kind())
			}
			for n := 0; n < len(v); n++ {
				if _, err := decodeAuthEvent(e.Pos.key(), v[:n]); err == nil {
					t.Fatalf("truncated record of %d/%d bytes decoded", n, len(v))
				}
			}
		})
	}
	// A record written before the compact encoding (JSON) still decodes.
	old := AuthEvent{ID: "a", ProjectID: "p", Method: "email_otp", Action: "send", Success: true, CreatedAt: t0}
	raw, _ := json.Marshal(old)
	got, err := decodeAuthEvent(PosBefore(t0).key(), raw)
	if err != nil || got.ID != "a" || !got.CreatedAt.Equal(t0) || !got.Success {
		t.Fatalf("JSON record: %+v %v", got, err)
	}
	// The compact form is much smaller than JSON.
	full := tests[1]
	full.CreatedAt = t0
	js, _ := json.Marshal(full)
	if c := encodeAuthEvent(&full); len(c)*2 > len(js) {
		t.Fatalf("compact %d bytes, JSON %d", len(c), len(js))
	}
}

func TestEventPos(t *testing.T) {
	p := EventPos{Nanos: t0.UnixNano(), Seq: 42}
	got, err := ParseEventPos(p.String())
	if err != nil || got != p {
		t.Fatalf("round trip %v → %q → %v %v", p, p.String(), got, err)
	}
	for _, bad := range []string{"", "zz", p.String()[1:], p.String() + "0", "g" + p.String()[1:]} {
		if _, err := ParseEventPos(bad); err != ErrBadPos {
			t.Errorf("ParseEventPos(%q) err=%v", bad, err)
		}
	}
}

// addEvents stores events in one transaction.
func addEvents(t *testing.T, db *boltDB, evs []*AuthEvent) {
	t.Helper()
	if err := db.updateTx(func(tx *boltTx) error {
		for _, e := range evs {
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAuthEventQueries checks every filter, walked page by page, against
// a plain filter over all events.
func TestAuthEventQueries(t *testing.T) {
	db := openTestDB(t, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	projects := []string{"", "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "p3"}
	codes := []string{"", "invalid_code", "expired", "validation_error"}
	var all []*AuthEvent
	for i := range 600 {
		e := &AuthEvent{ID: fmt.Sprint("e", i), ProjectID: projects[rng.IntN(len(projects))], Method: "email_otp", Action: "verify",
			// Several events share an instant: the sequence orders them.
			CreatedAt: t0.Add(time.Duration(i/3) * time.Second)}
		if c := codes[rng.IntN(len(codes))]; c == "" {
			e.Success = true
		} else {
			e.FailureCode = c
		}
		all = append(all, e)
	}
	addEvents(t, db, all[:300])
	addEvents(t, db, all[300:])
	checkEventIndex(t, db)
	newest := slices.Clone(all)
	slices.Reverse(newest)

	filters := []AuthEventFilter{{}}
	for _, p := range append(projects[1:], "unknown") {
		filters = append(filters, AuthEventFilter{ProjectID: p})
		for _, c := range append(codes[1:], "rate_limited") {
			filters = append(filters, AuthEventFilter{ProjectID: p, FailureCode: c})
		}
	}
	for _, c := range codes[1:] {
		filters = append(filters, AuthEventFilter{FailureCode: c})
	}
	for _, f := range filters {
		for _, limit := range []int{1, 7, 100, 1000} {
			t.Run(fmt.Sprintf("%q/%q/%d", f.ProjectID, f.FailureCode, limit), func(t *testing.T) {
				var want []string
				for _, e := range newest {
					if (f.ProjectID == "" || e.ProjectID == f.ProjectID) && (f.FailureCode == "" || e.FailureCode == f.FailureCode) {
						want = append(want, e.ID)
					}
				}
				var got []string
				f := f
				f.Limit = limit
				for pages := 0; ; pages++ {
					if pages > 700 {
						t.Fatal("pagination does not end")
					}
					var evs []*AuthEvent
					var more bool
					db.viewTx(func(tx *boltTx) error {
						var err error
						evs, more, err = tx.AuthEvents(f)
						return err
					})
					if len(evs) > limit || (more && len(evs) != limit) {
						t.Fatalf("page of %d events (limit %d), more=%v", len(evs), limit, more)
					}
					for _, e := range evs {
						got = append(got, e.ID)
					}
					if !more {
						break
					}
					f.Before = evs[len(evs)-1].Pos
				}
				if !slices.Equal(got, want) {
					t.Fatalf("got %d events %v…, want %d %v…", len(got), head(got), len(want), head(want))
				}
			})
		}
	}
	// Before a time: events older than it.
	db.viewTx(func(tx *boltTx) error {
		evs, _, _ := tx.AuthEvents(AuthEventFilter{Before: PosBefore(t0.Add(time.Second)), Limit: 10})
		if len(evs) != 3 || !evs[0].CreatedAt.Equal(t0) {
			t.Fatalf("before t0+1s: %d events", len(evs))
		}
		return nil
	})
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestAuthEventCap: a project keeps at most the cap, losing its oldest
// events first; other projects and the events without one keep theirs.
func TestAuthEventCap(t *testing.T) {
	db := openTestDB(t, Options{MaxEventsPerProject: 5})
	var evs []*AuthEvent
	for i := range 12 {
		evs = append(evs, &AuthEvent{ID: fmt.Sprint("a", i), ProjectID: "A", Success: i%3 == 0, FailureCode: []string{"", "expired", "invalid_code"}[i%3],
			CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	evs = append(evs, &AuthEvent{ID: "b0", ProjectID: "B", Success: true, CreatedAt: t0})
	evs = append(evs, &AuthEvent{ID: "n0", FailureCode: "invalid_code", CreatedAt: t0})
	addEvents(t, db, evs)
	checkEventIndex(t, db)
	db.viewTx(func(tx *boltTx) error {
		got, _, _ := tx.AuthEvents(AuthEventFilter{ProjectID: "A", Limit: 100})
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if want := []string{"a11", "a10", "a9", "a8", "a7"}; !slices.Equal(ids, want) {
			t.Fatalf("A keeps %v, want %v", ids, want)
		}
		if n := must(tx.AuthEventCount("A")); n != 5 {
			t.Fatalf("A total %d", n)
		}
		if must(tx.AuthEventCount("B")) != 1 || must(tx.AuthEventCount("")) != 1 {
			t.Fatalf("B %d, none %d", must(tx.AuthEventCount("B")), must(tx.AuthEventCount("")))
		}
		// The hourly counters keep counting what happened.
		hc, _ := tx.HourlyCounts("A", t0, t0)
		var sum int64
		for _, c := range hc {
			sum += c.N
		}
		if sum != 12 {
			t.Fatalf("hourly counters of A sum to %d, want 12", sum)
		}
		return nil
	})

	// Lowering the cap: each new event trims a few, TrimAuthEvents the rest.
	db.maxEvents = 2
	addEvents(t, db, []*AuthEvent{{ID: "a12", ProjectID: "A", Success: true, CreatedAt: t0.Add(time.Hour)}})
	db.updateTx(func(tx *boltTx) error {
		if n := must(tx.AuthEventCount("A")); n != 2 {
			t.Fatalf("after one add under cap 2: %d", n)
		}
		return nil
	})
	db.maxEvents = 1
	var trimmed int
	db.updateTx(func(tx *boltTx) error {
		var err error
		trimmed, err = tx.TrimAuthEvents(1000)
		return err
	})
	if trimmed != 1 {
		t.Fatalf("trimmed %d, want 1", trimmed)
	}
	checkEventIndex(t, db)
}

// TestSweepAuthEvents: events older than the cutoff go, oldest first, in
// bounded transactions, with their index entries and totals; hourly and
// suppressed counters of old hours go too.
func TestSweepAuthEvents(t *testing.T) {
	db := openTestDB(t, Options{})
	var evs []*AuthEvent
	for i := range 50 {
		evs = append(evs, &AuthEvent{ID: fmt.Sprint(i), ProjectID: []string{"A", "B", ""}[i%3], Success: i%2 == 0, FailureCode: map[bool]string{true: "", false: "expired"}[i%2 == 0],
			CreatedAt: t0.Add(time.Duration(i) * time.Hour)})
	}
	addEvents(t, db, evs)
	db.updateTx(func(tx *boltTx) error {
		return tx.AddSuppressed(SuppressedCount{Hour: t0, ProjectID: "A", Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 3})
	})
	cutoff := t0.Add(20 * time.Hour)
	due := func() (d bool) {
		db.viewTx(func(tx *boltTx) error {
			a, b, c, _ := tx.EventSweepDue(cutoff)
			d = a || b || c
			return nil
		})
		return d
	}
	if !due() {
		t.Fatal("EventSweepDue=false with events older than the cutoff")
	}
	total := 0
	for {
		var n int
		if err := db.updateTx(func(tx *boltTx) error {
			var err error
			n, err = tx.SweepAuthEvents(cutoff, 7)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		total += n
		if n < 7 {
			break
		}
	}
	if total != 20 {
		t.Fatalf("swept %d, want 20", total)
	}
	checkEventIndex(t, db)
	db.updateTx(func(tx *boltTx) error {
		evs, _, _ := tx.AuthEvents(AuthEventFilter{Limit: 1000})
		if len(evs) != 30 || evs[len(evs)-1].ID != "20" {
			t.Fatalf("%d events left, oldest %s", len(evs), evs[len(evs)-1].ID)
		}
		n, err := tx.SweepEventCounts(cutoff, 1000)
		if err != nil || n == 0 {
			t.Fatalf("swept %d counters: %v", n, err)
		}
		hc, _ := tx.HourlyCounts("", t0, cutoff.Add(-time.Hour))
		sc, _ := tx.SuppressedCounts("", "", t0, cutoff, 1000)
		if len(hc) != 0 || len(sc) != 0 {
			t.Fatalf("old counters left: %v %v", hc, sc)
		}
		if hc, _ := tx.HourlyCounts("", cutoff, cutoff.Add(100*time.Hour)); len(hc) != 30 {
			t.Fatalf("%d recent counters, want 30", len(hc))
		}
		for _, st := range tx.totals() {
			if st.n != 10 {
				t.Fatalf("scope %q total %d after sweeping counters", st.scope, st.n)
			}
		}
		return nil
	})
	if due() {
		t.Fatal("EventSweepDue=true after everything old was swept")
	}
	// Over the cap is due too.
	db.maxEvents = 9
	if !due() {
		t.Fatal("EventSweepDue=false with projects over the cap")
	}
}

// TestHourlyAndSuppressedCounts: counters per hour and outcome, for a
// project and for all projects; suppressed failures count in both and in
// their own counters.
func TestHourlyAndSuppressedCounts(t *testing.T) {
	db := openTestDB(t, Options{})
	addEvents(t, db, []*AuthEvent{
		{ProjectID: "A", Success: true, CreatedAt: t0},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: t0.Add(time.Minute)},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: t0.Add(time.Hour)},
		{ProjectID: "B", FailureCode: "expired", CreatedAt: t0},
		{FailureCode: "invalid_code", CreatedAt: t0},
	})
	db.updateTx(func(tx *boltTx) error {
		for _, c := range []SuppressedCount{
			{Hour: t0.Add(30 * time.Minute), Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 40},
			{Hour: t0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 5},
			{Hour: t0.Add(time.Hour), ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 2},
			{Hour: t0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 1},
		} {
			if err := tx.AddSuppressed(c); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	type row struct {
		hour int
		kind string
		n    int64
	}
	rows := func(hc []HourCount) []row {
		var out []row
		for _, c := range hc {
			k := c.FailureCode
			if c.Success {
				k = "+"
			} else if c.Suppressed {
				k = "suppressed"
			}
			out = append(out, row{int(c.Hour.Sub(t0) / time.Hour), k, c.N})
		}
		return out
	}
	db.viewTx(func(tx *boltTx) error {
		a, _ := tx.HourlyCounts("A", t0, t0.Add(time.Hour))
		if got, want := rows(a), []row{{0, "+", 1}, {0, "expired", 1}, {0, "external_method_error", 6}, {0, "suppressed", 6},
			{1, "expired", 1}, {1, "external_method_error", 2}, {1, "suppressed", 2}}; !slices.Equal(got, want) {
			t.Fatalf("A: %v, want %v", got, want)
		}
		all, _ := tx.HourlyCounts("", t0, t0)
		if got, want := rows(all), []row{{0, "+", 1}, {0, "expired", 2}, {0, "external_method_error", 6}, {0, "invalid_code", 41}, {0, "suppressed", 46}}; !slices.Equal(got, want) {
			t.Fatalf("all: %v, want %v", got, want)
		}
		sc, _ := tx.SuppressedCounts("", "", t0, t0.Add(time.Hour), 1000)
		if len(sc) != 3 || sc[0].Hour != t0.Add(time.Hour) || sc[0].N != 2 {
			t.Fatalf("suppressed: %+v", sc)
		}
		var none, six bool
		for _, c := range sc[1:] {
			none = none || (c.ProjectID == "" && c.N == 40 && c.Method == "magic_link" && c.Action == "verify" && c.FailureCode == "invalid_code")
			six = six || (c.ProjectID == "A" && c.N == 6)
		}
		if !none || !six {
			t.Fatalf("suppressed: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", t0, t0, 1000); len(sc) != 1 || sc[0].N != 6 {
			t.Fatalf("A suppressed in hour 0: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("", "invalid_code", t0, t0.Add(time.Hour), 1000); len(sc) != 1 || sc[0].N != 40 {
			t.Fatalf("invalid_code suppressed: %+v", sc)
		}
		// A limit keeps the newest hours.
		if sc, _ := tx.SuppressedCounts("", "", t0, t0.Add(time.Hour), 2); len(sc) != 2 || sc[0].Hour != t0.Add(time.Hour) {
			t.Fatalf("limit 2: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", t0, t0.Add(time.Hour), 1); len(sc) != 1 || sc[0].Hour != t0.Add(time.Hour) {
			t.Fatalf("A, limit 1: %+v", sc)
		}
		return nil
	})
	if err := db.updateTx(func(tx *boltTx) error {
		return tx.AddSuppressed(SuppressedCount{Hour: t0, ProjectID: "A\x00B", N: 1})
	}); err != ErrBadEventField {
		t.Fatalf("NUL in a project id: %v", err)
	}
}

// TestMigrateEvents: a version 1 file's events (JSON, time order only) are
// indexed and counted at the first open, also when an earlier upgrade
// stopped half way.
func TestMigrateEvents(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		t.Run(fmt.Sprint("interrupted=", interrupted), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v1.db")
			b, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			const n = migrateChunk + 500
			b.Update(func(tx *bolt.Tx) error {
				meta, _ := tx.CreateBucket(bucketMeta)
				meta.Put(keySchema, u64(1))
				ev, _ := tx.CreateBucket(bucketEvents)
				for i := range n {
					e := AuthEvent{ID: fmt.Sprint(i), ProjectID: []string{"A", ""}[i%2], Success: i%5 == 0, FailureCode: map[bool]string{true: "", false: "expired"}[i%5 == 0],
						CreatedAt: t0.Add(time.Duration(i) * time.Second)}
					raw, _ := json.Marshal(e)
					ev.Put(EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: uint64(i + 1)}.key(), raw)
				}
				ev.SetSequence(n)
				if interrupted {
					// An upgrade that indexed the first chunk and stopped.
					bt := &boltTx{tx: tx}
					for _, name := range allBuckets {
						tx.CreateBucketIfNotExists(name)
					}
					c := tx.Bucket(bucketEvents).Cursor()
					var last []byte
					k, v := c.First()
					for range 100 {
						scope, kind, _ := eventHead(v)
						hour := hourOf(time.Unix(0, posOf(k).Nanos))
						tx.Bucket(bucketEventIndex).Put(append(indexPrefix(scope, kind), k...), []byte{})
						bt.addCount(countKey(scope, hour, kind), 1)
						bt.addCount(countKey(allScope, hour, kind), 1)
						bt.addTotal(scope, 1)
						last = clone(k)
						k, v = c.Next()
					}
					tx.Bucket(bucketMeta).Put(keyEventMigration, last)
				}
				return nil
			})
			b.Close()
			db, _, err := openBolt(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			checkEventIndex(t, db)
			db.viewTx(func(tx *boltTx) error {
				if v := tx.bucket(bucketMeta).Get(keySchema); getU64(v) != SchemaVersion {
					t.Fatalf("schema %d after the upgrade", getU64(v))
				}
				if tx.bucket(bucketMeta).Get(keyEventMigration) != nil {
					t.Fatal("migration progress left behind")
				}
				if a, none := must(tx.AuthEventCount("A")), must(tx.AuthEventCount("")); a+none != n || a != n/2 {
					t.Fatalf("totals A %d, none %d", a, none)
				}
				evs, _, _ := tx.AuthEvents(AuthEventFilter{ProjectID: "A", FailureCode: "expired", Limit: 3})
				if len(evs) != 3 || evs[0].ID != fmt.Sprint(n-2) {
					t.Fatalf("newest expired of A: %+v", evs)
				}
				hc, _ := tx.HourlyCounts("", t0, t0.Add(24*time.Hour))
				var sum int64
				for _, c := range hc {
					sum += c.N
				}
				if sum != n {
					t.Fatalf("hourly counters sum to %d, want %d", sum, n)
				}
				return nil
			})
			// New events go on from the old sequence.
			addEvents(t, db, []*AuthEvent{{ProjectID: "A", Success: true, CreatedAt: t0.Add(time.Duration(n) * time.Second)}})
			checkEventIndex(t, db)
			if err := db.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAuthEventBytes reports the file bytes per stored event (about the
// record plus its index entry and counters) with a browser's user agent.
func TestAuthEventBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	db := openTestDB(t, Options{})
	const n = 20_000
	var evs []*AuthEvent
	for i := range n {
		evs = append(evs, sampleEvent(i))
	}
	for i := 0; i < n; i += 5000 {
		addEvents(t, db, evs[i:i+5000])
	}
	var size int64
	db.viewTx(func(tx *boltTx) error { size = tx.tx.Size(); return nil })
	perEvent := float64(size) / n
	t.Logf("%.0f bytes of file per event (%d events, %d bytes)", perEvent, n, size)
	if perEvent > 400 {
		t.Fatalf("%.0f bytes per event, want at most 400", perEvent)
	}
}

// sampleEvent is a realistic event: a browser user agent, UUIDs, a
// sign-in by code in one of three projects.
func sampleEvent(i int) *AuthEvent {
	return &AuthEvent{
		ID:        fmt.Sprintf("%08x-9d7a-4c1e-8f00-%012x", i, i),
		ProjectID: fmt.Sprintf("%08x-0000-4000-8000-00000000beef", i%3),
		UserID:    fmt.Sprintf("%08x-58cc-4372-a567-0e02b2c3d479", i/2),
		Email:     fmt.Sprintf("user%d@example.com", i/2),
		Method:    "email_otp", Action: []string{"send", "verify"}[i%2], Success: i%7 != 0,
		FailureCode: map[bool]string{true: "", false: "invalid_code"}[i%7 != 0],
		IP:          fmt.Sprintf("203.0.%d.%d", i/256%256, i%256),
		UserAgent:   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
		CreatedAt:   t0.Add(time.Duration(i) * 100 * time.Millisecond),
	}
}
