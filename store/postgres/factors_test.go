package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
	"latchkey/store/postgres"
)

// Tests of codes, histories, magic links, factors, backup codes, grants,
// passkeys, challenges, sign-ins with providers in flight and external
// methods that are about PostgreSQL: the helpers DeleteUser and
// DeleteProject call, what the tables' constraints refuse, and query
// plans. What every engine does (round trips, nil against empty, NUL
// bytes, deletions, concurrent writers) is storetest's suites.

// TestFactorKinds: a factor's kind is store.Factor's two; the table
// refuses another.
func TestFactorKinds(t *testing.T) {
	t.Parallel()
	db, _ := openStore(t, store.Options{})
	err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p1", Kind: "email"})
	})
	if err == nil {
		t.Fatal("a factor of kind email was stored")
	}
}

// TestProjectMethodIDs: projectMethodIDs lists a project's external
// methods' ids in byte order (DeleteProject deletes their replay marks).
func TestProjectMethodIDs(t *testing.T) {
	t.Parallel()
	db, _ := openStore(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
		for _, m := range []*store.ExternalMethod{
			{ID: "m3", ProjectID: "p1", Method: "bank", Pattern: "webhook", Status: "active", CreatedAt: t0},
			{ID: "m2", ProjectID: "p1", Method: "desk", Pattern: "redirect", Status: "inactive", CreatedAt: t0},
			{ID: "m1", ProjectID: "p1", Method: "kiosk", Pattern: "webhook", Status: "active", CreatedAt: t0.Add(time.Second)},
			{ID: "m4", ProjectID: "p2", Method: "bank", Pattern: "webhook", Status: "active", CreatedAt: t0},
		} {
			if err := tx.PutExternalMethod(m); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		ids, err := postgres.ProjectMethodIDs(tx, "p1")
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(ids, []string{"m1", "m2", "m3"}) {
			return fmt.Errorf("projectMethodIDs = %v, want [m1 m2 m3]", ids)
		}
		return nil
	})
}

