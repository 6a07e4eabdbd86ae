package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Moving a store (store.Mover, latchkey copy). Export reads one
// REPEATABLE READ snapshot: most tables (the big ones: users, sessions,
// jobs, deliveries, mail, events and their counters) are streamed with
// one query each; the others are paged by primary key, pageSize keys at
// a time, each row read with its Tx lookup method, so that their
// decoding is the domain's own. exportedTables and notExported say which
// tables a copy carries and why it leaves the others. Import runs in one
// transaction: nothing is left behind when it fails.

var _ store.Mover = (*DB)(nil)

// pageSize is how many keys Export reads at a time.
const pageSize = 1000

// Export calls fn with every record of the database (store.Mover).
func (db *DB) Export(ctx context.Context, fn func(rec any) error) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	ptx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return unavailable(err)
	}
	defer ptx.Rollback(context.WithoutCancel(ctx))
	tx := &txn{ctx: ctx, ptx: ptx, db: db, readOnly: true}
	ex := exporter{tx: tx, fn: fn}
	return ex.run()
}

// exporter is one Export.
type exporter struct {
	tx *txn
	fn func(rec any) error
}

func (ex *exporter) run() error {
	tx := ex.tx
	var st store.Settings
	var err error
	if st.AdminTokenHash, err = tx.AdminTokenHash(); err != nil {
		return err
	}
	if st.Initialized, err = tx.Initialized(); err != nil {
		return err
	}
	if st.MasterKeyCheck, err = tx.MasterKeyCheck(); err != nil {
		return err
	}
	if err := ex.fn(&st); err != nil {
		return err
	}
	for _, step := range ex.steps() {
		if err := step.run(); err != nil {
			return err
		}
	}
	return nil
}

// exportStep reads the records of one table.
type exportStep struct {
	table string
	run   func() error
}

