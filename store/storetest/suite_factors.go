package storetest

import (
	"testing"
	"time"

	"latchkey/store"
)

// Factors tests the second factors and backup codes (store.Factors):
// exact round trips, lookups by user and kind, replacement whole.
func (s Suite) Factors(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.factorsRoundTrip}})
}

// factorsRoundTrip: every field of factors and backup codes comes back;
// a factor is found by (user, kind) only; a new batch replaces the old
// one, a factor is replaced whole.
func (s Suite) factorsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	factors := []*store.Factor{
		{UserID: "u1", ProjectID: "p1", Kind: "totp", Status: "enrolled", Secret: []byte{1, 2, 3}, Phone: "+15551234567", LastStep: 1 << 40, Failures: 2,
			LockedUntil: t0.Add(15 * time.Minute), CreatedAt: t0, EnrolledAt: ptrTo(t0.Add(time.Second))},
		{UserID: "u1", ProjectID: "p1", Kind: "sms", Status: "pending", Secret: []byte{}, Phone: "+15551234567", CreatedAt: t0, EnrolledAt: ptrTo(time.Time{})},
		{UserID: "u2", ProjectID: "p1", Kind: "totp"},
	}
	complete(t, factors[0])
	batches := []*store.BackupCodes{
		{UserID: "u1", ProjectID: "p1", Hashes: [][]byte{{1}, {2}, {0, 0xff}, {}}, Used: []bool{false, true, false, false}, CreatedAt: t0},
		{UserID: "u2", ProjectID: "p1", Hashes: [][]byte{}, Used: []bool{}},
		{UserID: "u3", ProjectID: "p1"},
	}
	complete(t, batches[0])
	update(t, db, func(tx store.Tx) error {
		for _, f := range factors {
			if err := tx.PutFactor(f); err != nil {
				return err
			}
		}
		for _, b := range batches {
			if err := tx.PutBackupCodes(b); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range factors {
			got, err := tx.Factor(want.UserID, want.Kind)
			if err != nil {
				return err
			}
			if err := diff("factor", got, want); err != nil {
				return err
			}
		}
		for _, want := range batches {
			got, err := tx.BackupCodes(want.UserID)
			if err != nil {
				return err
			}
			if err := diff("backup codes", got, want); err != nil {
				return err
			}
		}
		for name, err := range map[string]error{
			"a kind the user does not have": wantNotFound(tx.Factor("u2", "sms")),
			"a user without factors":        wantNotFound(tx.Factor("u3", "totp")),
			"a user without backup codes":   wantNotFound(tx.BackupCodes("u4")),
		} {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Factor("u1", "totp")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"Factor":      wantNotFound(tx.Factor(bad, "totp")),
			"Factor/kind": wantNotFound(tx.Factor("u1", bad)),
			"BackupCodes": wantNotFound(tx.BackupCodes(bad)),
		}
	})
	nb := &store.BackupCodes{UserID: "u1", ProjectID: "p1", Hashes: [][]byte{{7}}, Used: []bool{false}, CreatedAt: t0.Add(time.Hour)}
	nf := &store.Factor{UserID: "u1", ProjectID: "p1", Kind: "totp", Status: "pending", CreatedAt: t0.Add(time.Hour)}
	update(t, db, func(tx store.Tx) error {
		if err := tx.PutBackupCodes(nb); err != nil {
			return err
		}
		return tx.PutFactor(nf)
	})
	view(t, db, func(tx store.Tx) error {
		b, err := tx.BackupCodes("u1")
		if err != nil {
			return err
		}
		if err := diff("new batch", b, nb); err != nil {
			return err
		}
		f, err := tx.Factor("u1", "totp")
		if err != nil {
			return err
		}
		return diff("replaced factor", f, nf)
	})
}
