package bolt

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// mustTx runs fn in a write transaction and fails t on its error.
func mustTx(t *testing.T, db *DB, fn func(tx txn) error) {
	t.Helper()
	if err := db.updateTx(fn); err != nil {
		t.Fatal(err)
	}
}

// count returns the keys of bucket.
func count(db *DB, bucket []byte) int {
	n := 0
	db.viewTx(func(tx txn) error { n = tx.bucket(bucket).Stats().KeyN; return nil })
	return n
}

// sweepAll sweeps kind at now in transactions of at most max rows and
// returns the sizes of the transactions that deleted something.
func sweepAll(t *testing.T, db *DB, kind store.Expiring, now time.Time, max int) []int {
	t.Helper()
	var sizes []int
	for {
		var n int
		mustTx(t, db, func(tx txn) (err error) { n, err = tx.SweepExpired(kind, now, max); return })
		if n == 0 {
			return sizes
		}
		sizes = append(sizes, n)
	}
}

// TestExpiringDeletes: deleting rows (a user's sessions, a webhook's
// history, a project, links and grants by owner, an emptied history)
// takes their index entries along (openTestDB's Check verifies it).
func TestExpiringDeletes(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, store.Options{})
	mustTx(t, db, func(tx txn) error {
		fillProject(t, tx, "a")
		fillProject(t, tx, "b")
		return nil
	})
	mustTx(t, db, func(tx txn) error {
		if err := tx.DeleteUserSessions("u-a"); err != nil {
			return err
		}
		w, err := tx.Webhook("p-b", "w-b")
		if err != nil {
			return err
		}
		if err := tx.DeleteWebhook(w); err != nil {
			return err
		}
		if n, err := tx.DeleteMagicLinks("p-b", "link@example.com"); n != 1 || err != nil {
			return fmt.Errorf("DeleteMagicLinks: %d, %v", n, err)
		}
		if n, err := tx.DeleteGrants("p-b", "x"); n != 1 || err != nil {
			return fmt.Errorf("DeleteGrants: %d, %v", n, err)
		}
		return tx.PutThrottle("otp", "p-b", "pending-b@example.com", &store.Throttle{})
	})
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	mustTx(t, db, func(tx txn) error { _, err := tx.DeleteProject("p-a"); return err })
	for i := range expiries {
		db.viewTx(func(tx txn) error {
			if n := mentions(tx, "-a")[string(expiries[i].index)]; n != 0 {
				t.Fatalf("%s: %d index entries of the deleted project left", store.Expiring(i), n)
			}
			return nil
		})
	}
}

// TestExpiriesEveryKind: the expiry table describes every expiring kind
// of package store, each with its own rows and index buckets.
func TestExpiriesEveryKind(t *testing.T) {
	t.Parallel()
	kinds := store.ExpiringKinds()
	if len(expiries) != len(kinds) {
		t.Fatalf("expiries describes %d kinds, package store has %d", len(expiries), len(kinds))
	}
	seen := map[string]bool{}
	for _, kind := range kinds {
		x := expiries[kind]
		if x.rows == nil || x.index == nil || x.head == nil || seen[string(x.index)] {
			t.Errorf("%s: rows %q, index %q (or an index another kind has), head set %v", kind, x.rows, x.index, x.head != nil)
		}
		seen[string(x.index)] = true
	}
}