// steps returns what run reads after the settings (table meta), in the
// order of the Mover contract. With meta, their tables are the ones a
// copy carries; every other table is in notExported.
func (ex *exporter) steps() []exportStep {
	tx := ex.tx
	return []exportStep{
		{"tls_cache", func() error {
			return ex.stream(`SELECT key, data FROM tls_cache ORDER BY key`, func(rows pgx.Rows) (any, error) {
				e := &store.TLSCacheEntry{}
				return e, rows.Scan(&e.Key, &e.Data)
			})
		}},
		{"projects", func() error {
			return ex.stream(`SELECT `+projectCols+` FROM projects ORDER BY id`, func(rows pgx.Rows) (any, error) {
				p := &store.Project{}
				return p, rows.Scan(projectDest(p)...)
			})
		}},
		{"api_keys", func() error {
			return ex.stream(`SELECT `+apiKeyCols+` FROM api_keys ORDER BY prefix`, func(rows pgx.Rows) (any, error) {
				k := &store.APIKey{}
				return k, rows.Scan(apiKeyDest(k)...)
			})
		}},
		{"users", func() error {
			return ex.stream(`SELECT `+userCols+` FROM users ORDER BY id`, func(rows pgx.Rows) (any, error) {
				u := &store.User{}
				return u, rows.Scan(userDest(u)...)
			})
		}},
		{"sessions", func() error {
			return ex.stream(`SELECT `+sessionCols+` FROM sessions ORDER BY id`, func(rows pgx.Rows) (any, error) {
				r := &sessionRow{}
				if err := rows.Scan(r.dest()...); err != nil {
					return nil, err
				}
				return r.session(), nil
			})
		}},
		{"refresh_tokens", func() error {
			return ex.stream(`SELECT session_id, hash, project_id, created_at, used_at, expires_at
				FROM refresh_tokens ORDER BY session_id, hash`, func(rows pgx.Rows) (any, error) {
				r := &store.RefreshToken{}
				return r, rows.Scan(&r.SessionID, &r.Hash, &r.ProjectID, timeDest(&r.CreatedAt), timePtrDest(&r.UsedAt),
					timeDest(&r.ExpiresAt))
			})
		}},
		ex.paged("codes", []string{"project_id", "kind", "subject"}, func(k []any) (any, error) {
			return tx.Code(keyText(k[1]), keyText(k[0]), keyText(k[2]))
		}),
		ex.paged("throttles", []string{"project_id", "kind", "subject"}, func(k []any) (any, error) {
			t, err := tx.Throttle(keyText(k[1]), keyText(k[0]), keyText(k[2]))
			if err != nil {
				return nil, err
			}
			return &store.ThrottleRecord{Kind: keyText(k[1]), ProjectID: keyText(k[0]), Subject: keyText(k[2]), Throttle: *t}, nil
		}),
		ex.paged("magic_links", []string{"hash"}, func(k []any) (any, error) { return tx.MagicLink(keyBytes(k[0])) }),
		ex.paged("devices", []string{"key"}, func(k []any) (any, error) { return tx.Device(keyBytes(k[0])) }),
		ex.paged("factors", []string{"user_id", "kind"}, func(k []any) (any, error) {
			return tx.Factor(keyText(k[0]), keyText(k[1]))
		}),
		ex.paged("backup_codes", []string{"user_id"}, func(k []any) (any, error) { return tx.BackupCodes(keyText(k[0])) }),
		ex.paged("grants", []string{"hash"}, func(k []any) (any, error) { return tx.Grant(keyBytes(k[0])) }),
		ex.paged("passkeys", []string{"project_id", "id"}, func(k []any) (any, error) {
			return tx.Passkey(keyText(k[0]), keyText(k[1]))
		}),
		{"identities", func() error {
			return ex.stream(`SELECT `+identityCols+` FROM identities ORDER BY project_id, issuer, subject`, func(rows pgx.Rows) (any, error) {
				id := &store.Identity{}
				return id, rows.Scan(identityDest(id)...)
			})
		}},
		ex.paged("challenges", []string{"id"}, func(k []any) (any, error) { return tx.Challenge(keyText(k[0])) }),
		ex.paged("oauth_flows", []string{"id"}, func(k []any) (any, error) { return tx.OAuthFlow(keyText(k[0])) }),
		ex.paged("external_methods", []string{"id"}, func(k []any) (any, error) { return tx.ExternalMethod(keyText(k[0])) }),
		{"mail_templates", func() error {
			return ex.stream(`SELECT `+templateCols+` FROM mail_templates ORDER BY project_id, kind, locale`, func(rows pgx.Rows) (any, error) {
				t := &store.Template{}
				return t, rows.Scan(templateDest(t)...)
			})
		}},
		{"oidc_keys", func() error {
			return ex.stream(`SELECT `+oidcKeyCols+` FROM oidc_keys ORDER BY project_id, id`, func(rows pgx.Rows) (any, error) {
				k := &store.OIDCKey{}
				return k, rows.Scan(oidcKeyDest(k)...)
			})
		}},
		{"oidc_clients", func() error {
			return ex.stream(`SELECT `+oidcClientCols+` FROM oidc_clients ORDER BY project_id, id`, func(rows pgx.Rows) (any, error) {
				c := &store.OIDCClient{}
				return c, rows.Scan(oidcClientDest(c)...)
			})
		}},
		{"oidc_auth_requests", func() error {
			return ex.stream(`SELECT `+oidcAuthRequestCols+` FROM oidc_auth_requests ORDER BY project_id, id`, func(rows pgx.Rows) (any, error) {
				r := &store.OIDCAuthRequest{}
				return r, rows.Scan(oidcAuthRequestDest(r)...)
			})
		}},
		{"oidc_grants", func() error {
			return ex.stream(`SELECT `+oidcGrantCols+` FROM oidc_grants ORDER BY project_id, id`, func(rows pgx.Rows) (any, error) {
				g := &store.OIDCGrant{}
				return g, rows.Scan(oidcGrantDest(g)...)
			})
		}},
		{"oidc_refresh_tokens", func() error {
			return ex.stream(`SELECT `+oidcRefreshCols+` FROM oidc_refresh_tokens ORDER BY project_id, hash`, func(rows pgx.Rows) (any, error) {
				t := &store.OIDCRefreshToken{}
				return t, rows.Scan(oidcRefreshDest(t)...)
			})
		}},
		{"oidc_revoked_tokens", func() error {
			return ex.stream(`SELECT `+oidcRevokedCols+` FROM oidc_revoked_tokens ORDER BY project_id, jti`, func(rows pgx.Rows) (any, error) {
				r := &store.OIDCRevokedToken{}
				return r, rows.Scan(oidcRevokedDest(r)...)
			})
		}},
		{"oidc_consents", func() error {
			return ex.stream(`SELECT `+oidcConsentCols+` FROM oidc_consents ORDER BY project_id, user_id, client_id`, func(rows pgx.Rows) (any, error) {
				c := &store.OIDCConsent{}
				return c, rows.Scan(oidcConsentDest(c)...)
			})
		}},
		{"oidc_device_auths", func() error {
			return ex.stream(`SELECT `+oidcDeviceCols+` FROM oidc_device_auths ORDER BY project_id, hash`, func(rows pgx.Rows) (any, error) {
				d := &store.OIDCDeviceAuth{}
				return d, rows.Scan(oidcDeviceDest(d)...)
			})
		}},
		{"webhooks", func() error {
			return ex.stream(`SELECT `+webhookColumns+` FROM webhooks ORDER BY project_id, id`, func(rows pgx.Rows) (any, error) {
				return scanWebhook(rows)
			})
		}},
		{"jobs", func() error {
			return ex.stream(`SELECT webhook_id, next_attempt_at, seq, project_id, event_id, event_type, body, attempt, created_at
				FROM jobs ORDER BY webhook_id, next_attempt_at, seq`, func(rows pgx.Rows) (any, error) {
				j := &store.Job{}
				var next, seq int64
				var created *int64
				if err := rows.Scan(&j.WebhookID, &next, &seq, &j.ProjectID, &j.EventID, &j.EventType, &j.Body, &j.Attempt, &created); err != nil {
					return nil, err
				}
				j.NextAttemptAt, j.Seq, j.CreatedAt = attemptTime(next), uint64(seq), timeOfNull(created)
				return j, nil
			})
		}},
		{"deliveries", func() error {
			return ex.stream(`SELECT `+deliveryColumns+` FROM deliveries ORDER BY webhook_id, seq`, func(rows pgx.Rows) (any, error) {
				return scanDelivery(rows)
			})
		}},
		{"outbox", func() error {
			for after := uint64(0); ; {
				evs, err := tx.EventsAfter(after, pageSize)
				if err != nil {
					return err
				}
				for _, e := range evs {
					if err := ex.fn(e); err != nil {
						return err
					}
					after = e.Seq
				}
				if len(evs) < pageSize {
					return nil
				}
			}
		}},
		{"mail", func() error {
			return ex.stream(`SELECT `+mailColumns+` FROM mail ORDER BY id`, func(rows pgx.Rows) (any, error) { return scanMail(rows) })
		}},
		{"auth_events", func() error {
			return ex.stream(`SELECT `+authEventColumns+` FROM auth_events ORDER BY nanos, seq`, func(rows pgx.Rows) (any, error) {
				e := &store.AuthEvent{}
				var seq int64
				var email, ip, ua []byte
				if err := rows.Scan(&e.Pos.Nanos, &seq, &e.ID, &e.ProjectID, &e.UserID, &email, &e.Method, &e.Action,
					&e.Success, &e.FailureCode, &ip, &ua); err != nil {
					return nil, err
				}
				e.Pos.Seq = uint64(seq)
				e.Email, e.IP, e.UserAgent = string(email), string(ip), string(ua)
				e.CreatedAt = time.Unix(0, e.Pos.Nanos).UTC()
				return e, nil
			})
		}},
		{"event_counts", func() error {
			// The shards of a counter are one counter.
			return ex.stream(`SELECT scope, hour, kind, sum(n)::bigint FROM event_counts
				GROUP BY scope, hour, kind HAVING sum(n) <> 0 ORDER BY scope, hour, kind`, func(rows pgx.Rows) (any, error) {
				c := &store.EventCount{}
				return c, rows.Scan(&c.Scope, &c.Hour, &c.Kind, &c.N)
			})
		}},
		{"suppressed_counts", func() error {
			return ex.stream(`SELECT hour, project_id, method, action, failure_code, n FROM suppressed_counts
				ORDER BY hour, project_id, method, action, failure_code`, func(rows pgx.Rows) (any, error) {
				c := &store.SuppressedCount{}
				var hour int64
				if err := rows.Scan(&hour, &c.ProjectID, &c.Method, &c.Action, &c.FailureCode, &c.N); err != nil {
					return nil, err
				}
				c.Hour = hourTime(hour)
				return c, nil
			})
		}},
	}
}

