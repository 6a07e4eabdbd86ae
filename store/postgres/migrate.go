package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// migrations are the schema's versions, applied in order: NNNN_name.sql,
// each run in one transaction.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migration is one version of the schema.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, path := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", path)
		}
		raw, err := migrations.ReadFile(path)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(raw)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %d_%s: versions must be 1, 2, 3... without gaps", m.version, m.name)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}

// Migrate connects to the database dsn names and brings its schema up
// to date, as Open does (latchkey migrate). It returns the schema's
// version before and after, and logs each migration applied to log (nil:
// none). A database newer than this binary is refused.
func Migrate(ctx context.Context, dsn string, log *slog.Logger) (before, after int, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pool, err := connect(ctx, dsn, store.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	db := &DB{pool: pool, log: log}
	before, err = db.migrate(ctx)
	if err != nil {
		return before, before, err
	}
	return before, SchemaVersion(), nil
}

// migrate brings the schema up to date. Replicas starting together
// serialise on a row lock of latchkey_lock (no advisory locks, so the
// schema also works where those are missing); each applies what the one
// before it left. A database whose schema is newer than this binary knows
// is refused. It returns the version the database had (0: no latchkey
// schema, a new database).
func (db *DB) migrate(ctx context.Context) (current int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	return db.apply(ctx, ms)
}

// apply brings the schema up to the last of ms, the migrations from the
// first on (migrate passes them all; a test, the first few, to write
// rows as an older release did).
func (db *DB) apply(ctx context.Context, ms []migration) (current int, err error) {
	// A start on a schema that is up to date (its lock's row there too)
	// reads it and writes nothing: the lock below (SELECT ... FOR UPDATE)
	// is a write, committed and flushed, at every replica's start
	// otherwise. Versions only grow, so a schema at this binary's last
	// needs no lock to stay there.
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL AND to_regclass('latchkey_lock') IS NOT NULL`).Scan(&exists); err != nil {
		return current, fmt.Errorf("database schema: %w", unavailable(err))
	}
	if exists {
		var locked bool
		if err := db.pool.QueryRow(ctx, `SELECT (SELECT coalesce(max(version), 0) FROM schema_migrations), EXISTS (SELECT 1 FROM latchkey_lock)`).Scan(&current, &locked); err != nil {
			return current, fmt.Errorf("database schema version: %w", unavailable(err))
		}
		if current == len(ms) && locked {
			return current, nil
		}
	}
	if _, err := db.pool.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS latchkey_lock (id int PRIMARY KEY CHECK (id = 1));
		INSERT INTO latchkey_lock VALUES (1) ON CONFLICT DO NOTHING;
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version int PRIMARY KEY,
			name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return current, fmt.Errorf("database schema: %w", unavailable(err))
	}
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return current, unavailable(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT id FROM latchkey_lock WHERE id = 1 FOR UPDATE`); err != nil {
		return current, fmt.Errorf("database schema lock: %w", unavailable(err))
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return current, fmt.Errorf("database schema version: %w", unavailable(err))
	}
	if current > len(ms) {
		return current, fmt.Errorf("the database's schema is version %d, newer than this binary's %d: run a newer latchkey", current, len(ms))
	}
	for _, m := range ms[current:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return current, fmt.Errorf("database migration %d_%s: %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return current, fmt.Errorf("database migration %d_%s: %w", m.version, m.name, err)
		}
		db.log.Info("database schema upgraded", "version", m.version, "name", m.name)
	}
	if err := tx.Commit(ctx); err != nil {
		return current, unavailable(err)
	}
	return current, nil
}