// TestMigrateExpiry: a version 2 file (JSON rows, no expiry indexes)
// gets every expiring row indexed at its first open, also when an
// earlier upgrade stopped part of the way; the rows read back as written
// and are swept at their time.
func TestMigrateExpiry(t *testing.T) {
	defer smallMigrateChunks()()
	for _, interrupted := range []bool{false, true} {
		t.Run(fmt.Sprint("interrupted=", interrupted), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v2.db")
			b, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			sessions := migrateChunk + 500
			err = b.Update(func(tx *bbolt.Tx) error {
				for _, name := range allBuckets {
					if _, err := tx.CreateBucketIfNotExists(name); err != nil {
						return err
					}
				}
				tx.Bucket(bucketMeta).Put(keySchema, u64(2))
				put := func(bucket, k []byte, v any) {
					raw, _ := json.Marshal(v)
					tx.Bucket(bucket).Put(k, raw)
				}
				for i := range sessions {
					s := store.Session{ID: fmt.Sprintf("s%06d", i), UserID: "u1", ProjectID: "p", Method: "email_otp", IssuedAt: t0,
						ExpiresAt: t0.Add(time.Duration(i) * time.Second)}
					put(bucketSessions, []byte(s.ID), s)
					tx.Bucket(bucketUserSessions).Put(compound(s.UserID, s.ID), nil)
				}
				// A code at its key before version 4 (moved by the upgrade).
				put(bucketCodes, compound("otp", "p", "a@example.com"), store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com", ExpiresAt: t0.Add(time.Minute)})
				put(bucketCodes, throttleKey("otp", "p", "a@example.com"), store.Throttle{Sends: []time.Time{t0}})
				put(bucketDevices, []byte("dev1"), map[string]any{"key": []byte("dev1"), "hash": []byte{1}, "userId": "u1", "projectId": "p", "createdAt": t0})
				put(bucketDeliveries, append(compound("w1", ""), u64(1)...), store.Delivery{Seq: 1, WebhookID: "w1", CreatedAt: t0})
				put(bucketMagic, []byte("h1"), store.MagicLink{Hash: []byte("h1"), ProjectID: "p", ExpiresAt: t0.Add(time.Minute)})
				if interrupted {
					// An upgrade that indexed 100 sessions and stopped.
					c := tx.Bucket(bucketSessions).Cursor()
					k, v := c.First()
					var last []byte
					for range 100 {
						var s store.Session
						json.Unmarshal(v, &s)
						tx.Bucket(bucketSessionsExpiry).Put(dueKey(s.ExpiresAt, k), nil)
						last = clone(k)
						k, v = c.Next()
					}
					tx.Bucket(bucketMeta).Put(keyExpiryMigration, append([]byte{byte(store.ExpiringSessions)}, last...))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			db2, _, err := openDB(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			if err := db2.Check(); err != nil {
				t.Fatal(err)
			}
			db2.viewTx(func(tx txn) error {
				if v := getU64(tx.bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
					t.Fatalf("schema %d after the upgrade", v)
				}
				if tx.bucket(bucketMeta).Get(keyExpiryMigration) != nil {
					t.Fatal("migration progress left behind")
				}
				s, err := tx.Session("s000007")
				if err != nil || s.UserID != "u1" || !s.ExpiresAt.Equal(t0.Add(7*time.Second)) || s.Method != "email_otp" {
					t.Fatalf("old session reads %+v, %v", s, err)
				}
				if c, err := tx.Code("otp", "p", "a@example.com"); err != nil || !c.ExpiresAt.Equal(t0.Add(time.Minute)) {
					t.Fatalf("old code reads %+v, %v", c, err)
				}
				d, err := tx.Device([]byte("dev1"))
				if err != nil || !d.LastUsedAt.Equal(t0) || d.Expired(t0.Add(store.DeviceLifetime-time.Second)) || !d.Expired(t0.Add(store.DeviceLifetime)) {
					t.Fatalf("old device reads %+v, %v", d, err)
				}
				return nil
			})
			if n := count(db2, bucketSessionsExpiry); n != sessions {
				t.Fatalf("%d sessions indexed, want %d", n, sessions)
			}
			if got := sweepAll(t, db2, store.ExpiringSessions, t0.Add(999*time.Second), 1000); fmt.Sprint(got) != "[1000]" {
				t.Fatalf("swept %v, want [1000]", got)
			}
			for _, k := range []store.Expiring{store.ExpiringCodes, store.ExpiringDevices, store.ExpiringDeliveries, store.ExpiringMagicLinks} {
				if got := sweepAll(t, db2, k, t0.Add(store.DeviceLifetime), 1000); len(got) != 1 {
					t.Fatalf("%s: swept %v", k, got)
				}
			}
			if err := db2.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecordEncodings: the compact records read back as written, and
// JSON rows written before them still read.
func TestRecordEncodings(t *testing.T) {
	t.Parallel()
	verified := true
	u := &store.User{ID: "0193a0d5-c3d2-7e80-9000-0000000000aa", ProjectID: "0193a0d5-c3d2-7e80-9000-0000000000bb", Email: "ada@example.com",
		ExternalUserID: "ext-1", FirstName: "Ada", CompanyID: "0193a0d5-c3d2-7e80-9000-0000000000cc", Disabled: true,
		CreatedAt: t0, UpdatedAt: t0.Add(time.Second), EmailVerified: &verified, Vouched: new(bool),
		Groups: []string{"admins", "staff"}, Metadata: json.RawMessage(`{"plan":"pro"}`)}
	s := &store.Session{ID: "0193a0d5-c3d2-7e80-9000-0000000000dd", UserID: u.ID, ProjectID: u.ProjectID, Method: "passkey",
		IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour), LastSeenAt: t0.Add(time.Hour),
		IP: "2001:db8::1", UserAgent: "curl/8.5.0", Proofs: []store.Proof{{Method: "passkey", At: t0}, {Method: "totp", At: t0.Add(time.Minute)}}}
	c := &store.Code{Kind: "sms", ProjectID: u.ProjectID, Subject: u.ID, Phone: "+15551234567", Email: "new@example.com", Hash: []byte{1, 2, 3},
		Attempts: 2, CreatedAt: t0, ExpiresAt: t0.Add(10 * time.Minute)}
	th := &store.Throttle{Sends: []time.Time{t0, t0.Add(time.Second)}, KeepUntil: t0.Add(24 * time.Hour)}
	dv := &store.Device{Key: []byte("0123456789abcdef"), Hash: []byte("hash"), UserID: u.ID, ProjectID: u.ProjectID, CreatedAt: t0, LastUsedAt: t0.Add(time.Hour)}
	ev := &store.Event{Seq: 7, ID: "evt_x", ProjectID: u.ProjectID, Type: "user.registered", CreatedAt: t0, Data: json.RawMessage(`{"a":1}`)}
	m := &store.Mail{ID: 9, ProjectID: u.ProjectID, To: "ada@example.com", Kind: "otp", Body: []byte("sealed"), Attempts: 1, LastError: "boom",
		CreatedAt: t0, NextAttemptAt: t0.Add(5 * time.Second)}
	usedAt, zero := t0.Add(time.Hour), time.Time{}
	live := &store.RefreshToken{SessionID: s.ID, Hash: []byte{0, 1, 0, 2}, ProjectID: u.ProjectID, CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
	used := &store.RefreshToken{SessionID: s.ID, Hash: []byte("hash"), ProjectID: "not-a-uuid", CreatedAt: t0, UsedAt: &usedAt, ExpiresAt: t0.Add(24 * time.Hour)}
	check := func(name string, want, got any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(w) != string(g) {
			t.Fatalf("%s:\n got %s\nwant %s", name, g, w)
		}
	}
	for _, old := range []bool{false, true} {
		enc := func(v any, compact []byte) []byte {
			if old {
				raw, _ := json.Marshal(v)
				return raw
			}
			return compact
		}
		gu, err := decodeUser([]byte(u.ID), enc(u, encodeUser(u)))
		check("user", u, gu, err)
		gs, err := decodeSession([]byte(s.ID), enc(s, encodeSession(s)))
		check("session", s, gs, err)
		gc, err := decodeCode(enc(c, encodeCode(c)))
		check("code", c, gc, err)
		gt, err := decodeThrottle(enc(th, encodeThrottle(th)))
		check("throttle", th, gt, err)
		gd, err := decodeDevice(dv.Key, enc(dv, encodeDevice(dv)))
		if old { // JSON devices predate LastUsedAt: last used when created
			want := *dv
			want.LastUsedAt = dv.CreatedAt
			raw, _ := json.Marshal(map[string]any{"key": dv.Key, "hash": dv.Hash, "userId": dv.UserID, "projectId": dv.ProjectID, "createdAt": dv.CreatedAt})
			gd, err = decodeDevice(dv.Key, raw)
			check("device", &want, gd, err)
		} else {
			check("device", dv, gd, err)
		}
		ge, err := decodeEvent(u64(ev.Seq), enc(ev, encodeEvent(ev)))
		check("event", ev, ge, err)
		gm, err := decodeMail(u64(m.ID), enc(m, encodeMail(m)))
		check("mail", m, gm, err)
		usedZero := *used
		usedZero.UsedAt = &zero
		for _, r := range []*store.RefreshToken{live, used, &usedZero} {
			gr, err := decodeRefresh(refreshKey(r.SessionID, r.Hash), enc(r, encodeRefresh(r)))
			check("refresh token", r, gr, err)
		}
	}
	wrongFlag := encodeRefresh(live)
	wrongFlag[len(wrongFlag)-9] = 2
	for _, bad := range [][]byte{nil, {}, {9}, {recordFormat}, {recordFormat, tagUUID, 1}, encodeRefresh(live)[:30], wrongFlag} {
		if _, err := decodeRefresh(refreshKey(live.SessionID, live.Hash), bad); err == nil {
			t.Fatalf("decodeRefresh(%v) took a malformed record", bad)
		}
	}
	// Marking a token used does not grow its row.
	rotated := *live
	rotated.UsedAt = &usedAt
	if a, b := len(encodeRefresh(live)), len(encodeRefresh(&rotated)); a != b {
		t.Fatalf("a live token takes %d bytes, a used one %d", a, b)
	}
	if len(encodeSession(s)) > 110 {
		t.Fatalf("a session takes %d bytes, want at most 110", len(encodeSession(s)))
	}
	for _, bad := range [][]byte{nil, {}, {9}, {recordFormat}, {recordFormat, tagUUID, 1}, {sessionFormat}, {sessionFormat, tagUUID, 1}} {
		if _, err := decodeSession([]byte("s"), bad); err == nil {
			t.Fatalf("decodeSession(%v) took a malformed record", bad)
		}
	}
	// Setting a session's last-seen time does not grow the row.
	later := *s
	later.LastSeenAt = time.Time{}
	if len(encodeSession(&later)) != len(encodeSession(s)) {
		t.Fatal("a session's size depends on its last-seen time")
	}
}

// TestSessionProofsEncoding: a session's proofs come back exactly,
// methods outside the one-byte table and proofs before the sign-in or
// at the zero time included; none reads as none (not as a session
// stored before proofs); a malformed proofs section is refused.
func TestSessionProofsEncoding(t *testing.T) {
	t.Parallel()
	base := store.Session{ID: "0193a0d5-c3d2-7e80-9000-0000000000dd", UserID: "u", ProjectID: "p", Method: "oauth:github",
		IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	for _, ps := range [][]store.Proof{
		nil,
		{{Method: "oauth:github", At: t0}},
		{{Method: "otp", At: t0}, {Method: "link", At: t0.Add(time.Nanosecond)}, {Method: "passkey", At: t0.Add(-time.Hour)}, {Method: "backup_code", At: t0.Add(90 * 24 * time.Hour)},
			{Method: "totp", At: t0}, {Method: "sms", At: t0}, {Method: "external", At: t0}, {Method: "mfa", At: t0}, {Method: "", At: time.Time{}}, {Method: "oauth:é", At: t0.Add(time.Second)}},
		{{Method: "passkey", At: t0, Synced: true}, {Method: "totp", At: t0}},
	} {
		s := base
		s.Proofs = ps
		got, err := decodeSession([]byte(s.ID), encodeSession(&s))
		if err != nil || !reflect.DeepEqual(got.Proofs, ps) {
			t.Fatalf("proofs %v: got %v, %v", ps, got.Proofs, err)
		}
	}
	s := base
	s.Proofs = []store.Proof{{Method: "otp", At: t0}}
	v := encodeSession(&s)
	if n := len(v) - len(encodeSession(&base)); n != 2 {
		t.Fatalf("a proof at sign-in takes %d bytes, want 2", n)
	}
	for _, bad := range [][]byte{
		append(v[:len(v)-3:len(v)-3], 1, 99, 0),  // an unknown method byte
		append(v[:len(v)-3:len(v)-3], 1, 1),      // no time
		append(v[:len(v)-3:len(v)-3], 200, 1, 0), // more proofs than bytes
	} {
		if _, err := decodeSession([]byte(s.ID), bad); err == nil {
			t.Fatalf("decodeSession took a malformed proofs section %v", bad[len(bad)-3:])
		}
	}
}

// TestLegacySessionProofs: a session stored before sessions kept their
// proofs, compact or JSON, reads as signed in by its method at IssuedAt,
// and its step-up time, when set, as an "mfa" proof; a backup-code
// sign-in's own step-up time (within a second of IssuedAt) is the
// sign-in.
func TestLegacySessionProofs(t *testing.T) {
	t.Parallel()
	// oldCompact is the compact row as written before proofs: the
	// step-up time in its own slot, nothing after the user agent.
	oldCompact := func(s *store.Session, stepped time.Time) []byte {
		b := []byte{recordFormat}
		b = appendID(b, s.UserID)
		b = appendID(b, s.ProjectID)
		b = appendString(b, s.Method)
		b = appendTime(b, s.IssuedAt)
		b = appendTime(b, s.ExpiresAt)
		b = appendTime(b, stepped)
		b = appendTime(b, s.LastSeenAt)
		b = appendIP(b, s.IP)
		return appendString(b, s.UserAgent)
	}
	oldJSON := func(s *store.Session, stepped time.Time) []byte {
		m := map[string]any{"id": s.ID, "userId": s.UserID, "projectId": s.ProjectID, "method": s.Method,
			"issuedAt": s.IssuedAt, "expiresAt": s.ExpiresAt, "ip": s.IP, "userAgent": s.UserAgent}
		if !stepped.IsZero() {
			m["steppedUpAt"] = stepped
		}
		raw, _ := json.Marshal(m)
		return raw
	}
	cases := []struct {
		method  string
		stepped time.Time
		want    []store.Proof
	}{
		{"email_otp", time.Time{}, []store.Proof{{Method: "otp", At: t0}}},
		{"magic_link", t0.Add(time.Minute), []store.Proof{{Method: "link", At: t0}, {Method: "mfa", At: t0.Add(time.Minute)}}},
		{"passkey", time.Time{}, []store.Proof{{Method: "passkey", At: t0}}},
		{"oauth:google", time.Time{}, []store.Proof{{Method: "oauth:google", At: t0}}},
		{"external:bankid", t0.Add(time.Hour), []store.Proof{{Method: "external", At: t0}, {Method: "mfa", At: t0.Add(time.Hour)}}},
		{"backup_code", t0.Add(400 * time.Millisecond), []store.Proof{{Method: "backup_code", At: t0.Add(400 * time.Millisecond)}}},
		{"backup_code", t0.Add(5 * time.Minute), []store.Proof{{Method: "backup_code", At: t0}, {Method: "mfa", At: t0.Add(5 * time.Minute)}}},
	}
	for _, c := range cases {
		s := &store.Session{ID: "0193a0d5-c3d2-7e80-9000-0000000000dd", UserID: "0193a0d5-c3d2-7e80-9000-0000000000aa",
			ProjectID: "0193a0d5-c3d2-7e80-9000-0000000000bb", Method: c.method, IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour),
			IP: "192.0.2.1", UserAgent: "ua"}
		for name, raw := range map[string][]byte{"compact": oldCompact(s, c.stepped), "JSON": oldJSON(s, c.stepped)} {
			got, err := decodeSession([]byte(s.ID), raw)
			if err != nil {
				t.Fatalf("%s %s: %v", name, c.method, err)
			}
			want := *s
			want.Proofs = c.want
			if !reflect.DeepEqual(got, &want) {
				t.Fatalf("%s %s stepped %v:\n got %+v\nwant %+v", name, c.method, c.stepped, got, &want)
			}
			// Rewritten (a last-seen flush, a step-up), it keeps them.
			again, err := decodeSession([]byte(s.ID), encodeSession(got))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("%s %s rewritten: %+v, %v", name, c.method, again, err)
			}
		}
	}
}

// fillAll sets every exported field of the struct v points to to a value
// that is not its zero value (strings that are not UUIDs, distinct times,
// true, 1 and so on), so that a field the compact encoding forgets shows.
func fillAll(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f, sf := rv.Field(i), rv.Type().Field(i)
		if !sf.IsExported() || sf.Tag.Get("json") == "-" {
			continue
		}
		switch {
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(t0.Add(time.Duration(i) * time.Hour)))
		case f.Type() == reflect.TypeOf(json.RawMessage{}):
			f.Set(reflect.ValueOf(json.RawMessage(`{"k":1}`)))
		case f.Kind() == reflect.String:
			f.SetString("v-" + sf.Name)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64 || f.Kind() == reflect.Uint64:
			if f.CanInt() {
				f.SetInt(int64(i + 1))
			} else {
				f.SetUint(uint64(i + 1))
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
			f.SetBytes([]byte("b-" + sf.Name))
		case f.Type() == reflect.TypeOf([]string{}):
			f.Set(reflect.ValueOf([]string{"v-" + sf.Name, "w-" + sf.Name}))
		case f.Kind() == reflect.Slice && f.Type().Elem() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf([]time.Time{t0, t0.Add(time.Minute)}))
		case f.Type() == reflect.TypeOf([]store.Proof{}):
			f.Set(reflect.ValueOf([]store.Proof{{Method: "otp", At: t0}, {Method: "v-" + sf.Name, At: t0.Add(time.Minute)}}))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Bool:
			b := true
			f.Set(reflect.ValueOf(&b))
		default:
			t.Fatalf("fillAll: field %s of type %s: teach this test the type", sf.Name, f.Type())
		}
	}
}

// TestRecordsKeepEveryField: a field added to a record type must be
// added to its compact encoding too, or this test fails.
func TestRecordsKeepEveryField(t *testing.T) {
	t.Parallel()
	same := func(name string, want, got any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(w) != string(g) {
			t.Fatalf("%s loses a field in the compact encoding:\n got %s\nwant %s", name, g, w)
		}
	}
	var u store.User
	fillAll(t, &u)
	gu, err := decodeUser([]byte(u.ID), encodeUser(&u))
	same("User", &u, gu, err)
	var s store.Session
	fillAll(t, &s)
	s.IP = "192.0.2.1"
	gs, err := decodeSession([]byte(s.ID), encodeSession(&s))
	same("Session", &s, gs, err)
	var c store.Code
	fillAll(t, &c)
	gc, err := decodeCode(encodeCode(&c))
	same("Code", &c, gc, err)
	var th store.Throttle
	fillAll(t, &th)
	gt, err := decodeThrottle(encodeThrottle(&th))
	same("Throttle", &th, gt, err)
	var d store.Device
	fillAll(t, &d)
	gd, err := decodeDevice(d.Key, encodeDevice(&d))
	same("Device", &d, gd, err)
	var e store.Event
	fillAll(t, &e)
	ge, err := decodeEvent(u64(e.Seq), encodeEvent(&e))
	same("Event", &e, ge, err)
	var m store.Mail
	fillAll(t, &m)
	gm, err := decodeMail(u64(m.ID), encodeMail(&m))
	same("Mail", &m, gm, err)
}

// smallMigrateChunks makes the upgrades take 500 rows a transaction
// instead of 20,000, so that a test crosses a chunk's end with 1,000 rows,
// and returns the function that puts the size back. The tests that call
// it are not parallel: they run before the parallel tests of the
// package start, which read the size.
func smallMigrateChunks() (restore func()) {
	was := migrateChunk
	migrateChunk = 500
	return func() { migrateChunk = was }
}