// exportedTables returns the tables Export reads: meta, of which it
// carries the settings (the target's migrations write the rest), and
// those of its steps.
func exportedTables() []string {
	out := []string{"meta"}
	for _, s := range (&exporter{}).steps() {
		out = append(out, s.table)
	}
	return out
}

// notExported names the tables of the schema Export does not read, each
// with why a copy needs none of its rows: the import rebuilds them, or
// they are about the running replicas, not the data (a test fails when a
// table is in neither exportedTables nor here).
var notExported = map[string]string{
	"event_totals": "each scope's count of kept events: counted again by the import of the events (importer.Commit)",
	"changes":      "the replicas' invalidation feed: it tells running replicas' caches of changes; the import writes its own rows",
	"leases":       "which replica runs each background task: about the running replicas",
	"velocity":     "the risk engine's counts of the last ten minutes' failures: counts of limits, about the running service",
	"rate_counts":  "the approximate rate limits' request counts of the last seconds, per replica: counts of limits",
	"dash_sessions": "dashboard sign-ins: the operator signs in again on the target (as after a restart on bbolt, " +
		"which keeps them in memory)",
	"schema_migrations": "the migrations applied: the target's own, written by its migrations",
	"latchkey_lock":     "the row the migrations lock: the target's own",
}

// stream runs sql and passes each row, as scan makes it a record, to fn.
// fn writes elsewhere (the target store), so the rows stream while the
// connection is busy with them.
func (ex *exporter) stream(sql string, scan func(pgx.Rows) (any, error)) error {
	rows, err := ex.tx.query(sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := scan(rows)
		if err != nil {
			return err
		}
		if err := ex.fn(rec); err != nil {
			return err
		}
	}
	return unavailable(rows.Err())
}

