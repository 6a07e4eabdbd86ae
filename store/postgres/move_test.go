package postgres_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
	"latchkey/store/postgres"
	"latchkey/store/storetest"
)

// tableRows returns how many rows each table of schema public of the
// database at url holds.
func tableRows(t *testing.T, url string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, table := range tables {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// TestCopyCarriesEveryTable: a database holding the fixture (every kind
// of record, every field set) has rows in every table a copy carries;
// copied into a data file and from there into a new database, every
// record comes out as it was written, by kind and count (Template
// included), and the new database holds as many rows in each table as
// the first (what the import rebuilds included).
func TestCopyCarriesEveryTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := newDatabase(t)
	src := openDSN(t, url)
	want := storetest.Normalize(t, storetest.WriteFixture(t, src))
	wantCounts := storetest.Counts(want)
	srcRows := tableRows(t, url)
	for _, table := range postgres.ExportedTables() {
		if srcRows[table] == 0 {
			t.Errorf("the fixture leaves table %s empty: a copy that drops it would pass", table)
		}
	}
	storetest.SameRecords(t, "the fixture's database", storetest.Records(t, src), want)

	path := filepath.Join(t.TempDir(), "copy.db")
	t.Cleanup(func() { storetest.CheckFile(t, path) }) // once closed
	file := openDSN(t, path)
	counts, err := store.Copy(ctx, src, file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("Copy counted %v, want %v", counts, wantCounts)
	}
	storetest.SameRecords(t, "the data file", storetest.Records(t, file), want)

	backURL := newDatabase(t)
	back := openDSN(t, backURL)
	if counts, err = store.Copy(ctx, file, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("Copy back counted %v, want %v", counts, wantCounts)
	}
	storetest.SameRecords(t, "the database copied back", storetest.Records(t, back), want)
	if got := tableRows(t, backURL); !reflect.DeepEqual(got, srcRows) {
		t.Errorf("rows by table after the round trip %v, want the original's %v", got, srcRows)
	}
}

// openDSN opens the store at dsn, closed when the test ends.
func openDSN(t *testing.T, dsn string) store.DB {
	t.Helper()
	db, _, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
