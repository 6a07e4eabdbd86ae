package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ExportedTables returns the tables a copy of a database carries (for
// package postgres_test).
func ExportedTables() []string { return exportedTables() }

// schemaTables returns the tables of schema public of the database at
// url, in name order.
func schemaTables(t testing.TB, url string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' ORDER BY table_name COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// TestMoveNamesEveryTable: every table of the migrated schema is either
// read by Export or named in notExported, not both, and both lists name
// only real tables; a migration that adds a table without saying how a
// copy moves it fails here.
func TestMoveNamesEveryTable(t *testing.T) {
	t.Parallel()
	tables := schemaTables(t, NewTestDatabase(t, true))
	if len(tables) < 10 {
		t.Fatalf("the migrated schema holds the tables %q", tables)
	}
	exported := exportedTables()
	for i, name := range exported {
		if slices.Contains(exported[:i], name) {
			t.Errorf("Export reads table %s twice", name)
		}
	}
	for _, name := range tables {
		_, skipped := notExported[name]
		carried := slices.Contains(exported, name)
		switch {
		case carried && skipped:
			t.Errorf("table %s is read by Export and named in notExported (%s)", name, notExported[name])
		case !carried && !skipped:
			t.Errorf("table %s is neither read by Export (exporter.steps) nor named in notExported: a copy would leave it behind", name)
		}
	}
	for _, name := range exported {
		if !slices.Contains(tables, name) {
			t.Errorf("Export reads table %s, which the schema does not have", name)
		}
	}
	for name, why := range notExported {
		if !slices.Contains(tables, name) {
			t.Errorf("notExported names table %s (%s), which the schema does not have", name, why)
		}
		if why == "" {
			t.Errorf("notExported does not say why table %s is not carried", name)
		}
	}
}