// paged returns a step that reads the primary keys of table (columns
// cols) pageSize at a time, in key order, and passes the record that get
// reads for each key to fn.
func (ex *exporter) paged(table string, cols []string, get func(key []any) (any, error)) exportStep {
	return exportStep{table, func() error {
		list := strings.Join(cols, ", ")
		marks := make([]string, len(cols))
		for i := range marks {
			marks[i] = "$" + strconv.Itoa(i+1)
		}
		var last []any
		for {
			sql := `SELECT ` + list + ` FROM ` + table + ` ORDER BY ` + list + ` LIMIT ` + strconv.Itoa(pageSize)
			if last != nil {
				sql = `SELECT ` + list + ` FROM ` + table + ` WHERE (` + list + `) > (` + strings.Join(marks, ", ") + `)
					ORDER BY ` + list + ` LIMIT ` + strconv.Itoa(pageSize)
			}
			rows, err := ex.tx.query(sql, last...)
			if err != nil {
				return err
			}
			var keys [][]any
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					rows.Close()
					return err
				}
				keys = append(keys, vals)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return unavailable(err)
			}
			for _, k := range keys {
				rec, err := get(k)
				if err != nil {
					return fmt.Errorf("export %s %v: %w", table, k, err)
				}
				if err := ex.fn(rec); err != nil {
					return err
				}
			}
			if len(keys) < pageSize {
				return nil
			}
			last = keys[len(keys)-1]
		}
	}}
}

// keyText is a key column's value as a string (a text or a bytea
// column).
func keyText(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	s, _ := v.(string)
	return s
}

// keyBytes is a key column's value as bytes (a bytea or a text column).
func keyBytes(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, _ := v.([]byte)
	return b
}

