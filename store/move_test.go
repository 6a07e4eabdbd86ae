package store_test

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestMoveFixtureCoversEveryKind: the fixture of the copy and backup
// tests holds every kind of record of the Mover contract, in its order,
// with every field set on one of its records.
func TestMoveFixtureCoversEveryKind(t *testing.T) {
	t.Parallel()
	storetest.CheckFixture(t)
	if got := store.RecordKinds(); !slices.Contains(got, "Template") || got[0] != "Settings" {
		t.Fatalf("RecordKinds() = %q", got)
	}
}

// TestMoverKindsAreTheTxRecords: every record type a Tx method takes or
// returns is a kind of the Mover contract, or named here as not one: a
// new kind of record, written with a new Tx method, fails here until a
// copy carries it.
func TestMoverKindsAreTheTxRecords(t *testing.T) {
	t.Parallel()
	notRecords := map[string]string{
		"Enrolled":        "what a session's user has enrolled: read from the factors and passkeys",
		"FactorSummary":   "a summary of a user's factors: read from them",
		"AuthEventFilter": "the arguments of a listing",
		"HourCount":       "the hourly counters as a listing returns them (EventCount carries them)",
		"Throttle":        "a send history: ThrottleRecord carries it with its key",
		"Proof":           "a part of a Session",
	}
	kinds := map[string]bool{}
	for _, k := range store.RecordKinds() {
		kinds[k] = true
	}
	// The names of RecordKinds are the types' (Throttle's record is
	// ThrottleRecord).
	typeName := func(kind string) string {
		if kind == "Throttle" {
			return "ThrottleRecord"
		}
		return kind
	}
	types := map[string]bool{}
	for k := range kinds {
		types[typeName(k)] = true
	}
	tx := reflect.TypeFor[store.Tx]()
	var structs func(t reflect.Type, fn func(reflect.Type))
	structs = func(t reflect.Type, fn func(reflect.Type)) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct && t.PkgPath() == "latchkey/store" {
			fn(t)
		}
	}
	seen := map[string]bool{}
	for i := range tx.NumMethod() {
		m := tx.Method(i)
		for j := range m.Type.NumIn() {
			structs(m.Type.In(j), func(t reflect.Type) { seen[t.Name()] = true })
		}
		for j := range m.Type.NumOut() {
			structs(m.Type.Out(j), func(t reflect.Type) { seen[t.Name()] = true })
		}
	}
	for name := range seen {
		if !types[name] && notRecords[name] == "" {
			t.Errorf("Tx methods take or return store.%s, which is not a kind of the Mover contract (store.RecordKinds): "+
				"make a copy carry it, or name it in notRecords saying why", name)
		}
	}
	for k := range types {
		if k == "Settings" || k == "ThrottleRecord" || k == "EventCount" {
			continue // Tx reads and writes them in parts
		}
		if !seen[k] {
			t.Errorf("the Mover contract names %s, which no Tx method takes or returns", k)
		}
	}
}

// TestCopyCarriesEveryRecord: a data file holding the fixture (every kind
// of record, every field set) copied into a store of the backend under
// test and from there into a new data file gives every record back as it
// was written, by kind and count (Template included), and files that
// check (bbolt → bbolt → bbolt on the bolt pass, bbolt → PostgreSQL →
// bbolt on the postgres pass). That a copy leaves no bucket behind is
// store/bolt's TestCopyCarriesEveryBucket, no table store/postgres's
// TestCopyCarriesEveryTable.
func TestCopyCarriesEveryRecord(t *testing.T) {
	t.Parallel()
	src := openPath(t, filepath.Join(t.TempDir(), "src.db"))
	want := storetest.Normalize(t, storetest.WriteFixture(t, src))
	wantCounts := storetest.Counts(want)
	storetest.SameRecords(t, "the fixture's data file", storetest.Records(t, src), want)

	mid := storetest.Open(t)
	counts, err := store.Copy(ctx, src, mid)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("Copy counted %v, want %v", counts, wantCounts)
	}
	storetest.SameRecords(t, "the "+storetest.Backend(t)+" copy", storetest.Records(t, mid), want)

	back := openPath(t, filepath.Join(t.TempDir(), "back.db"))
	if counts, err = store.Copy(ctx, mid, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("Copy back counted %v, want %v", counts, wantCounts)
	}
	storetest.SameRecords(t, "the data file copied back", storetest.Records(t, back), want)
	check(t, back)

	// The templates read back through the Tx methods, on both targets.
	var tpls []*store.Template
	for _, rec := range storetest.Fixture() {
		if tpl, ok := rec.(*store.Template); ok {
			tpls = append(tpls, tpl)
		}
	}
	for name, db := range map[string]store.DB{"the copy": mid, "the file copied back": back} {
		db.View(ctx, func(tx store.Tx) error {
			for _, w := range tpls {
				got, err := tx.Template(w.ProjectID, w.Kind, w.Locale)
				if err != nil {
					t.Fatalf("%s: template %s %s: %v", name, w.Kind, w.Locale, err)
				}
				if got.Subject != w.Subject || got.Text != w.Text || got.HTML != w.HTML || !got.UpdatedAt.Equal(w.UpdatedAt) {
					t.Errorf("%s: template %s %s is %+v, want %+v", name, w.Kind, w.Locale, got, w)
				}
			}
			return nil
		})
	}
}

// openPath opens a new data file at path, closed and checked when the
// test ends.
func openPath(t *testing.T, path string) store.DB {
	t.Helper()
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { storetest.CheckFile(t, path) })
	t.Cleanup(func() { db.Close() })
	return db
}
