package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// TestLegacySessionRows: a session row stored before sessions kept
// their proofs (both proof columns NULL) reads as store.LegacyProofs
// says, from its method, issued_at and stepped_up_at; written again, it
// keeps them and its step-up column is cleared.
func TestLegacySessionRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := openStore(t, store.Options{})
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	stepped := t0.Add(5 * time.Minute)
	for _, r := range []struct {
		id, method string
		stepped    any
	}{{"s-otp", "email_otp", nil}, {"s-link", "magic_link", stepped.UnixNano()}} {
		if _, err := conn.Exec(ctx, `INSERT INTO sessions (id, user_id, project_id, method, issued_at, expires_at, stepped_up_at, ip, user_agent, due)
			VALUES ($1, 'u', 'p', $2, $3, $4, $5, '', '', $4)`, r.id, r.method, t0.UnixNano(), t0.Add(time.Hour).UnixNano(), r.stepped); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]store.Proof{
		"s-otp":  {{Method: "otp", At: t0}},
		"s-link": {{Method: "link", At: t0}, {Method: "mfa", At: stepped}},
	}
	var rows []*store.Session
	view(t, db, func(tx store.Tx) error {
		for id, w := range want {
			s, err := tx.Session(id)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Proofs, w) {
				t.Fatalf("%s: proofs %v, want %v", id, s.Proofs, w)
			}
			rows = append(rows, s)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, s := range rows {
			if err := tx.PutSession(s); err != nil {
				return err
			}
		}
		return nil
	})
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE stepped_up_at IS NOT NULL OR proof_methods IS NULL`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows still in the old form (%v)", left, err)
	}
	view(t, db, func(tx store.Tx) error {
		for id, w := range want {
			if s, err := tx.Session(id); err != nil || !reflect.DeepEqual(s.Proofs, w) {
				t.Fatalf("%s rewritten: proofs %v, %v; want %v", id, s.Proofs, err, w)
			}
		}
		return nil
	})
}