// Import returns an Importer into the database, which must hold no data
// (store.Mover): every table of the schema but the migrations' is empty.
func (db *DB) Import(ctx context.Context) (store.Importer, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := db.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
		AND table_name NOT IN ('schema_migrations', 'latchkey_lock')`)
	if err != nil {
		return nil, unavailable(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable(err)
	}
	for _, t := range tables {
		var any bool
		if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t}.Sanitize()+`)`).Scan(&any); err != nil {
			return nil, unavailable(err)
		}
		if any {
			return nil, fmt.Errorf("%w (table %s has rows)", store.ErrNotEmpty, t)
		}
	}
	ptx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return &importer{ctx: ctx, tx: &txn{ctx: ctx, ptx: ptx, db: db}, totals: map[string]int64{}}, nil
}

// importer writes an import in one transaction.
type importer struct {
	ctx    context.Context
	tx     *txn
	maxJob int64
	// totals counts the events imported per scope (event_totals).
	totals map[string]int64
}

// Add writes rec (store.Importer).
func (im *importer) Add(rec any) error {
	tx := im.tx
	switch r := rec.(type) {
	case *store.AuthEvent:
		kind := outcomeKind(r.Success, r.FailureCode)
		if strings.IndexByte(r.ProjectID, 0) >= 0 || !storable(r.ProjectID, kind) {
			return store.ErrBadEventField
		}
		_, err := tx.exec(`INSERT INTO auth_events (nanos, project_id, kind, id, user_id, email, method, action, success, failure_code, ip, user_agent)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			r.CreatedAt.UnixNano(), r.ProjectID, kind, r.ID, r.UserID, []byte(r.Email), r.Method, r.Action, r.Success, r.FailureCode,
			[]byte(r.IP), []byte(r.UserAgent))
		im.totals[r.ProjectID]++
		return err
	case *store.EventCount:
		if !storable(r.Scope, r.Kind) {
			return store.ErrBadEventField
		}
		_, err := tx.exec(`INSERT INTO event_counts (scope, hour, kind, shard, n) VALUES ($1, $2, $3, 0, $4)`, r.Scope, r.Hour, r.Kind, r.N)
		return err
	case *store.SuppressedCount:
		if !storable(r.ProjectID, r.Method, r.Action, r.FailureCode) {
			return store.ErrBadEventField
		}
		_, err := tx.exec(`INSERT INTO suppressed_counts (hour, project_id, method, action, failure_code, n) VALUES ($1, $2, $3, $4, $5, $6)`,
			hourOf(r.Hour), r.ProjectID, r.Method, r.Action, r.FailureCode, r.N)
		return err
	}
	ok, err := store.ImportTx(tx, rec)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("postgres: import: %T is not a record", rec)
	}
	// The queued writes (txn.later) go in batches of importBatch, not
	// all at the commit. What the writes registered to run after the
	// commit (the session cache's drops) is not kept: the import's
	// commit does not run it, and no cache holds rows of the empty
	// store it fills.
	if tx.pending != nil && tx.pending.Len()+len(tx.feedRows) >= importBatch {
		tx.onCommit = nil
		tx.writeFeed()
		if err := tx.flush(); err != nil {
			return err
		}
	}
	if j, isJob := rec.(*store.Job); isJob {
		im.maxJob = max(im.maxJob, int64(j.Seq))
	}
	return nil
}

// importBatch bounds the writes an import holds before sending them.
const importBatch = 1000

// Commit writes the events' kept numbers, moves the job sequence past
// every job imported, and commits (store.Importer).
func (im *importer) Commit() error {
	tx := im.tx
	for scope, n := range im.totals {
		if _, err := tx.exec(`INSERT INTO event_totals (scope, shard, n) VALUES ($1, 0, $2)`, scope, n); err != nil {
			im.Rollback()
			return err
		}
	}
	if im.maxJob > 0 {
		if _, err := tx.exec(`SELECT setval(pg_get_serial_sequence('jobs', 'seq'), $1)`, im.maxJob); err != nil {
			im.Rollback()
			return err
		}
	}
	tx.writeFeed()
	if err := tx.flush(); err != nil {
		im.Rollback()
		return err
	}
	if err := tx.ptx.Commit(im.ctx); err != nil {
		return unavailable(err)
	}
	return nil
}

// Rollback ends the import, leaving the database as it was
// (store.Importer).
func (im *importer) Rollback() {
	if err := im.tx.ptx.Rollback(context.WithoutCancel(im.ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		im.tx.db.log.Warn("import rollback", "err", err)
	}
}