// factorRows counts, per table of the domain, the rows whose text
// columns name s.
func factorRows(t *testing.T, url, s string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	out := map[string]int{}
	for _, table := range []string{"codes", "throttles", "magic_links", "factors", "backup_codes", "external_methods", "grants", "passkeys", "challenges", "oauth_flows"} {
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %s r WHERE strpos(r::text, $1) > 0`, table)
		if err := conn.QueryRow(ctx, q, s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

// fillFactorProject writes rows of every kind of the domain for project
// p-<name>, every id naming name.
func fillFactorProject(t *testing.T, db store.DB, name string) {
	t.Helper()
	later := t0.Add(time.Hour)
	pid, uid, mid := "p-"+name, "u-"+name, "m-"+name
	update(t, db, func(tx store.Tx) error {
		for _, err := range []error{
			tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "totp", Status: "enrolled", CreatedAt: t0}),
			tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "sms", Status: "enrolled", Phone: "+15551234567", CreatedAt: t0}),
			tx.PutBackupCodes(&store.BackupCodes{UserID: uid, ProjectID: pid, Hashes: [][]byte{{1}}, Used: []bool{false}, CreatedAt: t0}),
			tx.PutPasskey(&store.Passkey{ID: "cred-" + name, UserID: uid, ProjectID: pid, Credential: []byte(`{}`), CreatedAt: t0}),
			tx.PutChallenge(&store.Challenge{ID: "ch-" + name, ProjectID: pid, Kind: "register", UserID: uid, Session: []byte(`{}`), ExpiresAt: later}),
			tx.PutOAuthFlow(&store.OAuthFlow{ID: "of-" + name, ProjectID: pid, Kind: store.OAuthFlowState, Payload: []byte(`{}`), ExpiresAt: later}),
			tx.PutCode(&store.Code{Kind: "otp", ProjectID: pid, Subject: "pending-" + name + "@example.com", Hash: []byte{1}, ExpiresAt: later}),
			tx.PutCode(&store.Code{Kind: "sms", ProjectID: pid, Subject: uid, Hash: []byte{1}, ExpiresAt: later}),
			tx.PutThrottle("otp", pid, "pending-"+name+"@example.com", &store.Throttle{Sends: []time.Time{t0}}),
			tx.PutThrottle("backup_fail", pid, uid, &store.Throttle{Sends: []time.Time{t0}}),
			tx.PutMagicLink(&store.MagicLink{Hash: []byte("link-" + name), ProjectID: pid, Email: "link@example.com", ExpiresAt: later}),
			tx.PutExternalMethod(&store.ExternalMethod{ID: mid, ProjectID: pid, Method: "bank", Pattern: "webhook", Status: "active", CreatedAt: t0}),
			tx.PutExternalMethod(&store.ExternalMethod{ID: mid + "-2", ProjectID: pid, Method: "kiosk", Pattern: "webhook", Status: "active", CreatedAt: t0}),
			// Replay marks are scoped by the method id.
			tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid, Subject: "sig", ExpiresAt: later}),
			tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid + "-2", Subject: "sig", ExpiresAt: later}),
			tx.PutGrant(&store.Grant{Hash: []byte("grant-" + name), MethodID: mid, ProjectID: pid, ExternalUserID: "x", ExpiresAt: later}),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// TestDeleteHelpers: deleteUserFactors removes the user's factors,
// backup codes and passkeys; deleteProjectAuthRows everything of the
// domain that names the project or its methods (the methods it is not
// told of too); another project's rows stay.
func TestDeleteHelpers(t *testing.T) {
	t.Parallel()
	db, url := openStore(t, store.Options{})
	fillFactorProject(t, db, "doomed")
	fillFactorProject(t, db, "kept")
	kept := factorRows(t, url, "kept")
	if len(kept) != 10 {
		t.Fatalf("fixture fills %d tables: %v", len(kept), kept)
	}

	update(t, db, func(tx store.Tx) error { return postgres.DeleteUserFactors(tx, "u-doomed") })
	got := factorRows(t, url, "doomed")
	for _, table := range []string{"factors", "backup_codes", "passkeys"} {
		if got[table] != 0 {
			t.Fatalf("after deleteUserFactors: %v", got)
		}
	}
	if got["codes"] == 0 || got["challenges"] == 0 || got["oauth_flows"] == 0 {
		t.Fatalf("deleteUserFactors removed more: %v", got)
	}

	// Told of one method only: the other's replay mark goes too.
	fillFactorProject(t, db, "doomed")
	update(t, db, func(tx store.Tx) error { return postgres.DeleteProjectAuthRows(tx, "p-doomed", []string{"m-doomed"}) })
	if got := factorRows(t, url, "doomed"); len(got) != 0 {
		t.Fatalf("rows naming the deleted project: %v", got)
	}
	if got := factorRows(t, url, "kept"); !reflect.DeepEqual(got, kept) {
		t.Fatalf("other project's rows: %v, were %v", got, kept)
	}
	update(t, db, func(tx store.Tx) error { return postgres.DeleteProjectAuthRows(tx, "p-kept", nil) })
	if got := factorRows(t, url, "kept"); len(got) != 0 {
		t.Fatalf("rows naming the deleted project: %v", got)
	}
}

// TestFactorPlans: with enough rows for the planner to care, no
// statement of the domain, nor the sweep's on its tables, reads a table
// whole, planned for its values or generically.
func TestFactorPlans(t *testing.T) {
	t.Parallel()
	_, url := openStore(t, store.Options{})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const n = 20000
	fill := []string{
		`INSERT INTO codes (project_id, kind, subject, phone, email, hash, attempts, created_at, expires_at)
			SELECT 'p' || (i % 1000), 'otp', convert_to(i || '@example.com', 'UTF8'), '', '', '\x01', 0, i, 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO throttles (project_id, kind, subject, sends, keep_until, due)
			SELECT 'p' || (i % 1000), 'otp', convert_to(i || '@example.com', 'UTF8'), ARRAY[i::bigint], NULL, 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO magic_links (hash, project_id, email, redirect_url, created_at, expires_at)
			SELECT convert_to('h' || i, 'UTF8'), 'p' || (i % 1000), i || '@example.com', '', i, 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO factors (user_id, kind, project_id, status, phone, last_step, failures)
			SELECT 'u' || i, 'totp', 'p' || (i % 1000), 'enrolled', '', 0, 0 FROM generate_series(1, $1) i`,
		`INSERT INTO backup_codes (user_id, project_id, hashes, used)
			SELECT 'u' || i, 'p' || (i % 1000), ARRAY['\x01'::bytea], ARRAY[false] FROM generate_series(1, $1) i`,
		`INSERT INTO external_methods (id, project_id, method, pattern, status, created_at)
			SELECT 'm' || i, 'p' || (i % 5000), 'bank' || i, 'webhook', 'active', i FROM generate_series(1, $1) i`,
		`INSERT INTO grants (hash, method_id, project_id, external_user_id, email, expires_at)
			SELECT convert_to('g' || i, 'UTF8'), 'm1', 'p' || (i % 1000), 'x' || i, '', 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO passkeys (project_id, id, user_id, credential, created_at)
			SELECT 'p' || (i % 1000), 'cred' || i, 'u' || (i % 5000), '\x7b7d', i FROM generate_series(1, $1) i`,
		`INSERT INTO challenges (id, project_id, kind, user_id, email, expires_at)
			SELECT 'c' || i, 'p' || (i % 1000), 'login', '', '', 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO oauth_flows (id, project_id, kind, payload, expires_at)
			SELECT 'o' || i, 'p' || (i % 1000), 'state', '\x7b7d', 1e12 + i FROM generate_series(1, $1) i`,
	}
	for _, q := range fill {
		if _, err := conn.Exec(ctx, q, n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	b, u := []byte("h7"), "u7"
	args := map[string][]any{
		"Code":                  {"p7", "otp", []byte("7@example.com")},
		"PutCode":               {"p7", "otp", []byte("7@example.com"), "", "", b, 0, 1, 2},
		"DeleteCode":            {"p7", "otp", []byte("7@example.com")},
		"Throttle":              {"p7", "otp", []byte("7@example.com")},
		"PutThrottle":           {"p7", "otp", []byte("7@example.com"), []int64{1}, nil, 2},
		"DeleteThrottle":        {"p7", "otp", []byte("7@example.com")},
		"MagicLink":             {b},
		"PutMagicLink":          {b, "p7", "7@example.com", "", 1, 2, nil},
		"DeleteMagicLinks":      {"p7", "7@example.com"},
		"Factor":                {u, "totp"},
		"PutFactor":             {u, "totp", "p7", "enrolled", nil, "", 0, 0, nil, 1, nil, "factors"},
		"DeleteFactor":          {u, "totp", "factors"},
		"BackupCodes":           {u},
		"PutBackupCodes":        {u, "p7", [][]byte{b}, []bool{false}, 1},
		"DeleteBackupCodes":     {u},
		"Grant":                 {b},
		"PutGrant":              {b, "m1", "p7", "x7", "", 1, 2, nil},
		"DeleteGrants":          {"p7", "x7"},
		"DeleteUserFactors":     {[]string{u, "u8"}},
		"Passkey":               {"p7", "cred7"},
		"PutPasskey":            {"p7", "cred7", u, []byte("{}"), 1, nil},
		"DeletePasskey":         {"p7", "cred7"},
		"UserPasskeys":          {u, "p7"},
		"Challenge":             {"c7"},
		"PutChallenge":          {"c7", "p7", "login", "", "", []byte("{}"), 1},
		"DeleteChallenge":       {"c7"},
		"OAuthFlow":             {"o7"},
		"PutOAuthFlow":          {"o7", "p7", "state", []byte("{}"), 1},
		"DeleteOAuthFlow":       {"o7"},
		"ExternalMethod":        {"m7"},
		"ExternalMethodByName":  {"p7", "bank7"},
		"ExternalMethods":       {"p7"},
		"PutExternalMethod":     {"m7", "p7", "bank7", "webhook", "active", nil, 1},
		"ProjectMethodIDs":      {"p7"},
		"DeleteProjectAuthRows": {"p7", []string{"m7"}},
	}
	stmts := map[string]string{}
	for name, q := range postgres.FactorStatements {
		stmts[name] = q
	}
	// The generic sweep's statements (expiry.go) on the domain's tables.
	for _, table := range []string{"codes", "throttles", "magic_links", "grants", "challenges", "oauth_flows"} {
		stmts["ExpiryDue/"+table] = `SELECT coalesce(min(due) <= $1, false) FROM ` + table
		args["ExpiryDue/"+table] = []any{int64(1e12 + 10)}
		stmts["SweepExpired/"+table] = `DELETE FROM ` + table + ` WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM ` + table + ` WHERE due <= $1 ORDER BY due LIMIT $2))`
		args["SweepExpired/"+table] = []any{int64(1e12 + 10), 1000}
	}
	// Each statement as PostgreSQL plans it for its values (custom) and
	// as a prepared statement may end up planned once for any values
	// (generic: pgx prepares every statement it runs).
	i := 0
	for name, q := range stmts {
		a, ok := args[name]
		if !ok {
			t.Errorf("%s: no arguments to explain it with", name)
			continue
		}
		i++
		ps := fmt.Sprint("factors_q", i)
		if _, err := conn.Exec(ctx, "PREPARE "+ps+" AS "+q); err != nil {
			t.Errorf("%s: PREPARE: %v", name, err)
			continue
		}
		params := make([]string, len(a))
		for j, v := range a {
			params[j] = sqlLiteral(t, v)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+ps+" ("+strings.Join(params, ", ")+")")
			if err != nil {
				t.Errorf("%s (%s): %v", name, mode, err)
				continue
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Errorf("%s (%s): %v", name, mode, err)
				continue
			}
			plan := strings.Join(lines, "\n")
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s) reads a table whole:\n%s", name, mode, plan)
			}
		}
	}
}

// sqlLiteral returns v, an argument of a statement, as an SQL literal
// (EXECUTE takes no parameters).
func sqlLiteral(t *testing.T, v any) string {
	t.Helper()
	list := func(typ string, n int, elem func(i int) string) string {
		out := make([]string, n)
		for i := range out {
			out[i] = elem(i)
		}
		return "ARRAY[" + strings.Join(out, ", ") + "]::" + typ + "[]"
	}
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf(`'\\x%x'::bytea`, v)
	case int, int64:
		return fmt.Sprint(v)
	case []int64:
		return list("bigint", len(v), func(i int) string { return fmt.Sprint(v[i]) })
	case []bool:
		return list("boolean", len(v), func(i int) string { return fmt.Sprint(v[i]) })
	case []string:
		return list("text", len(v), func(i int) string { return sqlLiteral(t, v[i]) })
	case [][]byte:
		return list("bytea", len(v), func(i int) string { return sqlLiteral(t, v[i]) })
	}
	t.Fatalf("no SQL literal for %T", v)
	return ""
}
